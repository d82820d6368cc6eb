"""Accuracy of CPU math in vectorized loops (qd.init(cpu_simd=True)) and in
scalar code (cpu_simd=False), per op and dtype over each op's domain, in ulps
of the result against a reference evaluated in x87 extended precision (numpy
longdouble, through libm's long double functions), rounded to the dtype.

A vectorized loop still calls the C library's function for each lane, so
both paths are held to what tests/cpp/program/cpu_math_test.cc demands of
the CPU's math (within 1 ulp of the C library), here against the
extended-precision reference: at most 1 ulp. glibc's vector math (libmvec)
is not used: its f64 functions are up to about 3 ulps off.
"""
import numpy as np
import pytest

import quadrants as qd

N = 4099  # past any vector width, with a remainder

DOMAINS = {
    "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0),
    "tan": (-1.5, 1.5),
    "exp": (-80.0, 80.0),
    "log": (1e-30, 1e30),
    "pow": (0.01, 50.0),
}


def reference(op, x):
    exponent = np.longdouble(x.dtype.type(1.7))  # as the kernel has it
    x = x.astype(np.longdouble)
    if op == "pow":
        return np.power(x, exponent)
    return getattr(np, op)(x)


def ulps(got, want, dtype):
    spacing = np.spacing(np.abs(want.astype(dtype))).astype(np.longdouble)
    return (np.abs(got.astype(np.longdouble) - want) / spacing).astype(np.float64)


def evaluate(op, dtype, simd):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False)
    qdtype = qd.f32 if dtype == np.float32 else qd.f64
    fn = {"sin": qd.sin, "cos": qd.cos, "tan": qd.tan, "exp": qd.exp, "log": qd.log,
          "pow": lambda v: v ** 1.7}[op]

    @qd.kernel
    def apply(xs: qd.types.ndarray(qdtype, 1), ys: qd.types.ndarray(qdtype, 1)):
        for i in range(xs.shape[0]):
            ys[i] = fn(xs[i])

    lo, hi = DOMAINS[op]
    if op == "log":
        x = np.geomspace(lo, hi, N).astype(dtype)
    else:
        x = np.linspace(lo, hi, N).astype(dtype)
    y = np.zeros(N, dtype)
    apply(x, y)
    return ulps(y, reference(op, x), dtype)


@pytest.mark.parametrize("simd", [True, False], ids=["vector", "scalar"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", sorted(DOMAINS))
def test_ulps_within_one(op, dtype, simd):
    err = evaluate(op, dtype, simd)
    assert np.all(np.isfinite(err)), op
    assert err.max() <= 1.0, (op, dtype, simd, float(err.max()))
