"""Forward-mode autodiff: qd.ad.FwdMode and .dual (SPEC §2, Autodiff).

For every differentiable op, the tangent of `loss = sum_i op(x_i[, y_i])`
along each unit seed e_j must equal
  (a) reverse mode's d loss / d x_j (kernel.grad), and
  (b) in f64, the central difference of the forward kernel.

Tolerances:
  * forward vs reverse: both evaluate the same closed-form derivative with a
    handful of roundings; in f64 that is a few ulp (rel 1e-12, abs 1e-13);
    in f32, the accumulation order of the loss differs (atomic adds in
    reverse vs one tangent sum), giving ~n * eps32 ~ 1e-6 relative, so
    rel 2e-5 / abs 1e-5.
  * finite differences (f64, h = 1e-6 * max(1, |x|)): truncation
    h^2 |f'''| / 6 < 1e-10 and round-off ~ eps * sum|terms| / h < 1e-8 for
    these inputs, so rel 1e-6 / abs 1e-7; a wrong formula is off by O(1).
Ops with a zero derivative (floor, ceil, floordiv) must give exactly zero.
"""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

N = 5
FWD_REV = {qd.f64: dict(rel=1e-12, abs=1e-13), qd.f32: dict(rel=2e-5, abs=1e-5)}
FD = dict(rel=1e-6, abs=1e-7)


@qd.func
def _neg(v):
    return -v


@qd.func
def _abs(v):
    return qd.abs(v)


@qd.func
def _sqrt(v):
    return qd.sqrt(v)


@qd.func
def _rsqrt(v):
    return qd.rsqrt(v)


@qd.func
def _sin(v):
    return qd.sin(v)


@qd.func
def _cos(v):
    return qd.cos(v)


@qd.func
def _tan(v):
    return qd.tan(v)


@qd.func
def _tanh(v):
    return qd.tanh(v)


@qd.func
def _exp(v):
    return qd.exp(v)


@qd.func
def _log(v):
    return qd.log(v)


@qd.func
def _asin(v):
    return qd.asin(v)


@qd.func
def _acos(v):
    return qd.acos(v)


@qd.func
def _square(v):
    return v * v


@qd.func
def _pow_const(v):
    return v ** 3.0


@qd.func
def _floor(v):
    return qd.floor(v)


@qd.func
def _ceil(v):
    return qd.ceil(v)


@qd.func
def _ternary(v):
    return v * v if v > 0.5 else qd.sin(v)


@qd.func
def _add(a, b):
    return a + b


@qd.func
def _sub(a, b):
    return a - b


@qd.func
def _mul(a, b):
    return a * b


@qd.func
def _div(a, b):
    return a / b


@qd.func
def _pow(a, b):
    return a ** b


@qd.func
def _atan2(a, b):
    return qd.atan2(a, b)


@qd.func
def _min(a, b):
    return qd.min(a, b)


@qd.func
def _max(a, b):
    return qd.max(a, b)


@qd.func
def _mod(a, b):
    return a % b


@qd.func
def _floordiv(a, b):
    return a // b


UNARY = {
    "neg": (_neg, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "abs": (_abs, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "sqrt": (_sqrt, [0.05, 0.3, 0.9, 1.7, 4.2]),
    "rsqrt": (_rsqrt, [0.05, 0.3, 0.9, 1.7, 4.2]),
    "sin": (_sin, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "cos": (_cos, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "tan": (_tan, [-1.2, -0.2, 0.35, 0.8, 1.2]),
    "tanh": (_tanh, [-2.1, -0.2, 0.35, 0.8, 1.7]),
    "exp": (_exp, [-2.0, -0.2, 0.35, 0.8, 2.5]),
    "log": (_log, [0.05, 0.3, 0.9, 1.7, 4.2]),
    "asin": (_asin, [-0.85, -0.1, 0.2, 0.6, 0.88]),
    "acos": (_acos, [-0.85, -0.1, 0.2, 0.6, 0.88]),
    "square": (_square, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "pow_const": (_pow_const, [0.2, 0.5, 0.9, 1.3, 1.8]),
    "floor": (_floor, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "ceil": (_ceil, [-1.3, -0.2, 0.35, 0.8, 1.45]),
    "ternary": (_ternary, [-1.3, -0.2, 0.35, 0.8, 1.45]),
}
BINARY = {
    "add": (_add, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "sub": (_sub, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "mul": (_mul, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "div": (_div, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "pow": (_pow, [0.3, 0.8, 1.2, 0.4, 1.5]),
    "atan2": (_atan2, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "min": (_min, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "max": (_max, [0.3, -0.8, 1.2, 0.4, -1.5]),
    "mod": (_mod, [0.3, 0.8, 1.2, 0.4, 1.5]),
    "floordiv": (_floordiv, [0.3, 0.8, 1.2, 0.4, 1.5]),
}
ZERO_DERIVATIVE = {"floor", "ceil", "floordiv"}
# x-values for the binary ops (y comes from the table); positive where the
# op needs it (pow, mod).
BINARY_X = [0.7, 1.9, 0.45, 2.3, 1.1]


def _fields(dt, binary):
    x = qd.field(dt, shape=N, needs_grad=True, needs_dual=True)
    y = qd.field(dt, shape=N, needs_grad=True, needs_dual=True) if binary else None
    loss = qd.field(dt, shape=(), needs_grad=True, needs_dual=True)
    return x, y, loss


def _forward_tangents(kernel, loss, param, values, dt):
    """d loss / d param_j for each j, one FwdMode run per unit seed."""
    out = np.zeros(N)
    for j in range(N):
        seed = [0.0] * N
        seed[j] = 1.0
        param.from_numpy(values.astype(param.to_numpy().dtype))
        loss[None] = 0
        with qd.ad.FwdMode(loss=loss, param=param, seed=seed):
            kernel()
        out[j] = loss.dual[None]
    return out


def _reverse_grad(kernel, loss, param, values):
    param.from_numpy(values.astype(param.to_numpy().dtype))
    with qd.ad.Tape(loss=loss):
        kernel()
    return param.grad.to_numpy().astype(np.float64)


def _central_differences(kernel, loss, param, values):
    out = np.zeros(N)
    for j in range(N):
        h = 1e-6 * max(1.0, abs(values[j]))
        results = []
        for sign in (1, -1):
            v = values.copy()
            v[j] += sign * h
            param.from_numpy(v)
            loss[None] = 0
            kernel()
            results.append(loss[None])
        out[j] = (results[0] - results[1]) / (2 * h)
    return out


def _check(name, kernel, loss, param, values, dt):
    fwd = _forward_tangents(kernel, loss, param, values, dt)
    rev = _reverse_grad(kernel, loss, param, values)
    if name in ZERO_DERIVATIVE:
        assert np.all(fwd == 0) and np.all(rev == 0)
        return
    assert np.any(fwd != 0)
    assert fwd == pytest.approx(rev, **FWD_REV[dt])
    if dt == qd.f64:
        assert fwd == pytest.approx(_central_differences(kernel, loss, param, values), **FD)


@pytest.mark.parametrize("dt", [qd.f32, qd.f64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(UNARY))
@test_utils.test()
def test_unary_op_tangent_matches_reverse_and_finite_differences(name, dt):
    op, xs = UNARY[name]
    x, _, loss = _fields(dt, binary=False)

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += op(x[i])

    _check(name, compute, loss, x, np.array(xs), dt)


@pytest.mark.parametrize("wrt", ["lhs", "rhs"])
@pytest.mark.parametrize("dt", [qd.f32, qd.f64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(BINARY))
@test_utils.test()
def test_binary_op_tangent_matches_reverse_and_finite_differences(name, dt, wrt):
    op, ys = BINARY[name]
    x, y, loss = _fields(dt, binary=True)

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += op(x[i], y[i])

    xv, yv = np.array(BINARY_X), np.array(ys)
    if wrt == "lhs":
        y.from_numpy(yv.astype(y.to_numpy().dtype))
        _check(name, compute, loss, x, xv, dt)
    else:
        x.from_numpy(xv.astype(x.to_numpy().dtype))
        _check(name, compute, loss, y, yv, dt)


@pytest.mark.parametrize("dt", [qd.f32, qd.f64], ids=["f32", "f64"])
@test_utils.test(ad_stack_experimental_enabled=True)
def test_dynamic_loop_tangent_matches_reverse_and_finite_differences(dt):
    x, _, loss = _fields(dt, binary=False)
    steps = qd.field(qd.i32, shape=N)
    steps.from_numpy(np.array([3, 7, 1, 12, 5], dtype=np.int32))

    @qd.kernel
    def compute():
        for i in x:
            v = x[i]
            for _ in range(steps[i]):      # trip count read at run time
                v = qd.sin(v) * 1.1 + 0.05 * v * v
            loss[None] += v

    _check("dynamic_loop", compute, loss, x, np.array([0.1, -0.4, 0.7, 0.25, -0.9]), dt)


@test_utils.test(default_fp=qd.f64)
def test_tangents_flow_through_intermediate_fields_and_kernels():
    x = qd.field(qd.f64, shape=(), needs_dual=True)
    y = qd.field(qd.f64, shape=3, needs_dual=True)
    loss = qd.field(qd.f64, shape=(), needs_dual=True)

    @qd.kernel
    def spread():
        for i in y:
            y[i] = x[None] * (i + 1)

    @qd.kernel
    def reduce():
        for i in y:
            loss[None] += y[i] * y[i]

    x[None] = 0.5
    with qd.ad.FwdMode(loss=loss, param=x):
        spread()
        reduce()
    # loss = x^2 (1 + 4 + 9), d loss / dx = 28 x
    assert loss[None] == pytest.approx(14 * 0.25, rel=1e-14)
    assert loss.dual[None] == pytest.approx(28 * 0.5, rel=1e-14)
    assert x.dual[None] == 0  # the seed is cleared on exit
    assert list(y.dual.to_numpy()) == [1.0, 2.0, 3.0]  # d y_i / dx = i + 1


@test_utils.test(default_fp=qd.f64)
def test_placed_duals_and_lazy_dual():
    x = qd.field(qd.f64)
    loss = qd.field(qd.f64)
    qd.root.dense(qd.i, 4).place(x, x.dual)
    qd.root.place(loss)
    qd.root.lazy_dual()

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += qd.exp(x[i])

    x.from_numpy(np.array([0.0, 0.5, 1.0, 1.5]))
    with qd.ad.FwdMode(loss=loss, param=x, seed=[1.0, 1.0, 0.0, 0.0]):
        compute()
    assert loss.dual[None] == pytest.approx(1 + np.exp(0.5), rel=1e-14)


@test_utils.test()
def test_fwd_mode_errors():
    x = qd.field(qd.f32, shape=3, needs_dual=True)
    no_dual = qd.field(qd.f32, shape=())
    loss = qd.field(qd.f32, shape=(), needs_dual=True)
    with pytest.raises(qd.QuadrantsError, match="no dual"):
        with qd.ad.FwdMode(loss=no_dual, param=x, seed=[1, 0, 0]):
            pass
    with pytest.raises(qd.QuadrantsTypeError, match="3 elements"):
        with qd.ad.FwdMode(loss=loss, param=x):
            pass
    with pytest.raises(qd.QuadrantsTypeError, match="seed must hold 3"):
        with qd.ad.FwdMode(loss=loss, param=x, seed=[1.0, 2.0]):
            pass
    with pytest.raises(qd.QuadrantsTypeError, match="needs a qd.field"):
        with qd.ad.FwdMode(loss=loss, param=np.zeros(3), seed=[1, 0, 0]):
            pass
    with qd.ad.FwdMode(loss=loss, param=x, seed=[1, 0, 0]):
        with pytest.raises(qd.QuadrantsRuntimeError, match="cannot be nested"):
            with qd.ad.FwdMode(loss=loss, param=x, seed=[1, 0, 0]):
                pass
        with pytest.raises(qd.QuadrantsRuntimeError, match="inside qd.ad.FwdMode"):
            with qd.ad.Tape(loss=loss):
                pass


@test_utils.test()
def test_atomic_max_into_a_dual_field_is_rejected():
    x = qd.field(qd.f32, shape=3, needs_dual=True)
    peak = qd.field(qd.f32, shape=(), needs_dual=True)

    @qd.kernel
    def compute():
        for i in x:
            qd.atomic_max(peak[None], x[i])

    with pytest.raises(qd.QuadrantsCompilationError, match="atomic_max"):
        with qd.ad.FwdMode(loss=peak, param=x, seed=[1, 0, 0]):
            compute()
