"""Accuracy of CPU math in SIMD lanes (qd.init(cpu_simd=True)) and in scalar
code (cpu_simd=False), per op and dtype over each op's domain, in ulps of
the result against a reference evaluated in x87 extended precision (numpy
longdouble, through libm's long double functions), rounded to the dtype.

In SIMD lanes, f32 sin, cos, tan, exp, log, tanh and pow are whole-vector
functions of the runtime module (simd_math.h: evaluated in f64, with the C
library for lanes outside their reduced range); sqrt is the vector
instruction and rsqrt divides by it; the other ops, and every f64 op, call
the C library per lane. Both paths are held to what
tests/cpp/program/cpu_math_test.cc demands of the CPU's math (within 1 ulp
of the C library), here against the extended-precision reference: at most
1 ulp, but for rsqrt and f64 tanh (BOUNDS). glibc's vector math (libmvec) is not used: its f64 functions are up
to about 3 ulps off.
"""
import numpy as np
import pytest

import quadrants as qd

N = 4099  # past any vector width, with a remainder

# op -> (low, high, spacing): each op's domain, sampled evenly or
# geometrically; the trigonometric ones reach past 1e5, where lanes fall
# back to the C library.
DOMAINS = {
    "sin": (-2e5, 2e5, "linear"),
    "cos": (-2e5, 2e5, "linear"),
    "tan": (-1.5, 1.5, "linear"),
    "exp": (-100.0, 90.0, "linear"),
    "log": (1e-30, 1e30, "geometric"),
    "pow": (0.01, 50.0, "linear"),
    "tanh": (-12.0, 12.0, "linear"),
    "sqrt": (1e-30, 1e30, "geometric"),
    "rsqrt": (1e-30, 1e30, "geometric"),
    "asin": (-1.0, 1.0, "linear"),
    "acos": (-1.0, 1.0, "linear"),
    "atan2": (-50.0, 50.0, "linear"),
}
# Looser bounds, the same on both paths: rsqrt is 1 / sqrt(x), two
# correctly rounded operations (cpu_math_test holds it bit-exact to that),
# and f64 tanh is glibc's, which is up to 2 ulps off.
BOUNDS = {("rsqrt", np.float32): 1.5, ("rsqrt", np.float64): 1.5,
          ("tanh", np.float64): 2.0}
# Small arguments, where relative accuracy is hardest to keep.
SMALL = {"sin", "tan", "tanh", "asin", "exp", "atan2"}


def kernel_fn(op):
    return {"sin": qd.sin, "cos": qd.cos, "tan": qd.tan, "exp": qd.exp,
            "log": qd.log, "tanh": qd.tanh, "sqrt": qd.sqrt, "rsqrt": qd.rsqrt,
            "asin": qd.asin, "acos": qd.acos}[op]


def reference(op, x, y):
    x = x.astype(np.longdouble)
    y = y.astype(np.longdouble)
    if op == "pow":
        return np.power(x, y)
    if op == "atan2":
        return np.arctan2(x, y)
    if op == "rsqrt":
        return 1 / np.sqrt(x)
    name = {"asin": "arcsin", "acos": "arccos"}.get(op, op)
    return getattr(np, name)(x)


def ulps(got, want, dtype):
    want_rounded = want.astype(dtype)
    exact = (got == want_rounded) | (np.isnan(got) & np.isnan(want_rounded))
    spacing = np.spacing(np.abs(want_rounded)).astype(np.longdouble)
    with np.errstate(invalid="ignore"):
        err = (np.abs(got.astype(np.longdouble) - want) / spacing).astype(np.float64)
    return np.where(exact, 0.0, err)


def inputs(op, dtype):
    lo, hi, spacing = DOMAINS[op]
    if spacing == "geometric":
        x = np.geomspace(lo, hi, N)
    else:
        x = np.linspace(lo, hi, N)
    if op in SMALL:
        x[::7] = np.geomspace(1e-20, 1e-1, len(x[::7])) * np.where(
            np.arange(len(x[::7])) % 2 == 0, 1, -1)
    if op == "pow":
        y = np.linspace(-6.0, 6.0, N)[::-1].copy()
    elif op == "atan2":
        y = np.linspace(-3.0, 3.0, N)[::-1].copy()
    else:
        y = np.zeros(N)
    return x.astype(dtype), y.astype(dtype)


def evaluate(op, x, y, simd):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False)
    qdtype = qd.f32 if x.dtype == np.float32 else qd.f64

    if op in ("pow", "atan2"):
        @qd.kernel
        def apply(xs: qd.types.ndarray(qdtype, 1), ys: qd.types.ndarray(qdtype, 1),
                  out: qd.types.ndarray(qdtype, 1)):
            for i in range(xs.shape[0]):
                if qd.static(op == "pow"):
                    out[i] = xs[i] ** ys[i]
                else:
                    out[i] = qd.atan2(xs[i], ys[i])
    else:
        fn = kernel_fn(op)

        @qd.kernel
        def apply(xs: qd.types.ndarray(qdtype, 1), ys: qd.types.ndarray(qdtype, 1),
                  out: qd.types.ndarray(qdtype, 1)):
            for i in range(xs.shape[0]):
                out[i] = fn(xs[i])

    out = np.zeros(len(x), x.dtype)
    apply(x, y, out)
    return out


@pytest.mark.parametrize("simd", [True, False], ids=["vector", "scalar"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", sorted(DOMAINS))
def test_ulps_within_bound(op, dtype, simd):
    x, y = inputs(op, dtype)
    with np.errstate(all="ignore"):
        want = reference(op, x, y)
    err = ulps(evaluate(op, x, y, simd), want, dtype)
    assert np.all(np.isfinite(err)), (op, x[~np.isfinite(err)][:5])
    bound = BOUNDS.get((op, dtype), 1.0)
    assert err.max() <= bound, (op, dtype, simd, float(err.max()), x[np.argmax(err)])


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e30, -1e30, 1e-40, 100.0,
           -100.0, 89.0, -104.0, 2.0, 0.5, 3.0, -2.0, 1e5, 123456.0]


@pytest.mark.parametrize("op", ["sin", "cos", "tan", "exp", "log", "tanh", "pow",
                                "sqrt", "rsqrt"])
def test_special_values_match_scalar(op):
    """Zeros (with their sign), infinities, NaN, denormals, huge arguments,
    and pow's negative, zero and infinite bases and exponents give the same
    results in lanes as in scalar code (to 1 ulp for finite values)."""
    x = np.array(SPECIAL * len(SPECIAL), np.float32)
    y = np.repeat(np.array(SPECIAL, np.float32), len(SPECIAL))
    with np.errstate(all="ignore"):
        lanes = evaluate(op, x, y, True)
        scalar = evaluate(op, x, y, False)
    np.testing.assert_array_equal(np.isnan(lanes), np.isnan(scalar))
    both = ~np.isnan(lanes)
    np.testing.assert_array_equal(np.isinf(lanes[both]), np.isinf(scalar[both]))
    np.testing.assert_array_equal(np.signbit(lanes[both]), np.signbit(scalar[both]))
    finite = both & np.isfinite(scalar)
    spacing = np.spacing(np.abs(scalar[finite]).astype(np.float32))
    assert np.all(np.abs(lanes[finite] - scalar[finite]) <= spacing), op
