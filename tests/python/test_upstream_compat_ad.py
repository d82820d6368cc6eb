"""Upstream-compatibility audit of autodiff: the scenarios of upstream
Quadrants' own autodiff tests (test_ad_basics, test_ad_basics_fwd,
test_ad_for, test_ad_for_fwd, test_ad_if, test_ad_if_fwd,
test_ad_atomic_fwd, test_ad_ndarray, test_ad_global_data_access_rule_checker,
test_clear_all_gradients, test_customized_grad), re-expressed here over the
features we share (scalar fields, ndarrays, kernels/funcs, Tape, FwdMode,
.grad/.dual, lazy_grad/lazy_dual, grad_replaced/grad_for/no_grad).

Where our semantics deliberately differ the test follows ours and says so:
  * Kernels whose dynamic loop carries a value through a non-linear op need
    ad_stack_experimental_enabled=True (SPEC 3.2; upstream's default is
    False as well, its newer tests pass the flag explicitly).
  * The global data access rule is checked when the gradient kernel is
    compiled, with or without debug / Tape(validation=True) (SPEC 3.1b), so
    Tape(validation=True) without debug does not warn.
  * Upstream calls plain Python lambdas on run-time values inside kernels;
    here the same functions are @qd.func.
"""
import math

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import impl
from tests import test_utils

ADSTACK = dict(ad_stack_experimental_enabled=True)


# ---- test_ad_basics: one-element derivative checks ---------------------------

@qd.func
def _ident(v):
    return v


@qd.func
def _abs_neg(v):
    return qd.abs(-v)


@qd.func
def _neg(v):
    return -v


@qd.func
def _sq(v):
    return v * v


@qd.func
def _pow2(v):
    return v**2


@qd.func
def _cube(v):
    return v * v * v


@qd.func
def _quart(v):
    return v * v * v * v


@qd.func
def _quad_poly(v):
    return 0.4 * v * v - 3


@qd.func
def _two_roots(v):
    return (v - 3) * (v - 1)


@qd.func
def _two_roots_plus_sq(v):
    return (v - 3) * (v - 1) + v * v


@qd.func
def _tanh(v):
    return qd.tanh(v)


@qd.func
def _sin(v):
    return qd.sin(v)


@qd.func
def _cos(v):
    return qd.cos(v)


@qd.func
def _acos(v):
    return qd.acos(v)


@qd.func
def _asin(v):
    return qd.asin(v)


@qd.func
def _recip(v):
    return 1 / v


@qd.func
def _frac1(v):
    return (v + 1) / (v - 1)


@qd.func
def _frac2(v):
    return (v + 1) * (v + 2) / ((v - 1) * (v + 3))


@qd.func
def _sqrt(v):
    return qd.sqrt(v)


@qd.func
def _rsqrt(v):
    return qd.rsqrt(v)


@qd.func
def _exp(v):
    return qd.exp(v)


@qd.func
def _log(v):
    return qd.log(v)


@qd.func
def _min_v0(v):
    return qd.min(v, 0)


@qd.func
def _min_v1(v):
    return qd.min(v, 1)


@qd.func
def _min_0v(v):
    return qd.min(0, v)


@qd.func
def _min_1v(v):
    return qd.min(1, v)


@qd.func
def _max_v0(v):
    return qd.max(v, 0)


@qd.func
def _max_v1(v):
    return qd.max(v, 1)


@qd.func
def _max_0v(v):
    return qd.max(0, v)


@qd.func
def _max_1v(v):
    return qd.max(1, v)


@qd.func
def _atan2_const_y(v):
    return qd.atan2(0.4, v)


@qd.func
def _atan2_const_x(v):
    return qd.atan2(v, 0.4)


@qd.func
def _const_pow(v):
    return 0.4**v


@qd.func
def _pow_const(v):
    return v**0.4


# (kernel func, value, derivative) evaluated at V.
V = 0.234
_CASES = {
    "ident": (_ident, lambda v: v, lambda v: 1.0),
    "abs_neg": (_abs_neg, abs, lambda v: 1.0),
    "neg": (_neg, lambda v: -v, lambda v: -1.0),
    "sq": (_sq, lambda v: v * v, lambda v: 2 * v),
    "pow2": (_pow2, lambda v: v**2, lambda v: 2 * v),
    "cube": (_cube, lambda v: v**3, lambda v: 3 * v * v),
    "quart": (_quart, lambda v: v**4, lambda v: 4 * v**3),
    "quad_poly": (_quad_poly, lambda v: 0.4 * v * v - 3, lambda v: 0.8 * v),
    "two_roots": (_two_roots, lambda v: (v - 3) * (v - 1), lambda v: 2 * v - 4),
    "two_roots_plus_sq": (_two_roots_plus_sq, lambda v: (v - 3) * (v - 1) + v * v,
                          lambda v: 4 * v - 4),
    "tanh": (_tanh, math.tanh, lambda v: 1 - math.tanh(v)**2),
    "sin": (_sin, math.sin, math.cos),
    "cos": (_cos, math.cos, lambda v: -math.sin(v)),
    "acos": (_acos, math.acos, lambda v: -1 / math.sqrt(1 - v * v)),
    "asin": (_asin, math.asin, lambda v: 1 / math.sqrt(1 - v * v)),
    "recip": (_recip, lambda v: 1 / v, lambda v: -1 / (v * v)),
    "frac1": (_frac1, lambda v: (v + 1) / (v - 1), lambda v: -2 / (v - 1)**2),
    "frac2": (_frac2, lambda v: (v + 1) * (v + 2) / ((v - 1) * (v + 3)),
              lambda v: ((2 * v + 3) * (v - 1) * (v + 3) - (v + 1) * (v + 2) * (2 * v + 2))
              / ((v - 1) * (v + 3))**2),
    "sqrt": (_sqrt, math.sqrt, lambda v: 0.5 / math.sqrt(v)),
    "rsqrt": (_rsqrt, lambda v: 1 / math.sqrt(v), lambda v: -0.5 * v**-1.5),
    "exp": (_exp, math.exp, math.exp),
    "log": (_log, math.log, lambda v: 1 / v),
    "min_v0": (_min_v0, lambda v: min(v, 0), lambda v: 0.0),
    "min_v1": (_min_v1, lambda v: min(v, 1), lambda v: 1.0),
    "min_0v": (_min_0v, lambda v: min(0, v), lambda v: 0.0),
    "min_1v": (_min_1v, lambda v: min(1, v), lambda v: 1.0),
    "max_v0": (_max_v0, lambda v: max(v, 0), lambda v: 1.0),
    "max_v1": (_max_v1, lambda v: max(v, 1), lambda v: 0.0),
    "max_0v": (_max_0v, lambda v: max(0, v), lambda v: 1.0),
    "max_1v": (_max_1v, lambda v: max(1, v), lambda v: 0.0),
    "atan2_const_y": (_atan2_const_y, lambda v: math.atan2(0.4, v),
                      lambda v: -0.4 / (0.16 + v * v)),
    "atan2_const_x": (_atan2_const_x, lambda v: math.atan2(v, 0.4),
                      lambda v: 0.4 / (0.16 + v * v)),
    "const_pow": (_const_pow, lambda v: 0.4**v, lambda v: 0.4**v * math.log(0.4)),
    "pow_const": (_pow_const, lambda v: v**0.4, lambda v: 0.4 * v**-0.6),
}


def _reverse_check(kfunc, value, deriv):
    fp = impl.current_cfg().default_fp
    x = qd.field(fp)
    y = qd.field(fp)
    qd.root.dense(qd.i, 1).place(x, x.grad, y, y.grad)

    @qd.kernel
    def compute():
        for i in x:
            y[i] = kfunc(x[i])

    y.grad[0] = 1
    x[0] = V
    compute()
    compute.grad()
    assert y[0] == test_utils.approx(value(V), rel=1e-4)
    assert x.grad[0] == test_utils.approx(deriv(V), rel=1e-4)


def _forward_check(kfunc, value, deriv):
    fp = impl.current_cfg().default_fp
    x = qd.field(fp)
    y = qd.field(fp)
    qd.root.dense(qd.i, 1).place(x, x.dual, y, y.dual)

    @qd.kernel
    def compute():
        for i in x:
            y[i] = kfunc(x[i])

    x[0] = V
    with qd.ad.FwdMode(loss=y, param=x, seed=[1.0]):
        compute()
    assert y[0] == test_utils.approx(value(V), rel=1e-4)
    assert y.dual[0] == test_utils.approx(deriv(V), rel=1e-4)


@pytest.mark.parametrize("name", sorted(_CASES))
@test_utils.test()
def test_unary_derivatives_reverse_and_forward(name):
    kfunc, value, deriv = _CASES[name]
    _reverse_check(kfunc, value, deriv)
    _forward_check(kfunc, value, deriv)


@pytest.mark.parametrize("name", ["atan2_const_y", "atan2_const_x", "const_pow", "pow_const"])
@test_utils.test(require=qd.extension.data64, default_fp=qd.f64)
def test_unary_derivatives_f64(name):
    kfunc, value, deriv = _CASES[name]
    _reverse_check(kfunc, value, deriv)
    _forward_check(kfunc, value, deriv)


@test_utils.test()
def test_integer_mod_has_no_gradient_and_does_not_fail():
    x = qd.field(qd.i32)
    y = qd.field(qd.i32)
    qd.root.dense(qd.i, 1).place(x, y)
    qd.root.lazy_grad()

    @qd.kernel
    def store_mod():
        y[0] = x[0] % 3

    @qd.kernel
    def add_mod():
        qd.atomic_add(y[0], x[0] % 3)

    x[0] = 7
    store_mod()
    store_mod.grad()
    add_mod()
    add_mod.grad()
    assert y[0] == 2


@test_utils.test()
def test_float_mod_under_forward_mode():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.dense(qd.i, 1).place(x, y)
    qd.root.lazy_dual()

    @qd.kernel
    def store_mod():
        y[0] = x[0] % 3

    @qd.kernel
    def add_mod():
        qd.atomic_add(y[0], x[0] % 3)

    x[0] = 4.5
    with qd.ad.FwdMode(loss=y, param=x, seed=[1.0]):
        store_mod()
        add_mod()
    assert y[0] == test_utils.approx(3.0)


@test_utils.test()
def test_select_reverse():
    n = 5
    loss = qd.field(qd.f32, shape=n)
    x = qd.field(qd.f32, shape=n)
    y = qd.field(qd.f32, shape=n)
    qd.root.lazy_grad()
    for i in range(n):
        x[i] = i
        y[i] = -i
        loss.grad[i] = 1.0

    @qd.kernel
    def pick():
        for i in range(n):
            loss[i] += qd.select(i % 2, x[i], y[i])

    pick()
    pick.grad()
    for i in range(n):
        assert loss[i] == (i if i % 2 else -i)
        assert x.grad[i] == float(i % 2)
        assert y.grad[i] == float(1 - i % 2)


@test_utils.test()
def test_select_forward():
    n = 5
    loss = qd.field(qd.f32, shape=n)
    x = qd.field(qd.f32, shape=n)
    y = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()
    for i in range(n):
        x[i] = i
        y[i] = -i

    @qd.kernel
    def pick():
        for i in range(n):
            loss[i] = qd.select(i % 2, x[i], y[i])

    with qd.ad.FwdMode(loss=loss, param=x, seed=[1.0] * n):
        pick()
    for i in range(n):
        assert loss[i] == (i if i % 2 else -i)
        assert loss.dual[i] == float(i % 2)
    with qd.ad.FwdMode(loss=loss, param=y, seed=[1.0] * n):
        pick()
    for i in range(n):
        assert loss.dual[i] == float(1 - i % 2)


@test_utils.test()
def test_static_unrolled_accumulation():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.dense(qd.i, 1).place(x, y)
    qd.root.lazy_grad()

    @qd.kernel
    def accumulate():
        for i in x:
            for _ in qd.static(range(3)):
                y[i] += x[i] * 42
                y[i] -= x[i] * 5

    y.grad[0] = 1.0
    x[0] = 0.1
    accumulate()
    accumulate.grad()
    assert x.grad[0] == test_utils.approx(37 * 3)


@test_utils.test()
def test_store_then_static_accumulate_compiles():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.dense(qd.i, 1).place(x, y)
    qd.root.lazy_grad()

    @qd.kernel
    def store_first():
        for i in x:
            y[i] = x[i] * 42
            for _ in qd.static(range(3)):
                y[i] += x[i]

    @qd.kernel
    def accumulate_first():
        for i in x:
            for _ in qd.static(range(3)):
                y[i] += x[i]
            y[i] += x[i] * 42

    x[0] = 1.0
    store_first()
    store_first.grad()
    accumulate_first()
    accumulate_first.grad()


@test_utils.test(require=qd.extension.data64)
def test_nested_casts_print():
    @qd.kernel
    def casts():
        print(qd.cast(qd.cast(qd.cast(1.0, qd.f64), qd.f32), qd.f64))

    casts()
    qd.sync()


@test_utils.test(require=qd.extension.data64)
def test_grad_across_precisions_without_forward_launch():
    loss = qd.field(qd.f32, shape=())
    x = qd.field(qd.f64, shape=())
    qd.root.lazy_grad()

    @qd.kernel
    def copy():
        loss[None] = x[None]

    loss.grad[None] = 1
    copy.grad()
    assert x.grad[None] == 1


@test_utils.test(require=qd.extension.data64)
def test_tape_positional_loss_f64_from_f32():
    loss = qd.field(qd.f64, shape=())
    x = qd.field(qd.f32, shape=())
    qd.root.lazy_grad()

    @qd.kernel
    def copy():
        loss[None] = x[None]

    with qd.ad.Tape(loss):
        copy()
    assert x.grad[None] == 1


@test_utils.test()
def test_fractional_part_through_template_kernels():
    @qd.func
    def frac(v):
        part = v - qd.floor(v) if v > 0.0 else v - qd.ceil(v)
        return part

    @qd.kernel
    def square_frac(src: qd.template(), dst: qd.template()):
        for i in src:
            dst[i] = frac(src[i])**2

    @qd.kernel
    def total(src: qd.template(), out: qd.template()):
        for i in src:
            out[None] += src[i]

    n = 10
    a = qd.field(dtype=qd.f32, shape=(n,), needs_grad=True)
    values = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    a.from_numpy(values)
    b = qd.field(dtype=qd.f32, shape=(n,), needs_grad=True)
    loss = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    with qd.ad.Tape(loss):
        square_frac(a, b)
        total(b, loss)
    expected = 2 * np.modf(values)[0]
    np.testing.assert_allclose(a.grad.to_numpy(), expected, rtol=1e-4, atol=1e-6)


@test_utils.test()
def test_store_chain_in_one_kernel():
    x, a, b, c, d, e = (qd.field(dtype=qd.f32, shape=(), needs_grad=True) for _ in range(6))

    @qd.kernel
    def chain():
        a[None] = x[None]
        b[None] = a[None] * 2
        c[None] = b[None] * 3
        d[None] = c[None] * 4
        e[None] = d[None] * 5

    x[None] = 1
    with qd.ad.Tape(loss=e):
        chain()
    assert e[None] == 120.0
    assert x.grad[None] == 120.0
    for intermediate in (a, b, c, d):
        assert intermediate.grad[None] == 0.0


@test_utils.test()
def test_last_overwrite_of_loss_wins():
    x = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    loss = qd.field(dtype=qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def set_one(v: qd.template()):
        v[None] = 1.0

    @qd.kernel
    def times1(v: qd.template(), out: qd.template()):
        out[None] = v[None]

    @qd.kernel
    def times2(v: qd.template(), out: qd.template()):
        out[None] = 2 * v[None]

    @qd.kernel
    def times4(v: qd.template(), out: qd.template()):
        out[None] = 4 * v[None]

    set_one(x)
    with qd.ad.Tape(loss=loss):
        times1(x, loss)
        times2(x, loss)
        times4(x, loss)
    assert loss[None] == 4
    assert x.grad[None] == 4


# ---- test_ad_basics_fwd / test_ad_atomic_fwd -----------------------------------

@test_utils.test()
def test_fwd_scaled_add_of_one_element():
    n = 5
    x = qd.field(qd.f32, shape=n)
    loss = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()
    for i in range(n):
        x[i] = i

    @qd.kernel
    def add():
        loss[1] += 2 * x[3]

    with qd.ad.FwdMode(loss=loss, param=x, seed=[0, 0, 0, 1, 0]):
        add()
    assert loss.dual[1] == 2


@test_utils.test()
def test_fwd_product_of_two_elements():
    n = 5
    x = qd.field(qd.f32, shape=n)
    loss = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()
    for i in range(n):
        x[i] = i

    @qd.kernel
    def mul():
        loss[1] += x[3] * x[4]

    with qd.ad.FwdMode(loss=loss, param=x, seed=[0, 0, 0, 1, 1]):
        mul()
    assert loss.dual[1] == 7  # d(x3 x4) along (e3 + e4) = x4 + x3


@test_utils.test()
def test_fwd_two_losses_two_params():
    n = 5
    a = qd.field(float, shape=n)
    b = qd.field(float, shape=n)
    loss_1 = qd.field(float, shape=())
    loss_2 = qd.field(float, shape=())
    qd.root.lazy_dual()
    for i in range(n):
        a[i] = i
        b[i] = i

    @qd.kernel
    def both():
        loss_1[None] += 3 * b[1]**2 + 5 * a[3]**2
        loss_2[None] += 4 * b[2]**2 + 6 * a[4]**2

    ones = [1.0] * n
    with qd.ad.FwdMode(loss=loss_1, param=a, seed=ones):
        both()
    assert loss_1.dual[None] == 30  # 10 a3
    with qd.ad.FwdMode(loss=loss_1, param=b, seed=ones):
        both()
    assert loss_1.dual[None] == 6  # 6 b1
    with qd.ad.FwdMode(loss=loss_2, param=b, seed=ones):
        both()
    assert loss_2.dual[None] == 16  # 8 b2
    with qd.ad.FwdMode(loss=loss_2, param=a, seed=ones):
        both()
    assert loss_2.dual[None] == 48  # 12 a4


@test_utils.test()
def test_fwd_default_seed_for_one_element_params():
    a = qd.field(float)
    b = qd.field(float)
    qd.root.dense(qd.i, 1).place(a, b, a.dual, b.dual)
    c = qd.field(float, shape=())
    d = qd.field(float, shape=())
    qd.root.lazy_dual()

    @qd.kernel
    def nothing():
        pass

    with qd.ad.FwdMode(loss=b, param=a):
        nothing()
    with qd.ad.FwdMode(loss=d, param=c):
        nothing()


@test_utils.test()
def test_fwd_duals_are_cleared_between_scopes():
    x = qd.field(float, shape=(), needs_dual=True)
    y = qd.field(float, shape=(), needs_dual=True)
    loss = qd.field(float, shape=(), needs_dual=True)
    x[None] = 2.0
    y[None] = 3.0

    @qd.kernel
    def square_and_add():
        y[None] = x[None]**2
        loss[None] += y[None]

    for _ in range(5):
        with qd.ad.FwdMode(loss=loss, param=x):
            square_and_add()
        assert y.dual[None] == 4.0


@test_utils.test()
def test_fwd_sum_of_squares_reduction():
    n = 16
    x = qd.field(dtype=qd.f32, shape=n)
    loss = qd.field(dtype=qd.f32, shape=())
    qd.root.lazy_dual()

    @qd.kernel
    def reduce():
        for i in x:
            loss[None] += x[i]**2

    for i in range(n):
        x[i] = i
    with qd.ad.FwdMode(loss=loss, param=x, seed=[1.0] * n):
        reduce()
    assert loss[None] == test_utils.approx(sum(i * i for i in range(n)))
    assert loss.dual[None] == test_utils.approx(sum(2 * i for i in range(n)))


# ---- test_ad_for: reverse mode through dynamic loops ---------------------------

@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_empty_nested_loops_under_tape():
    loss = qd.field(float, shape=(), needs_grad=True)

    @qd.kernel
    def empty():
        for i in range(5):
            for j in range(5):
                pass

    with qd.ad.Tape(loss=loss):
        empty()


@pytest.mark.parametrize("augmented", [False, True])
@test_utils.test()
def test_dynamic_linear_sum(augmented):
    n = 10
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.i32, shape=n)
    p = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def by_assign():
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc = acc + a[i]
            p[i] = acc

    @qd.kernel
    def by_augmented():
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc += a[i]
            p[i] = acc

    kern = by_augmented if augmented else by_assign
    for i in range(n):
        a[i] = 3
        b[i] = i
    kern()
    for i in range(n):
        assert p[i] == 3 * i + 1
        p.grad[i] = 1
    kern.grad()
    for i in range(n):
        assert a.grad[i] == i


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_dynamic_power():
    n = 10
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.i32, shape=n)
    p = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def power():
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc = acc * a[i]
            p[i] = acc

    for i in range(n):
        a[i] = 3
        b[i] = i
    power()
    for i in range(n):
        assert p[i] == 3**i
        p.grad[i] = 1
    power.grad()
    for i in range(n):
        assert a.grad[i] == i * 3**(i - 1) if i else a.grad[i] == 0


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_dynamic_fibonacci_pair():
    n = 15
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.f32, shape=n, needs_grad=True)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def fib():
        for i in range(n):
            lo = a[i]
            hi = b[i]
            for j in range(c[i]):
                lo, hi = hi, lo + hi
            f[i] = hi

    b.fill(1)
    for i in range(n):
        c[i] = i
    fib()
    for i in range(n):
        f.grad[i] = 1
    fib.grad()
    for i in range(n):
        assert a.grad[i] == (0 if i == 0 else f[i - 1])
        assert b.grad[i] == f[i]


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_fibonacci_values_as_indices():
    n, m = 5, 10
    a = qd.field(qd.f32, shape=m, needs_grad=True)
    b = qd.field(qd.f32, shape=m, needs_grad=True)
    f = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def fib():
        for i in range(n):
            lo = 0
            hi = 1
            for j in range(5):
                lo, hi = hi, lo + hi
                b[hi] += a[hi]
        for i in range(m):
            f[None] += b[i]

    f.grad[None] = 1
    a.fill(1)
    fib()
    fib.grad()
    for i in range(m):
        hit = int(i in (1, 2, 3, 5, 8))
        assert a.grad[i] == hit * n
        assert b[i] == hit * n


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_loop_carried_index_into_field():
    n = 5
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.f32, shape=n, needs_grad=True)
    f = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def walk():
        for i in range(n):
            k = 0
            for j in range(n):
                b[i] += a[k]**2
                k += 1
        for i in range(n):
            f[None] += b[i]

    f.grad[None] = 1
    for i in range(n):
        a[i] = i
    walk()
    walk.grad()
    for i in range(n):
        assert a.grad[i] == 2 * i * n


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_integer_loop_carried_weight():
    n = 5
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.f32, shape=n, needs_grad=True)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def weighted():
        for i in range(n):
            w = 1
            s = 0.0
            for j in range(c[i]):
                s += w * a[i] + b[i]
                w *= 10
            f[i] = s

    a.fill(1)
    b.fill(1)
    for i in range(n):
        c[i] = i
    weighted()
    for i in range(n):
        f.grad[i] = 1
    weighted.grad()
    repunit = 0
    for i in range(n):
        assert a.grad[i] == repunit  # 0, 1, 11, 111, ...
        assert b.grad[i] == i
        repunit = repunit * 10 + 1


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_two_dynamic_loops_in_sequence():
    n = 5
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.f32, shape=n, needs_grad=True)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def two_loops():
        for i in range(n):
            w = 1.0
            for j in range(c[i]):
                w *= a[i]
            s = 0.0
            for j in range(c[i] * 2):
                s += w + b[i]
            f[i] = s

    a.fill(2)
    b.fill(1)
    for i in range(n):
        c[i] = i
    two_loops()
    for i in range(n):
        assert f[i] == 2 * i * (1 + 2**i)
        f.grad[i] = 1
    two_loops.grad()
    for i in range(n):
        assert a.grad[i] == 2 * i * i * 2**(i - 1)
        assert b.grad[i] == 2 * i


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_two_dynamic_loops_under_a_static_bounded_loop():
    n = 6
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.f32, shape=n, needs_grad=True)
    c = qd.field(qd.i32, shape=(n, n // 2))
    f = qd.field(qd.f32, shape=(n, n // 2), needs_grad=True)

    @qd.kernel
    def nests():
        for i in range(n):
            for k in range(n // 2):
                w = 1.0
                for j in range(c[i, k]):
                    w *= a[i]
                s = 0.0
                for j in range(c[i, k] * 2):
                    s += w + b[i]
                f[i, k] = s

    a.fill(2)
    b.fill(1)
    for i in range(n):
        for k in range(n // 2):
            c[i, k] = i + k
    nests()
    for i in range(n):
        for k in range(n // 2):
            assert f[i, k] == 2 * (i + k) * (1 + 2**(i + k))
            f.grad[i, k] = 1
    nests.grad()
    for i in range(n):
        assert a.grad[i] == sum(2 * (i + k)**2 * 2**(i + k - 1) for k in range(n // 2))
        assert b.grad[i] == sum(2 * (i + k) for k in range(n // 2))


@test_utils.test(require=[qd.extension.adstack, qd.extension.data64], **ADSTACK)
def test_loop_body_with_precision_round_trip():
    n = 5
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n, needs_grad=True)
    g = qd.field(qd.f32, shape=n)

    @qd.kernel
    def body():
        for i in range(n):
            w = 2.0
            tot = 0.0
            tot_w = 0.0
            for j in range(c[i]):
                tot_w += w + 1
                tot += (w + 1) * a[i]
                w = w + 1
                w = w * 4
                w = qd.cast(w, qd.f64)
                w = qd.cast(w, qd.f32)
            g[i] = tot_w
            f[i] = tot

    a.fill(2)
    for i in range(n):
        c[i] = i
        f.grad[i] = 1
    body()
    body.grad()
    for i in range(n):
        assert a.grad[i] == g[i]


def _mixed_inner_loops_kernel(x, arr, loss):
    @qd.kernel
    def mixed():
        for i in arr:
            loss[None] += qd.sin(x[None])
            for j in range(2):
                loss[None] += qd.sin(x[None]) + 1.0
    return mixed


@pytest.mark.parametrize("use_tape", [False, True])
@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_mixed_inner_loops(use_tape):
    x = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    arr = qd.field(dtype=qd.f32, shape=5)
    loss = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    mixed = _mixed_inner_loops_kernel(x, arr, loss)
    x[None] = 0.0
    if use_tape:
        with qd.ad.Tape(loss=loss):
            mixed()
    else:
        loss.grad[None] = 1.0
        mixed()
        mixed.grad()
    assert loss[None] == 10.0
    assert x.grad[None] == 15.0


def _local_accumulators_kernel(x, arr, loss):
    @qd.kernel
    def locals_():
        for i in arr:
            for j in range(3):
                s = 0.0
                t = 0.0
                for k in range(3):
                    s += qd.sin(x[None]) + 1.0
                    t += qd.sin(x[None])
                loss[None] += s + t
    return locals_


def _nested_accumulators_kernel(x, arr, loss):
    @qd.kernel
    def nested():
        for i in arr:
            for j in range(2):
                s = 0.0
                for k in range(3):
                    u = 0.0
                    s += qd.sin(x[None]) + 1.0
                    for m in range(2):
                        u += qd.sin(x[None])
                    loss[None] += u
                loss[None] += s
    return nested


def _stacked_kernel(x, arr, loss):
    @qd.kernel
    def stacked():
        for i in arr:
            loss[None] += qd.sin(x[None])
            for j in range(3):
                s = 0.0
                for k in range(3):
                    s += qd.sin(x[None]) + 1.0
                loss[None] += s
            for j in range(3):
                s = 0.0
                for k in range(3):
                    s += qd.sin(x[None]) + 1.0
                loss[None] += s
    return stacked


def _stacked_mixed_kernel(x, arr, loss):
    @qd.kernel
    def stacked_mixed():
        for i in arr:
            loss[None] += qd.sin(x[None])
            for j in range(3):
                for k in range(3):
                    loss[None] += qd.sin(x[None]) + 1.0
            for j in range(3):
                s = 0.0
                for k in range(3):
                    s += qd.sin(x[None]) + 1.0
                loss[None] += s
            for j in range(3):
                for k in range(3):
                    loss[None] += qd.sin(x[None]) + 1.0
    return stacked_mixed


# builder -> (loss, d loss / d x) at x = 0 with two outer iterations.
_LOCAL_CASES = {
    "local": (_local_accumulators_kernel, 18.0, 36.0),
    "nested": (_nested_accumulators_kernel, 12.0, 36.0),
    "stacked": (_stacked_kernel, 36.0, 38.0),
    "stacked_mixed": (_stacked_mixed_kernel, 54.0, 56.0),
}


@pytest.mark.parametrize("use_tape", [False, True])
@pytest.mark.parametrize("case", sorted(_LOCAL_CASES))
@pytest.mark.parametrize("stack_size", [0, 32])
def test_local_accumulators_in_inner_loops(case, use_tape, stack_size):
    builder, want_loss, want_grad = _LOCAL_CASES[case]

    @test_utils.test(require=qd.extension.adstack, ad_stack_size=stack_size,
                     **ADSTACK)
    def run():
        x = qd.field(dtype=float, shape=(), needs_grad=True)
        arr = qd.field(dtype=float, shape=2, needs_grad=True)
        loss = qd.field(dtype=float, shape=(), needs_grad=True)
        kern = builder(x, arr, loss)
        x[None] = 0.0
        if use_tape:
            with qd.ad.Tape(loss=loss):
                kern()
        else:
            loss.grad[None] = 1.0
            kern()
            kern.grad()
        assert loss[None] == want_loss
        assert x.grad[None] == want_grad

    run(qd.cpu)


@pytest.mark.parametrize("stack_size", [0, 1])
def test_large_triple_loop_accumulation(stack_size):
    @test_utils.test(require=qd.extension.adstack, ad_stack_size=stack_size,
                     **ADSTACK)
    def run():
        x = qd.field(dtype=float, shape=(), needs_grad=True)
        loss = qd.field(dtype=float, shape=(), needs_grad=True)

        @qd.kernel
        def large():
            for i in range(5):
                for j in range(2000):
                    for k in range(1000):
                        loss[None] += qd.sin(x[None]) + 1.0

        with qd.ad.Tape(loss=loss):
            large()
        assert loss[None] == 1e7
        assert x.grad[None] == 1e7

    run(qd.cpu)


# Kernels whose inner loops only add x into y (the "IB" loop shapes of
# upstream), with the count of additions each one makes.
def _ib_two(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
    return k, 12


def _ib_two_outermost(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
    return k, 24


def _ib_two_outermost_mixed(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
                for ii in range(3):
                    y[None] += x[None]
    return k, 42


def _ib_mixed(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
                for m in range(2):
                    y[None] += x[None]
            for i in range(3):
                y[None] += x[None]
    return k, 30


def _ib_deeper(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                for ii in range(2):
                    y[None] += x[None]
            for i in range(3):
                for ii in range(2):
                    for iii in range(2):
                        y[None] += x[None]
    return k, 42


def _ib_inner_mixed(x, y):
    @qd.kernel
    def k():
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                for ii in range(2):
                    y[None] += x[None]
                for iii in range(2):
                    y[None] += x[None]
                    for iiii in range(2):
                        y[None] += x[None]
            for i in range(3):
                for ii in range(2):
                    for iii in range(2):
                        y[None] += x[None]
    return k, 78


_IB_CASES = {f.__name__: f for f in (_ib_two, _ib_two_outermost, _ib_two_outermost_mixed,
                                     _ib_mixed, _ib_deeper, _ib_inner_mixed)}


@pytest.mark.parametrize("case", sorted(_IB_CASES))
@test_utils.test()
def test_inner_accumulation_loops_reverse_and_forward(case):
    x = qd.field(float, (), needs_grad=True, needs_dual=True)
    y = qd.field(float, (), needs_grad=True, needs_dual=True)
    kern, count = _IB_CASES[case](x, y)
    x[None] = 1.0
    with qd.ad.Tape(y):
        kern()
    assert y[None] == count
    assert x.grad[None] == count
    y[None] = 0.0
    with qd.ad.FwdMode(loss=y, param=x):
        kern()
    assert y[None] == count
    assert y.dual[None] == count


@test_utils.test()
def test_inner_loops_bounded_by_outer_index():
    n = 10
    x = qd.field(float, shape=n, needs_grad=True)
    y = qd.field(float, shape=n, needs_grad=True)

    @qd.kernel
    def triangular():
        for j in range(n):
            for i in range(j):
                y[j] += x[j]
            for i in range(3):
                for ii in range(j):
                    y[j] += x[j]
            for i in range(3):
                for ii in range(2):
                    for iii in range(j):
                        y[j] += x[j]

    x.fill(1.0)
    for i in range(n):
        y.grad[i] = 1.0
    triangular()
    triangular.grad()
    for i in range(n):
        assert y[i] == i * 10.0
        assert x.grad[i] == i * 10.0


@test_utils.test()
def test_value_loaded_before_dynamic_loop_then_store():
    n = 10
    a = qd.field(qd.f32, shape=n, needs_grad=True)
    b = qd.field(qd.i32, shape=n)
    p = qd.field(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def compute():
        for i in range(n):
            val = a[i]
            for j in range(b[i]):
                p[i] += i
            p[i] = val * i

    for i in range(n):
        a[i] = i
        b[i] = 2
    compute()
    for i in range(n):
        assert p[i] == i * i
        p.grad[i] = 1
    compute.grad()
    for i in range(n):
        assert a.grad[i] == i


@test_utils.test()
def test_row_sum_exp_matches_hand_written_gradient():
    n, m = 2, 2
    x = qd.field(qd.f32, shape=(n, m), needs_grad=True)
    x.from_numpy(np.array([[-0.57279384, 0.7815071], [0.45064202, -0.299493]], np.float32))
    manual = qd.field(qd.f32, shape=(n, m))
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def compute():
        for i in range(n):
            s = 0.0
            for j in range(m):
                s += x[i, j]
            loss[None] += qd.exp(s)

    @qd.kernel
    def by_hand():
        for i in range(n):
            s = 0.0
            for j in range(m):
                s += x[i, j]
            g = loss.grad[None] * qd.exp(s)
            for j in range(m):
                manual[i, j] = g

    loss[None] = 0
    compute()
    loss.grad[None] = 1
    compute.grad()
    by_hand()
    np.testing.assert_allclose(x.grad.to_numpy(), manual.to_numpy(), rtol=1e-6)


# ---- test_ad_for_fwd ----------------------------------------------------------

@test_utils.test()
def test_fwd_dynamic_sum_and_param_dual_reset():
    n = 10
    a = qd.field(qd.f32, shape=n)
    b = qd.field(qd.i32, shape=n)
    p = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()

    @qd.kernel
    def dyn_sum():
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc = acc + a[i]
            p[i] = acc

    for i in range(n):
        a[i] = 3
        b[i] = i
    dyn_sum()
    with qd.ad.FwdMode(loss=p, param=a, seed=[1.0] * n):
        dyn_sum()
    for i in range(n):
        assert p.dual[i] == i
        assert a.dual[i] == 0  # the seed is cleared on exit
    with qd.ad.FwdMode(loss=p, param=a, seed=[1.0] * n, clear_gradients=False):
        pass
    for i in range(n):
        assert p.dual[i] == i


@test_utils.test()
def test_fwd_dynamic_power_and_fibonacci():
    n = 10
    a = qd.field(qd.f32, shape=n)
    b = qd.field(qd.i32, shape=n)
    p = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()

    @qd.kernel
    def power():
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc *= a[i]
            p[i] = acc

    for i in range(n):
        a[i] = 3
        b[i] = i
    with qd.ad.FwdMode(loss=p, param=a, seed=[1.0] * n):
        power()
    for i in range(n):
        assert p[i] == 3**i
        assert p.dual[i] == (i * 3**(i - 1) if i else 0)


@test_utils.test()
def test_fwd_fibonacci_pair():
    n = 15
    a = qd.field(qd.f32, shape=n)
    b = qd.field(qd.f32, shape=n)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()

    @qd.kernel
    def fib():
        for i in range(n):
            lo = a[i]
            hi = b[i]
            for j in range(c[i]):
                lo, hi = hi, lo + hi
            f[i] = hi

    b.fill(1)
    for i in range(n):
        c[i] = i
    fib()
    with qd.ad.FwdMode(loss=f, param=a, seed=[1.0] * n):
        fib()
    for i in range(n):
        assert f.dual[i] == (0 if i == 0 else f[i - 1])
    with qd.ad.FwdMode(loss=f, param=b, seed=[1.0] * n):
        fib()
    for i in range(n):
        assert f.dual[i] == f[i]


@test_utils.test()
def test_fwd_fibonacci_values_as_indices():
    n, m = 5, 10
    a = qd.field(qd.f32, shape=m)
    b = qd.field(qd.f32, shape=m)
    f = qd.field(qd.f32, shape=m)
    qd.root.lazy_dual()

    @qd.kernel
    def fib():
        for i in range(n):
            lo = 0
            hi = 1
            for j in range(5):
                lo, hi = hi, lo + hi
                b[hi] += a[hi]
        for i in range(m):
            f[i] += b[i]

    a.fill(1)
    with qd.ad.FwdMode(loss=f, param=a, seed=[1.0] * m):
        fib()
    for i in range(m):
        hit = int(i in (1, 2, 3, 5, 8))
        assert f.dual[i] == hit * n
        assert b[i] == hit * n


@test_utils.test()
def test_fwd_two_dynamic_loops():
    n = 6
    a = qd.field(qd.f32, shape=n, needs_dual=True)
    b = qd.field(qd.f32, shape=n, needs_dual=True)
    c = qd.field(qd.i32, shape=(n, n // 2))
    f = qd.field(qd.f32, shape=(n, n // 2), needs_dual=True)

    @qd.kernel
    def nests():
        for i in range(n):
            for k in range(n // 2):
                w = 1.0
                for j in range(c[i, k]):
                    w *= a[i]
                s = 0.0
                for j in range(c[i, k] * 2):
                    s += w + b[i]
                f[i, k] = s

    a.fill(2)
    b.fill(1)
    for i in range(n):
        for k in range(n // 2):
            c[i, k] = i + k
    with qd.ad.FwdMode(loss=f, param=a, seed=[1.0] * n):
        nests()
    for i in range(n):
        for k in range(n // 2):
            assert f.dual[i, k] == 2 * (i + k)**2 * 2**(i + k - 1)
    with qd.ad.FwdMode(loss=f, param=b, seed=[1.0] * n):
        nests()
    for i in range(n):
        for k in range(n // 2):
            assert f.dual[i, k] == 2 * (i + k)


@test_utils.test(require=qd.extension.data64)
def test_fwd_loop_body_with_precision_round_trip():
    n = 5
    a = qd.field(qd.f32, shape=n, needs_dual=True)
    c = qd.field(qd.i32, shape=n)
    f = qd.field(qd.f32, shape=n, needs_dual=True)
    g = qd.field(qd.f32, shape=n, needs_dual=False)

    @qd.kernel
    def body():
        for i in range(n):
            w = 2.0
            tot = 0.0
            tot_w = 0.0
            for j in range(c[i]):
                tot_w += w + 1
                tot += (w + 1) * a[i]
                w = w + 1
                w = w * 4
                w = qd.cast(w, qd.f64)
                w = qd.cast(w, qd.f32)
            g[i] = tot_w
            f[i] = tot

    a.fill(2)
    for i in range(n):
        c[i] = i
    with qd.ad.FwdMode(loss=f, param=a, seed=[1.0] * n):
        body()
    for i in range(n):
        assert f.dual[i] == g[i]


@pytest.mark.parametrize("case", sorted(_LOCAL_CASES))
@test_utils.test()
def test_fwd_local_accumulators_in_inner_loops(case):
    builder, want_loss, want_dual = _LOCAL_CASES[case]
    x = qd.field(dtype=float, shape=(), needs_dual=True)
    arr = qd.field(dtype=float, shape=2, needs_dual=True)
    loss = qd.field(dtype=float, shape=(), needs_dual=True)
    kern = builder(x, arr, loss)
    x[None] = 0.0
    with qd.ad.FwdMode(loss=loss, param=x):
        kern()
    assert loss[None] == want_loss
    assert loss.dual[None] == want_dual


@test_utils.test()
def test_fwd_mixed_inner_loops_and_large_loop():
    x = qd.field(dtype=qd.f32, shape=(), needs_dual=True)
    arr = qd.field(dtype=qd.f32, shape=5)
    loss = qd.field(dtype=qd.f32, shape=(), needs_dual=True)
    mixed = _mixed_inner_loops_kernel(x, arr, loss)
    x[None] = 0.0
    with qd.ad.FwdMode(loss=loss, param=x):
        mixed()
    assert loss[None] == 10.0
    assert loss.dual[None] == 15.0

    big = qd.field(dtype=float, shape=(), needs_dual=True)

    @qd.kernel
    def large():
        for i in range(2000):
            for j in range(100):
                for k in range(5):
                    big[None] += qd.sin(x[None]) + 1.0

    with qd.ad.FwdMode(loss=big, param=x):
        large()
    assert big[None] == 1e6
    assert big.dual[None] == 1e6


# ---- test_ad_if / test_ad_if_fwd ----------------------------------------------

@test_utils.test()
def test_if_guarded_store_outside_loops():
    x = qd.field(qd.f32, shape=())
    y = qd.field(qd.f32, shape=())
    qd.root.lazy_grad()

    @qd.kernel
    def guarded():
        if x[None] > 0.0:
            y[None] = x[None]

    x[None] = 1
    y.grad[None] = 1
    guarded()
    guarded.grad()
    assert x.grad[None] == 1


@pytest.mark.parametrize("via_local", [False, True])
@test_utils.test()
def test_if_else_with_scalar_index_argument(via_local):
    x = qd.field(qd.f32, shape=2)
    y = qd.field(qd.f32, shape=2)
    qd.root.lazy_grad()

    @qd.kernel
    def direct(i: qd.i32):
        if x[i] > 0:
            y[i] = x[i]
        else:
            y[i] = 2 * x[i]

    @qd.kernel
    def via_temp(i: qd.i32):
        t = x[i]
        if t > 0:
            y[i] = t
        else:
            y[i] = 2 * t

    kern = via_temp if via_local else direct
    x[0] = 0
    x[1] = 1
    y.grad[0] = 1
    y.grad[1] = 1
    kern(0)
    kern.grad(0)
    kern(1)
    kern.grad(1)
    assert x.grad[0] == 2
    assert x.grad[1] == 1


@test_utils.test()
def test_nested_if_chain():
    n = 20
    x = qd.field(qd.f32, shape=n)
    y = qd.field(qd.f32, shape=n)
    z = qd.field(qd.f32, shape=n)
    qd.root.lazy_grad()

    @qd.kernel
    def chain():
        for i in x:
            if x[i] < 2:
                if x[i] == 0:
                    y[i] = 0
                else:
                    y[i] = z[i] * 1
            else:
                if x[i] == 2:
                    y[i] = z[i] * 2
                else:
                    y[i] = z[i] * 3

    z.fill(1)
    for i in range(n):
        x[i] = i % 4
    chain()
    for i in range(n):
        assert y[i] == i % 4
        y.grad[i] = 1
    chain.grad()
    for i in range(n):
        assert z.grad[i] == i % 4


@pytest.mark.parametrize("fp", [qd.f32, qd.f64])
def test_if_else_in_parallel_loop(fp):
    @test_utils.test(default_fp=fp)
    def run():
        x = qd.field(fp, shape=2)
        y = qd.field(fp, shape=2)
        qd.root.lazy_grad()

        @qd.kernel
        def branchy():
            for i in range(2):
                t = x[i]
                if t > 0:
                    y[i] = t
                else:
                    y[i] = 2 * t

        x[0] = 0
        x[1] = 1
        y.grad[0] = 1
        y.grad[1] = 1
        branchy()
        branchy.grad()
        assert x.grad[0] == 2
        assert x.grad[1] == 1

    run(qd.cpu)


@pytest.mark.parametrize("fp", [qd.f32, qd.f64])
def test_conditional_reciprocal_with_parallelize(fp):
    @test_utils.test(default_fp=fp)
    def run():
        x = qd.field(fp, shape=2)
        y = qd.field(fp, shape=2)
        qd.root.lazy_grad()
        qd.root.lazy_dual()

        @qd.kernel
        def recip():
            qd.loop_config(parallelize=1)
            for i in range(2):
                t = 0.0
                if x[i] > 0:
                    t = 1 / x[i]
                y[i] = t

        x[0] = 0
        x[1] = 2
        y.grad[0] = 1
        y.grad[1] = 1
        recip()
        recip.grad()
        assert x.grad[0] == 0
        assert x.grad[1] == -0.25
        with qd.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0]):
            recip()
        assert y.dual[0] == 0
        assert y.dual[1] == -0.25

    run(qd.cpu)


@test_utils.test()
def test_fwd_if_variants():
    x = qd.field(qd.f32, shape=2)
    y = qd.field(qd.f32, shape=2)
    s = qd.field(qd.f32, shape=())
    t = qd.field(qd.f32, shape=())
    qd.root.lazy_dual()

    @qd.kernel
    def simple():
        if s[None] > 0.0:
            t[None] = s[None]

    @qd.kernel
    def with_arg(i: qd.i32):
        v = x[i]
        if v > 0:
            y[i] = v
        else:
            y[i] = 2 * v

    @qd.kernel
    def parallel():
        for i in range(2):
            if x[i] > 0:
                y[i] = x[i]
            else:
                y[i] = 2 * x[i]

    s[None] = 1
    with qd.ad.FwdMode(loss=t, param=s, seed=[1.0]):
        simple()
    assert t.dual[None] == 1
    x[0] = 0
    x[1] = 1
    with qd.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0]):
        with_arg(0)
        with_arg(1)
    assert y.dual[0] == 2
    assert y.dual[1] == 1
    with qd.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0]):
        parallel()
    assert y.dual[0] == 2
    assert y.dual[1] == 1


@test_utils.test()
def test_fwd_nested_if_chain():
    n = 20
    x = qd.field(qd.f32, shape=n)
    y = qd.field(qd.f32, shape=n)
    z = qd.field(qd.f32, shape=n)
    qd.root.lazy_dual()

    @qd.kernel
    def chain():
        for i in x:
            if x[i] < 2:
                if x[i] == 0:
                    y[i] = 0
                else:
                    y[i] = z[i] * 1
            else:
                if x[i] == 2:
                    y[i] = z[i] * 2
                else:
                    y[i] = z[i] * 3

    z.fill(1)
    for i in range(n):
        x[i] = i % 4
    with qd.ad.FwdMode(loss=y, param=z, seed=[1.0] * n):
        chain()
    for i in range(n):
        assert y.dual[i] == i % 4


# ---- test_ad_ndarray ------------------------------------------------------------

@test_utils.test(default_fp=qd.f64, require=qd.extension.adstack, **ADSTACK)
def test_ndarray_dynamic_loops_reverse():
    n = 10
    a = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    b = qd.ndarray(qd.i32, shape=n)
    p = qd.ndarray(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def power(a: qd.types.ndarray(), b: qd.types.ndarray(), p: qd.types.ndarray()):
        for i in range(n):
            acc = 1.0
            for j in range(b[i]):
                acc = acc * a[i]
            p[i] = acc

    for i in range(n):
        a[i] = 3
        b[i] = i
    power(a, b, p)
    for i in range(n):
        assert p[i] == 3**i
        p.grad[i] = 1
    power.grad(a, b, p)
    for i in range(n):
        assert a.grad[i] == (i * 3**(i - 1) if i else 0)


@test_utils.test(default_fp=qd.f64, require=qd.extension.adstack, **ADSTACK)
def test_ndarray_fibonacci_and_integer_weights():
    n = 15
    a = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    b = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    c = qd.ndarray(qd.i32, shape=n)
    f = qd.ndarray(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def fib(a: qd.types.ndarray(), b: qd.types.ndarray(), c: qd.types.ndarray(),
            f: qd.types.ndarray()):
        for i in range(n):
            lo = a[i]
            hi = b[i]
            for j in range(c[i]):
                lo, hi = hi, lo + hi
            f[i] = hi

    b.fill(1)
    for i in range(n):
        c[i] = i
    fib(a, b, c, f)
    for i in range(n):
        f.grad[i] = 1
    fib.grad(a, b, c, f)
    for i in range(n):
        assert a.grad[i] == (0 if i == 0 else f[i - 1])
        assert b.grad[i] == f[i]


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_ndarray_fibonacci_indices_zero_dim_loss():
    n, m = 5, 10
    a = qd.ndarray(qd.f32, shape=m, needs_grad=True)
    b = qd.ndarray(qd.f32, shape=m, needs_grad=True)
    f = qd.ndarray(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def fib(a: qd.types.ndarray(), b: qd.types.ndarray(), f: qd.types.ndarray()):
        for i in range(n):
            lo = 0
            hi = 1
            for j in range(5):
                lo, hi = hi, lo + hi
                b[hi] += a[hi]
        for i in range(m):
            f[None] += b[i]

    f.grad[None] = 1
    a.fill(1)
    fib(a, b, f)
    fib.grad(a, b, f)
    for i in range(m):
        hit = int(i in (1, 2, 3, 5, 8))
        assert a.grad[i] == hit * n
        assert b[i] == hit * n


@pytest.mark.parametrize("use_tape", [False, True])
@test_utils.test(default_fp=qd.f64, require=qd.extension.adstack, **ADSTACK)
def test_ndarray_struct_for_mixed_inner_loops(use_tape):
    x = qd.ndarray(dtype=qd.f32, shape=(1,), needs_grad=True)
    arr = qd.ndarray(dtype=qd.f32, shape=5)
    loss = qd.ndarray(dtype=qd.f32, shape=(1,), needs_grad=True)

    @qd.kernel
    def mixed(x: qd.types.ndarray(), arr: qd.types.ndarray(), loss: qd.types.ndarray()):
        for i in arr:
            loss[0] += qd.sin(x[0])
            for j in range(2):
                loss[0] += qd.sin(x[0]) + 1.0

    x[0] = 0.0
    if use_tape:
        with qd.ad.Tape(loss=loss):
            mixed(x, arr, loss)
    else:
        loss.grad[0] = 1.0
        mixed(x, arr, loss)
        mixed.grad(x, arr, loss)
    assert loss[0] == 10.0
    assert x.grad[0] == 15.0


@pytest.mark.parametrize("stack_size", [0, 32])
def test_ndarray_zero_dim_stacked_loops(stack_size):
    @test_utils.test(require=qd.extension.adstack, ad_stack_size=stack_size,
                     **ADSTACK)
    def run():
        x = qd.ndarray(dtype=float, shape=(), needs_grad=True)
        arr = qd.ndarray(dtype=float, shape=2, needs_grad=True)
        loss = qd.ndarray(dtype=float, shape=(), needs_grad=True)

        @qd.kernel
        def stacked(x: qd.types.ndarray(), arr: qd.types.ndarray(),
                    loss: qd.types.ndarray()):
            for i in arr:
                loss[None] += qd.sin(x[None])
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += qd.sin(x[None]) + 1.0
                    loss[None] += s
                for j in range(3):
                    s = 0.0
                    for k in range(3):
                        s += qd.sin(x[None]) + 1.0
                    loss[None] += s

        loss.grad[None] = 1.0
        x[None] = 0.0
        stacked(x, arr, loss)
        stacked.grad(x, arr, loss)
        assert loss[None] == 36.0
        assert x.grad[None] == 38.0

    run(qd.cpu)


@test_utils.test()
def test_ndarray_inner_loops_bounded_by_outer_index():
    n = 10
    x = qd.ndarray(float, shape=n, needs_grad=True)
    y = qd.ndarray(float, shape=n, needs_grad=True)

    @qd.kernel
    def triangular(x: qd.types.ndarray(), y: qd.types.ndarray()):
        for j in range(n):
            for i in range(j):
                y[j] += x[j]
            for i in range(3):
                for ii in range(j):
                    y[j] += x[j]
            for i in range(3):
                for ii in range(2):
                    for iii in range(j):
                        y[j] += x[j]

    x.fill(1.0)
    for i in range(n):
        y.grad[i] = 1.0
    triangular(x, y)
    triangular.grad(x, y)
    for i in range(n):
        assert y[i] == i * 10.0
        assert x.grad[i] == i * 10.0


@test_utils.test()
def test_ndarray_zero_dim_tape_inner_loops():
    x = qd.ndarray(float, (), needs_grad=True)
    y = qd.ndarray(float, (), needs_grad=True)

    @qd.kernel
    def compute(x: qd.types.ndarray(), y: qd.types.ndarray()):
        for j in range(2):
            for i in range(3):
                y[None] += x[None]
            for i in range(3):
                y[None] += x[None]

    x[None] = 1.0
    with qd.ad.Tape(y):
        compute(x, y)
    assert y[None] == 12.0
    assert x.grad[None] == 12.0


@test_utils.test()
def test_ndarray_if_variants():
    x = qd.ndarray(qd.f32, shape=2, needs_grad=True)
    y = qd.ndarray(qd.f32, shape=2, needs_grad=True)

    @qd.kernel
    def with_arg(i: qd.i32, x: qd.types.ndarray(), y: qd.types.ndarray()):
        t = x[i]
        if t > 0:
            y[i] = t
        else:
            y[i] = 2 * t

    @qd.kernel
    def recip(x: qd.types.ndarray(), y: qd.types.ndarray()):
        qd.loop_config(parallelize=1)
        for i in range(2):
            t = 0.0
            if x[i] > 0:
                t = 1 / x[i]
            y[i] = t

    x[0] = 0
    x[1] = 1
    y.grad[0] = 1
    y.grad[1] = 1
    with_arg(0, x, y)
    with_arg.grad(0, x, y)
    with_arg(1, x, y)
    with_arg.grad(1, x, y)
    assert x.grad[0] == 2
    assert x.grad[1] == 1

    # The reverse of the plain stores above consumed (zeroed) y.grad.
    x.grad.fill(0)
    y.grad.fill(1)
    x[1] = 2
    recip(x, y)
    recip.grad(x, y)
    assert x.grad[0] == 0
    assert x.grad[1] == -0.25


@test_utils.test()
def test_ndarray_nested_if_struct_for():
    n = 20
    x = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    y = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    z = qd.ndarray(qd.f32, shape=n, needs_grad=True)

    @qd.kernel
    def chain(x: qd.types.ndarray(), y: qd.types.ndarray(), z: qd.types.ndarray()):
        for i in x:
            if x[i] < 2:
                if x[i] == 0:
                    y[i] = 0
                else:
                    y[i] = z[i] * 1
            else:
                if x[i] == 2:
                    y[i] = z[i] * 2
                else:
                    y[i] = z[i] * 3

    z.fill(1)
    for i in range(n):
        x[i] = i % 4
    chain(x, y, z)
    for i in range(n):
        assert y[i] == i % 4
        y.grad[i] = 1
    chain.grad(x, y, z)
    for i in range(n):
        assert z.grad[i] == i % 4


@test_utils.test()
def test_ndarray_integer_needs_grad_is_rejected():
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"i32 is not supported for ndarray"):
        qd.ndarray(qd.i32, shape=3, needs_grad=True)


@test_utils.test()
def test_ndarray_last_overwrite_of_loss_wins():
    x = qd.ndarray(dtype=qd.f32, shape=(), needs_grad=True)
    loss = qd.ndarray(dtype=qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def set_one(x: qd.types.ndarray()):
        x[None] = 1.0

    @qd.kernel
    def times1(x: qd.types.ndarray(), loss: qd.types.ndarray()):
        loss[None] = x[None]

    @qd.kernel
    def times2(x: qd.types.ndarray(), loss: qd.types.ndarray()):
        loss[None] = 2 * x[None]

    @qd.kernel
    def times4(x: qd.types.ndarray(), loss: qd.types.ndarray()):
        loss[None] = 4 * x[None]

    set_one(x)
    with qd.ad.Tape(loss=loss):
        times1(x, loss)
        times2(x, loss)
        times4(x, loss)
    assert loss[None] == 4
    assert x.grad[None] == 4


@test_utils.test(require=qd.extension.adstack, **ADSTACK)
def test_ndarray_annotation_needs_grad_false_discards_gradient():
    n = 3

    @qd.kernel
    def spread(x: qd.types.ndarray(needs_grad=False), y: qd.types.ndarray()):
        for i in range(n):
            a = 2.0
            for j in range(n):
                a += x[i] / x.shape[0]
            y[0] += a

    x = qd.ndarray(qd.f32, shape=n, needs_grad=True)
    y = qd.ndarray(qd.f32, shape=1, needs_grad=True)
    spread(x, y)
    y.grad.fill(1.0)
    spread.grad(x, y)
    for i in range(n):
        assert x.grad[i] == 0.0


# ---- test_ad_global_data_access_rule_checker ------------------------------------

@test_utils.test(debug=True)
def test_validation_tape_over_self_loss():
    x = qd.field(float, shape=(), needs_grad=True)
    y = qd.field(float)
    qd.root.place(y)

    @qd.kernel
    def set_x():
        x[None] = 1

    with qd.ad.Tape(loss=x, validation=True):
        set_x()


@test_utils.test(debug=False)
def test_validation_without_debug_checks_without_warning():
    # Upstream warns that validation needs debug=True; here the rule is a
    # compile-time check independent of debug, so no warning is due.
    x = qd.field(float, shape=(), needs_grad=True)

    @qd.kernel
    def set_x():
        x[None] = 1

    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with qd.ad.Tape(loss=x, validation=True):
            set_x()
    # Unrelated warnings (e.g. an unwritable offline cache in a sandbox) may
    # appear; none may be about validation or debug mode.
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "debug" in m.lower() or "validation" in m.lower()]


def _rule_breaking_fields():
    n = 16
    x = qd.field(dtype=qd.f32, shape=n, needs_grad=True)
    loss = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    b = qd.field(dtype=qd.f32, shape=(), needs_grad=True)
    for i in range(n):
        x[i] = i
    b[None] = 10
    loss.grad[None] = 1
    return x, loss, b


@test_utils.test(debug=True)
def test_read_then_accumulate_same_element_is_an_assertion_error():
    x, loss, b = _rule_breaking_fields()

    @qd.kernel
    def breaks_rule():
        loss[None] = x[1] * b[None]
        b[None] += 100

    with pytest.raises(qd.QuadrantsAssertionError):
        with qd.ad.Tape(loss=loss, validation=True):
            breaks_rule()


@test_utils.test(debug=True)
def test_grad_replaced_function_is_not_validated():
    x, loss, b = _rule_breaking_fields()

    @qd.ad.grad_replaced
    def host_side():
        loss[None] = x[1] * b[None]
        b[None] += 100

    @qd.ad.grad_for(host_side)
    def host_side_grad():
        pass

    with qd.ad.Tape(loss=loss, validation=True):
        host_side()


@test_utils.test(debug=True)
def test_validation_tape_records_every_call():
    x, loss, b = _rule_breaking_fields()
    steps = 8

    @qd.kernel
    def first():
        loss[None] = x[1] * b[None]

    @qd.kernel
    def second():
        loss[None] = x[1] * b[None]

    with qd.ad.Tape(loss=loss, validation=True) as tape:
        for _ in range(steps):
            first()
            second()
        assert len(tape.calls) == 2 * steps
    assert [fn for fn, _ in tape.calls[:2]] == [first, second]


# ---- test_clear_all_gradients ----------------------------------------------------

@test_utils.test()
def test_clear_all_gradients_over_nested_dense_layouts():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    z = qd.field(qd.f32)
    w = qd.field(qd.f32)
    n = 16
    qd.root.place(x)
    qd.root.dense(qd.i, n).place(y)
    qd.root.dense(qd.i, n).dense(qd.j, n).place(z, w)
    qd.root.lazy_grad()

    x.grad[None] = 3
    y.grad.fill(3)
    z.grad.fill(5)
    w.grad.fill(6)
    assert z.grad.to_numpy().shape == (n, n)
    qd.ad.clear_all_gradients()
    assert x.grad[None] == 0
    assert not y.grad.to_numpy().any()
    assert not z.grad.to_numpy().any()
    assert not w.grad.to_numpy().any()
    qd.ad.clear_all_gradients()


# ---- test_customized_grad -----------------------------------------------------------

def _custom_grad_fields():
    n = 128
    x = qd.field(qd.f32)
    total = qd.field(qd.f32)
    qd.root.dense(qd.i, n).place(x)
    qd.root.place(total)
    qd.root.lazy_grad()

    @qd.kernel
    def scaled_sum(mul: qd.f32):
        for i in range(n):
            qd.atomic_add(total[None], x[i] * mul)

    return x, total, scaled_sum


@test_utils.test()
def test_grad_replaced_under_tape_and_direct():
    x, total, scaled_sum = _custom_grad_fields()

    @qd.ad.grad_replaced
    def forward(mul):
        scaled_sum(mul)
        scaled_sum(mul)

    @qd.ad.grad_for(forward)
    def backward(mul):
        scaled_sum.grad(mul)

    with qd.ad.Tape(loss=total):
        forward(4)
    assert x.grad[0] == 4  # one backward call, not two

    x.grad.fill(0)
    total.grad[None] = 1
    forward(4)
    forward.grad(4)
    assert x.grad[0] == 4


@test_utils.test()
def test_grad_replaced_through_a_proxy_function():
    x, total, scaled_sum = _custom_grad_fields()

    def proxy(mul):
        scaled_sum(mul)

    @qd.ad.grad_replaced
    def forward(mul):
        proxy(mul)
        proxy(mul)

    @qd.ad.grad_for(forward)
    def backward(mul):
        scaled_sum.grad(mul)

    with qd.ad.Tape(loss=total):
        forward(4)
    assert x.grad[0] == 4


@test_utils.test()
def test_grad_for_a_kernel_is_a_runtime_error():
    x, total, scaled_sum = _custom_grad_fields()
    with pytest.raises(RuntimeError):

        @qd.ad.grad_for(scaled_sum)
        def backward(mul):
            scaled_sum.grad(mul)

    with qd.ad.Tape(loss=total):
        scaled_sum(4)
    assert x.grad[0] == 4


@test_utils.test()
def test_no_grad_function_under_tape_and_direct():
    x, total, scaled_sum = _custom_grad_fields()

    @qd.ad.no_grad
    def forward(mul):
        scaled_sum(mul)
        scaled_sum(mul)

    with qd.ad.Tape(loss=total):
        forward(4)
        scaled_sum(5)
    assert x.grad[0] == 5

    x.grad.fill(0)
    total.grad[None] = 1
    forward(4)
    forward.grad(4)
    assert x.grad[0] == 0


# ---- test_api: the names of qd.ad ---------------------------------------------------

def test_ad_module_public_names():
    names = sorted(s for s in dir(qd.ad) if not s.startswith(("_", "@")))
    assert names == ["FwdMode", "Tape", "clear_all_gradients", "grad_for", "grad_replaced",
                     "no_grad"]


# ---- qd.ad.Tape(grad_check=...) -------------------------------------------------

@pytest.mark.parametrize("fn", [lambda v: v * v * v, lambda v: qd.sin(v) * qd.exp(v),
                                lambda v: (v + 1) / (v + 3), lambda v: qd.sqrt(v)])
@test_utils.test(require=qd.extension.data64, default_fp=qd.f64, exclude=[qd.vulkan])
def test_tape_grad_check_passes_for_correct_gradients(fn):
    x = qd.field(qd.f64, shape=(2, 3), needs_grad=True)
    v = qd.Vector.field(2, qd.f64, shape=4, needs_grad=True)
    y = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.2, 1.4, 6).reshape(2, 3))
    v.from_numpy(np.linspace(0.3, 1.1, 8).reshape(4, 2))

    @qd.kernel
    def compute():
        for i, j in x:
            y[None] += fn(x[i, j])
        for i in v:
            y[None] += fn(v[i][0]) * v[i][1]

    with qd.ad.Tape(loss=y, grad_check=[x, v]) as tape:
        compute()
    assert tape.grad_checker.results == [True, True]
    # The loss is left as the forward pass left it (qd math runs on the host too).
    expected = sum(fn(float(a)) for a in np.linspace(0.2, 1.4, 6)) + \
        sum(fn(float(a)) * float(b) for a, b in np.linspace(0.3, 1.1, 8).reshape(4, 2))
    assert y[None] == pytest.approx(expected, rel=1e-12)


@test_utils.test(require=qd.extension.data64, default_fp=qd.f64, exclude=[qd.vulkan])
def test_tape_grad_check_catches_a_wrong_gradient():
    x = qd.field(qd.f64, shape=5, needs_grad=True)
    y = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.5, 1.5, 5))

    @qd.kernel
    def compute():
        for i in x:
            y[None] += x[i] * x[i]

    @qd.ad.grad_replaced
    def forward():
        compute()

    @qd.ad.grad_for(forward)
    def wrong_backward():
        for i in range(5):  # d/dx x^2 is 2x, this claims 3x
            x.grad[i] = 3.0 * x[i] * y.grad[None]

    with pytest.raises(qd.QuadrantsAssertionError, match="Grad check failed"):
        with qd.ad.Tape(loss=y, grad_check=[x]):
            forward()


@test_utils.test(exclude=[qd.vulkan])
def test_tape_grad_check_needs_an_f64_loss():
    x = qd.field(qd.f32, shape=5, needs_grad=True)
    y = qd.field(qd.f32, shape=(), needs_grad=True)
    with pytest.raises(qd.QuadrantsTypeError, match="only f64"):
        qd.ad.Tape(loss=y, grad_check=[x])


@test_utils.test()
def test_a_grad_replaced_method_of_a_data_oriented_class_gets_its_object():
    @qd.data_oriented
    class Scaler:
        def __init__(self):
            self.x = qd.field(qd.f32, 8, needs_grad=True)
            self.total = qd.field(qd.f32, (), needs_grad=True)

        @qd.kernel
        def accumulate(self, scale: qd.f32):
            for i in self.x:
                self.total[None] += self.x[i] * scale

        @qd.ad.grad_replaced
        def forward(self, scale):
            self.accumulate(scale)
            self.accumulate(scale)

        @qd.ad.grad_for(forward)
        def backward(self, scale):
            # Counts the two launches as one, so the test sees which ran.
            self.accumulate.grad(scale)

    s = Scaler()
    with qd.ad.Tape(loss=s.total):
        s.forward(3.0)
    assert s.total[None] == 0.0
    np.testing.assert_allclose(s.x.grad.to_numpy(), np.full(8, 3.0))
    s.x.grad.fill(0.0)
    s.total.grad[None] = 1.0
    s.forward.grad(2.0)
    np.testing.assert_allclose(s.x.grad.to_numpy(), np.full(8, 2.0))
