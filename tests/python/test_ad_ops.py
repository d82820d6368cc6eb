"""Reverse-mode derivatives of every differentiable op (SPEC 3.1).

Each op gets a kernel `loss[None] += op(x[i])` (or `op(x[i], y[i])`) over a
1-D field with needs_grad. Its gradient, taken both under qd.ad.Tape and by
calling kernel.grad() by hand, is compared with

  (a) central finite differences of the *forward* kernel run in f64 at
      x +- h with h = 1e-6 * max(1, |x|) (one element perturbed at a time):
      the kernel itself for the f64 tests; for the f32 tests, its f64 twin
      (the same op built with dt = f64) at the same f32-rounded inputs;
  (b) PyTorch autograd on CPU, in float64 for the f64 kernels and in float32
      for the f32 kernels, where torch is importable.

(a) needs only numpy and always runs, so where torch is missing (the GPU
machine's Python has no torch) every gradient is still checked against an
independent reference and only (b) is left out. (a) needs f64 kernels; an
f32 test on an arch without f64 and without torch skips, having no reference.

Tolerances (f64):
  * finite differences: the central-difference truncation error is
    h^2 |f'''| / 6 <= 1e-12 * 400 / 6 < 1e-10 for the inputs below (the
    steepest is tan at 1.2, |tan'''| ~ 320), and the round-off of the two
    forward runs is about 2 * eps * sum|terms| / (2h) <= 2.2e-16 * 50 / 1e-6
    ~ 1e-8 (every loss below has sum|terms| < 50). So rel 1e-6 with abs 1e-7
    leaves an order of magnitude of margin while a wrong derivative formula
    (off by a factor, a sign or a term) misses by O(1).
  * torch float64: both sides evaluate the same closed-form derivative in
    f64 with a handful of roundings (a few ulp, ~1e-15 relative), so
    rel 1e-12 (abs 1e-14 for gradients that are exactly zero) is safe.
Tolerances (f32): the kernel and torch float32 evaluate the same formulas on
  the same f32-rounded inputs; each side rounds a few times (<= ~10 ulp,
  ~1e-6 relative) and libm's f32 sin/exp/... may differ by an ulp or two,
  amplified by at most the conditioning of the derivative (<= ~5 for the
  inputs below). rel 1e-4 / abs 1e-6 covers that with margin; a wrong
  formula is off by O(1). Against the f64 twin's finite differences the f32
  gradient carries the same <= ~1e-5 relative error on one side only, and
  the differences add at most ~1e-8 (the f64 bounds above), so the same
  rel 1e-4 / abs 1e-6 holds.
The float-cast ops compute part of their value in f32 even in an f64 kernel,
so their comparisons use f32-level tolerances and a larger finite-difference
step (see _CAST_FD).
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

F64_FD = dict(rel=1e-6, abs=1e-7)
F64_TORCH = dict(rel=1e-12, abs=1e-14)
F32_TORCH = dict(rel=1e-4, abs=1e-6)
F32_FD = dict(rel=1e-4, abs=1e-6)  # f32 gradient vs the f64 twin's differences
# Casts through f32: the forward value is a staircase with steps of one f32
# ulp (~6e-8 relative), so a step h gives an error up to ulp/h; h = 1e-3
# relative keeps that at ~6e-5 and the truncation h^2|f'''|/6 at ~2e-7.
_CAST_FD = dict(h=1e-3, rel=1e-3, abs=1e-4)
_CAST_TORCH = dict(rel=1e-5, abs=1e-6)


def _torch():
    """The torch module, or None where it is not importable: then only the
    torch comparison is left out, the finite differences still run."""
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return torch


def _has_f64():
    arch = runtime.state.options.get("arch", runtime.cpu)
    return qd.is_extension_supported(arch, qd.extension.data64)


def _require_reference():
    """The f32 tests need torch or an f64 twin of the kernel to compare with."""
    if _torch() is None and not _has_f64():
        pytest.skip("neither torch nor f64 kernels here: no reference for f32 gradients")


def _torch_dtype(torch, dt):
    return torch.float64 if dt == qd.f64 else torch.float32


def _other(dt):
    return qd.f32 if dt == qd.f64 else qd.f64


# ---- the ops -------------------------------------------------------------------
# Each factory takes the kernel's float type and returns (qd.func, torch_fn).
# Values stay inside each op's domain and away from kinks and branch cuts.

def _unary_ops():
    ops = {}

    def add(name, x, zero_grad=False, fd=None, torch_tol=None):
        def deco(factory):
            ops[name] = dict(factory=factory, x=np.array(x, dtype=np.float64),
                             zero_grad=zero_grad, fd=fd, torch_tol=torch_tol)
            return factory
        return deco

    mixed = [-1.3, -0.7, -0.2, 0.35, 0.8, 1.45]

    @add("sin", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return qd.sin(v)
        return f, lambda t, x: t.sin(x)

    @add("cos", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return qd.cos(v)
        return f, lambda t, x: t.cos(x)

    @add("tan", [-1.2, -0.7, -0.2, 0.35, 0.8, 1.2])
    def _(dt):
        @qd.func
        def f(v):
            return qd.tan(v)
        return f, lambda t, x: t.tan(x)

    @add("tanh", [-2.1, -0.7, -0.2, 0.35, 0.8, 1.7])
    def _(dt):
        @qd.func
        def f(v):
            return qd.tanh(v)
        return f, lambda t, x: t.tanh(x)

    @add("exp", [-2.0, -0.7, -0.2, 0.35, 0.8, 2.5])
    def _(dt):
        @qd.func
        def f(v):
            return qd.exp(v)
        return f, lambda t, x: t.exp(x)

    @add("log", [0.05, 0.3, 0.9, 1.7, 4.2, 11.0])
    def _(dt):
        @qd.func
        def f(v):
            return qd.log(v)
        return f, lambda t, x: t.log(x)

    @add("sqrt", [0.05, 0.3, 0.9, 1.7, 4.2, 11.0])
    def _(dt):
        @qd.func
        def f(v):
            return qd.sqrt(v)
        return f, lambda t, x: t.sqrt(x)

    @add("rsqrt", [0.05, 0.3, 0.9, 1.7, 4.2, 11.0])
    def _(dt):
        @qd.func
        def f(v):
            return qd.rsqrt(v)
        return f, lambda t, x: t.rsqrt(x)

    @add("asin", [-0.85, -0.5, -0.1, 0.2, 0.6, 0.88])
    def _(dt):
        @qd.func
        def f(v):
            return qd.asin(v)
        return f, lambda t, x: t.asin(x)

    @add("acos", [-0.85, -0.5, -0.1, 0.2, 0.6, 0.88])
    def _(dt):
        @qd.func
        def f(v):
            return qd.acos(v)
        return f, lambda t, x: t.acos(x)

    @add("abs", [-2.5, -0.7, -0.2, 0.35, 0.8, 1.45])
    def _(dt):
        @qd.func
        def f(v):
            return qd.abs(v) * v
        return f, lambda t, x: t.abs(x) * x

    @add("abs_builtin", [-2.5, -0.7, -0.2, 0.35, 0.8, 1.45])
    def _(dt):
        @qd.func
        def f(v):
            return abs(v)
        return f, lambda t, x: t.abs(x)

    @add("neg", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return -v
        return f, lambda t, x: -x

    @add("neg_of_product", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return -(v * v)
        return f, lambda t, x: -(x * x)

    @add("pow_const_exponent_neg_base", [-1.6, -0.7, -0.2, 0.35, 0.8, 1.45])
    def _(dt):
        @qd.func
        def f(v):
            return v ** 3
        return f, lambda t, x: x ** 3

    @add("pow_const_base", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return 2.5 ** v
        return f, lambda t, x: 2.5 ** x

    @add("mul_const", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return v * 3.0
        return f, lambda t, x: x * 3.0

    @add("div_const_denominator", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return v / 4.0
        return f, lambda t, x: x / 4.0

    @add("div_const_numerator", [-1.3, -0.7, -0.2, 0.35, 0.8, 1.45])
    def _(dt):
        @qd.func
        def f(v):
            return 3.0 / v
        return f, lambda t, x: 3.0 / x

    @add("sub_from_const", mixed)
    def _(dt):
        @qd.func
        def f(v):
            return 2.0 - v
        return f, lambda t, x: 2.0 - x

    # floor / ceil / int casts: derivative zero almost everywhere (values of
    # 3v stay away from integers so the finite differences see no jump).
    away_from_int = [-1.3, -0.7, -0.45, 0.41, 0.8, 1.45]

    @add("floor", away_from_int, zero_grad=True)
    def _(dt):
        @qd.func
        def f(v):
            return qd.floor(v * 3.0)
        return f, lambda t, x: t.floor(x * 3.0)

    @add("ceil", away_from_int, zero_grad=True)
    def _(dt):
        @qd.func
        def f(v):
            return qd.ceil(v * 3.0)
        return f, lambda t, x: t.ceil(x * 3.0)

    @add("floor_times_x", away_from_int)
    def _(dt):
        @qd.func
        def f(v):
            return qd.floor(v * 3.0) * v
        return f, lambda t, x: t.floor(x * 3.0) * x

    @add("ceil_times_x", away_from_int)
    def _(dt):
        @qd.func
        def f(v):
            return qd.ceil(v * 3.0) * v
        return f, lambda t, x: t.ceil(x * 3.0) * x

    @add("int_cast", away_from_int, zero_grad=True)
    def _(dt):
        @qd.func
        def f(v):
            return qd.cast(qd.cast(v * 3.0, qd.i32), dt)
        return f, lambda t, x: t.trunc(x * 3.0)

    @add("int_cast_builtin", away_from_int, zero_grad=True)
    def _(dt):
        @qd.func
        def f(v):
            return qd.cast(int(v * 3.0), dt)
        return f, lambda t, x: t.trunc(x * 3.0)

    @add("int_cast_times_x", away_from_int)
    def _(dt):
        @qd.func
        def f(v):
            return qd.cast(qd.cast(v * 3.0, qd.i32), dt) * v + v * v
        return f, lambda t, x: t.trunc(x * 3.0) * x + x * x

    @add("float_cast_round_trip", mixed, fd=_CAST_FD, torch_tol=_CAST_TORCH)
    def _(dt):
        other = _other(dt)

        @qd.func
        def f(v):
            w = qd.cast(v, other)
            return qd.cast(qd.sin(w) * w, dt)

        def reference(t, x):
            o = t.float32 if dt == qd.f64 else t.float64
            w = x.to(o)
            return (t.sin(w) * w).to(x.dtype)
        return f, reference

    return ops


def _binary_ops():
    ops = {}

    def add(name, x, y):
        def deco(factory):
            ops[name] = dict(factory=factory, x=np.array(x, dtype=np.float64),
                             y=np.array(y, dtype=np.float64))
            return factory
        return deco

    xs = [-1.3, -0.7, -0.2, 0.35, 0.8, 1.45]
    ys = [0.6, -1.1, 0.9, -0.45, 1.7, 0.5]

    @add("add", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a + b
        return f, lambda t, a, b: a + b

    @add("sub", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a - b
        return f, lambda t, a, b: a - b

    @add("mul", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a * b
        return f, lambda t, a, b: a * b

    @add("div", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a / b
        return f, lambda t, a, b: a / b

    @add("square_via_mul", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a * a * b
        return f, lambda t, a, b: a * a * b

    # atan2(y, x) in all four quadrants, away from the branch cut (x < 0, y = 0).
    @add("atan2", [0.7, 0.6, -0.8, -0.5, 1.2, -0.3], [0.9, -1.3, 0.4, -0.7, 0.2, 1.1])
    def _(dt):
        @qd.func
        def f(a, b):
            return qd.atan2(a, b)
        return f, lambda t, a, b: t.atan2(a, b)

    @add("pow", [0.3, 0.7, 1.1, 1.6, 2.2, 0.9], [-1.5, 0.5, 2.5, 1.3, -0.7, 3.0])
    def _(dt):
        @qd.func
        def f(a, b):
            return qd.pow(a, b)
        return f, lambda t, a, b: t.pow(a, b)

    @add("pow_operator", [0.3, 0.7, 1.1, 1.6, 2.2, 0.9], [-1.5, 0.5, 2.5, 1.3, -0.7, 3.0])
    def _(dt):
        @qd.func
        def f(a, b):
            return a ** b
        return f, lambda t, a, b: a ** b

    # min/max: each side wins somewhere, never a tie.
    @add("min", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return qd.min(a, b) * a
        return f, lambda t, a, b: t.minimum(a, b) * a

    @add("max", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return qd.max(a, b) * a
        return f, lambda t, a, b: t.maximum(a, b) * a

    @add("min_builtin", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return min(a, b)
        return f, lambda t, a, b: t.minimum(a, b)

    @add("max_builtin", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return max(a, b)
        return f, lambda t, a, b: t.maximum(a, b)

    # `a if c else b` on run-time values: different expressions per branch,
    # both branches taken across the elements.
    @add("select", xs, ys)
    def _(dt):
        @qd.func
        def f(a, b):
            return a * 2.0 * b if a > b else b * b - a
        return f, lambda t, a, b: t.where(a > b, a * 2.0 * b, b * b - a)

    return ops


UNARY = _unary_ops()
BINARY = _binary_ops()


# ---- harness -------------------------------------------------------------------

def _make_unary(dt, name, n):
    f, ref = UNARY[name]["factory"](dt)
    x = qd.field(dt, shape=n, needs_grad=True)
    loss = qd.field(dt, shape=(), needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            loss[None] += f(x[i])

    return forward, x, loss, ref


def _make_binary(dt, name, n):
    f, ref = BINARY[name]["factory"](dt)
    # Laid out by hand: x, y share one dense level, adjoints by lazy_grad().
    x = qd.field(dt, needs_grad=True)
    y = qd.field(dt, needs_grad=True)
    loss = qd.field(dt, needs_grad=True)
    qd.root.dense(qd.i, n).place(x, y)
    qd.root.place(loss)
    qd.root.lazy_grad()

    @qd.kernel
    def forward():
        for i in x:
            loss[None] += f(x[i], y[i])

    return forward, x, y, loss, ref


def _grads_both_ways(forward, loss, inputs):
    """Gradients under qd.ad.Tape, checked equal to calling .grad() by hand."""
    loss[None] = 0
    with qd.ad.Tape(loss=loss):
        forward()
    tape = [v.grad.to_numpy() for v in inputs]
    # By hand: zero the adjoints, seed the loss, run the gradient kernel.
    for v in inputs:
        v.grad.fill(0)
    loss.grad[None] = 1
    forward.grad()
    by_hand = [v.grad.to_numpy() for v in inputs]
    for a, b in zip(tape, by_hand):
        np.testing.assert_array_equal(a, b)
    return tape


def _finite_differences(forward, loss, inputs, values, which, h_rel):
    """d loss / d inputs[which][k] for every k, by central differences of the
    forward kernel (f64)."""
    base = [np.array(v, dtype=np.float64) for v in values]
    out = np.zeros_like(base[which])

    def run(arrays):
        for field, arr in zip(inputs, arrays):
            field.from_numpy(arr)
        loss[None] = 0
        forward()
        return loss[None]

    for k in range(len(out)):
        h = h_rel * max(1.0, abs(base[which][k]))
        plus = [b.copy() for b in base]
        minus = [b.copy() for b in base]
        plus[which][k] += h
        minus[which][k] -= h
        out[k] = (run(plus) - run(minus)) / ((plus[which][k] - minus[which][k]))
    run(base)  # restore
    return out


def _torch_grads(ref, arrays, dt, binary):
    """Torch autograd gradients, or None where torch is not importable."""
    torch = _torch()
    if torch is None:
        return None
    ts = [torch.tensor(a, dtype=_torch_dtype(torch, dt), requires_grad=True) for a in arrays]
    out = ref(torch, *ts) if binary else ref(torch, ts[0])
    out.sum().backward()
    return [t.grad.numpy().astype(np.float64) if t.grad is not None
            else np.zeros(a.shape) for t, a in zip(ts, arrays)]


# ---- unary ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(UNARY))
@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_unary_op_gradient_f64(name):
    spec = UNARY[name]
    values = spec["x"]
    forward, x, loss, ref = _make_unary(qd.f64, name, len(values))
    x.from_numpy(values)
    (grad,) = _grads_both_ways(forward, loss, [x])

    fd_opts = spec["fd"] or dict(h=1e-6, **F64_FD)
    fd = _finite_differences(forward, loss, [x], [values], 0, fd_opts["h"])
    assert grad == pytest.approx(fd, rel=fd_opts["rel"], abs=fd_opts["abs"])

    expected = _torch_grads(ref, [values], qd.f64, binary=False)
    if expected is not None:
        tol = spec["torch_tol"] or F64_TORCH
        assert grad == test_utils.approx(expected[0], bits=64, **tol)

    if spec["zero_grad"]:
        assert np.all(grad == 0), grad
    else:
        assert np.all(grad != 0), grad  # the op is really exercised


@pytest.mark.parametrize("name", sorted(UNARY))
@test_utils.test(default_fp=qd.f32)
def test_unary_op_gradient_f32(name):
    _require_reference()
    spec = UNARY[name]
    values = spec["x"].astype(np.float32)
    forward, x, loss, ref = _make_unary(qd.f32, name, len(values))
    if _has_f64():
        twin, x64, loss64, _ = _make_unary(qd.f64, name, len(values))
    x.from_numpy(values)
    (grad,) = _grads_both_ways(forward, loss, [x])
    assert grad.dtype == np.float32

    if _has_f64():
        fd_opts = spec["fd"] or dict(h=1e-6, **F32_FD)
        fd = _finite_differences(twin, loss64, [x64], [values.astype(np.float64)], 0,
                                 fd_opts["h"])
        assert grad.astype(np.float64) == pytest.approx(
            fd, rel=max(fd_opts["rel"], F32_FD["rel"]), abs=max(fd_opts["abs"], F32_FD["abs"]))

    expected = _torch_grads(ref, [values], qd.f32, binary=False)
    if expected is not None:
        tol = F32_TORCH if spec["torch_tol"] is None else {
            k: max(v, F32_TORCH[k]) for k, v in spec["torch_tol"].items()}
        assert grad.astype(np.float64) == test_utils.approx(expected[0], bits=32, **tol)
    if spec["zero_grad"]:
        assert np.all(grad == 0), grad
    else:
        assert np.all(grad != 0), grad


# ---- binary --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(BINARY))
@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_binary_op_gradient_f64(name):
    spec = BINARY[name]
    xv, yv = spec["x"], spec["y"]
    forward, x, y, loss, ref = _make_binary(qd.f64, name, len(xv))
    x.from_numpy(xv)
    y.from_numpy(yv)
    gx, gy = _grads_both_ways(forward, loss, [x, y])

    for which, grad in ((0, gx), (1, gy)):
        fd = _finite_differences(forward, loss, [x, y], [xv, yv], which, 1e-6)
        assert grad == pytest.approx(fd, **F64_FD), ("xy"[which], grad, fd)

    expected = _torch_grads(ref, [xv, yv], qd.f64, binary=True)
    if expected is not None:
        ex, ey = expected
        assert gx == test_utils.approx(ex, bits=64, **F64_TORCH)
        assert gy == test_utils.approx(ey, bits=64, **F64_TORCH)


@pytest.mark.parametrize("name", sorted(BINARY))
@test_utils.test(default_fp=qd.f32)
def test_binary_op_gradient_f32(name):
    _require_reference()
    spec = BINARY[name]
    xv, yv = spec["x"].astype(np.float32), spec["y"].astype(np.float32)
    forward, x, y, loss, ref = _make_binary(qd.f32, name, len(xv))
    if _has_f64():
        twin, x64, y64, loss64, _ = _make_binary(qd.f64, name, len(xv))
    x.from_numpy(xv)
    y.from_numpy(yv)
    gx, gy = _grads_both_ways(forward, loss, [x, y])
    assert gx.dtype == np.float32 and gy.dtype == np.float32

    if _has_f64():
        at = [xv.astype(np.float64), yv.astype(np.float64)]
        for which, grad in ((0, gx), (1, gy)):
            fd = _finite_differences(twin, loss64, [x64, y64], at, which, 1e-6)
            assert grad.astype(np.float64) == pytest.approx(fd, **F32_FD), \
                ("xy"[which], grad, fd)

    expected = _torch_grads(ref, [xv, yv], qd.f32, binary=True)
    if expected is not None:
        ex, ey = expected
        assert gx.astype(np.float64) == test_utils.approx(ex, bits=32, **F32_TORCH)
        assert gy.astype(np.float64) == test_utils.approx(ey, bits=32, **F32_TORCH)


# ---- specific checks -----------------------------------------------------------

@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_pow_exponent_gradient_is_zero_for_nonpositive_base():
    # d/dy x^y = x^y log x is only defined for x > 0; at x <= 0 with an
    # integral exponent the exponent gets no gradient (never NaN), while the
    # base still gets y * x^(y-1).
    x = qd.field(qd.f64, shape=3, needs_grad=True)
    y = qd.field(qd.f64, shape=3, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            loss[None] += qd.pow(x[i], y[i])

    x.from_numpy(np.array([-2.0, -0.5, 0.0]))
    y.from_numpy(np.array([3.0, 2.0, 2.0]))
    with qd.ad.Tape(loss=loss):
        forward()
    assert loss[None] == pytest.approx(-8.0 + 0.25 + 0.0, rel=1e-15)
    np.testing.assert_allclose(x.grad.to_numpy(), [12.0, -1.0, 0.0], rtol=1e-14)
    np.testing.assert_array_equal(y.grad.to_numpy(), [0.0, 0.0, 0.0])


@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_int_cast_in_f64_kernel_compiles_grad_without_error_and_stops_gradient():
    # The integer value is also used as an index and compared: none of that
    # may make .grad() fail, and only the float path carries gradient.
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    w = qd.field(qd.f64, shape=8, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            k = qd.cast(x[i] * 2.0, qd.i32)
            if k > 1:
                loss[None] += w[k] * x[i]
            else:
                loss[None] += qd.cast(k, qd.f64) + x[i]

    x.from_numpy(np.array([0.3, 1.2, 2.6, 3.1]))
    w.from_numpy(np.arange(8, dtype=np.float64) * 0.5 + 1.0)
    with qd.ad.Tape(loss=loss):
        forward()
    # k = [0, 2, 5, 6]
    np.testing.assert_allclose(x.grad.to_numpy(), [1.0, 2.0, 3.5, 4.0], rtol=1e-15)
    expected_w = np.zeros(8)
    expected_w[[2, 5, 6]] = [1.2, 2.6, 3.1]
    np.testing.assert_allclose(w.grad.to_numpy(), expected_w, rtol=1e-15)


@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_select_with_condition_from_another_field():
    # The condition depends on c (no gradient needed for a bool), the
    # branches on x: only the taken branch's expression contributes.
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    c = qd.field(qd.i32, shape=4)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            v = x[i]
            loss[None] += qd.sin(v) if c[i] > 0 else v * v * v

    xv = np.array([0.3, 0.5, -0.7, 1.1])
    x.from_numpy(xv)
    c.from_numpy(np.array([1, 0, 0, 1], dtype=np.int32))
    with qd.ad.Tape(loss=loss):
        forward()
    expected = np.where([True, False, False, True], np.cos(xv), 3 * xv * xv)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-14)
