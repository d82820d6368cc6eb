"""Math functions, casts and type promotion in kernels.

Math results are compared with numpy evaluated in float64 on the same
(already rounded) inputs, so the reference is exact to well below the
tolerances used here. Type promotion is observed through values that
differ between candidate result types (e.g. 2**24 + 1 is not an f32).
"""
import math

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

# Tolerances. Quadrants' f32 transcendental functions agree with the exact
# value to ~1 ulp (6e-8 relative) on CPU; rel=1e-6 leaves room for the GPU
# libraries (a few ulp) while still catching a wrong function, a wrong
# argument, or a silent f32 evaluation of f64 math (error ~1e-8 >> 1e-12).
# The absolute term covers results near zero (sin near k*pi, log near 1),
# where relative error is meaningless: it is ~1 ulp of the inputs' magnitude.
_TOL = {np.float32: dict(rel=1e-6, abs=1e-7, bits=32),
        np.float64: dict(rel=1e-12, abs=1e-15, bits=64)}

FLOATS = [np.float32, np.float64]
FLOAT_IDS = ["f32", "f64"]


@qd.kernel
def _apply_unary(fn: qd.template(), x: qd.types.ndarray(), out: qd.types.ndarray()):
    for i in range(x.shape[0]):
        out[i] = fn(x[i])


@qd.kernel
def _apply_binary(fn: qd.template(), x: qd.types.ndarray(), y: qd.types.ndarray(),
                  out: qd.types.ndarray()):
    for i in range(x.shape[0]):
        out[i] = fn(x[i], y[i])


def _check_unary(qd_fn, np_fn, domain, dtype, exact=False):
    x = np.asarray(domain, dtype=dtype)
    out = np.zeros_like(x)
    _apply_unary(qd_fn, x, out)
    expected = np_fn(x.astype(np.float64))
    if exact:
        np.testing.assert_array_equal(out, expected.astype(dtype))
    else:
        assert out.tolist() == test_utils.approx(expected.tolist(), **_TOL[dtype])


def _check_binary(qd_fn, np_fn, xs, ys, dtype, exact=False):
    x = np.asarray(xs, dtype=dtype)
    y = np.asarray(ys, dtype=dtype)
    out = np.zeros_like(x)
    _apply_binary(qd_fn, x, y, out)
    expected = np_fn(x.astype(np.float64), y.astype(np.float64))
    if exact:
        np.testing.assert_array_equal(out, expected.astype(dtype))
    else:
        assert out.tolist() == test_utils.approx(expected.tolist(), **_TOL[dtype])


# ---- math functions -----------------------------------------------------------------

_UNARY_CASES = [
    # name, numpy reference, domain
    ("sin", np.sin, np.linspace(-10, 10, 1001)),
    ("cos", np.cos, np.linspace(-10, 10, 1001)),
    ("tan", np.tan, np.linspace(-1.4, 1.4, 1001)),
    ("tanh", np.tanh, np.linspace(-8, 8, 1001)),
    ("exp", np.exp, np.linspace(-20, 20, 1001)),
    ("log", np.log, np.logspace(-3, 3, 1001)),
    ("sqrt", np.sqrt, np.linspace(0, 1e4, 1001)),
    ("rsqrt", lambda v: 1.0 / np.sqrt(v), np.logspace(-3, 4, 1001)),
    ("asin", np.arcsin, np.linspace(-1, 1, 1001)),
    ("acos", np.arccos, np.linspace(-1, 1, 1001)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("name,np_fn,domain", _UNARY_CASES, ids=[c[0] for c in _UNARY_CASES])
@test_utils.test()
def test_unary_math_matches_numpy(name, np_fn, domain, dtype):
    _check_unary(getattr(qd, name), np_fn, domain, dtype)


_EXACT_UNARY_CASES = [
    # IEEE-exact operations: the result must equal numpy's bit for bit.
    ("abs", np.abs, np.linspace(-5, 5, 41)),
    ("floor", np.floor, np.concatenate([np.linspace(-5.5, 5.5, 45), [-0.2, 0.2, -1e-3]])),
    ("ceil", np.ceil, np.concatenate([np.linspace(-5.5, 5.5, 45), [-0.2, 0.2, 1e-3]])),
    ("sqrt", np.sqrt, np.array([0.0, 1.0, 2.0, 4.0, 1e-6, 12345.678, 1e10])),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("name,np_fn,domain", _EXACT_UNARY_CASES,
                         ids=[c[0] for c in _EXACT_UNARY_CASES])
@test_utils.test()
def test_exact_unary_math_matches_numpy(name, np_fn, domain, dtype):
    if name == "sqrt" and qd.lang.impl.current_cfg().arch == qd.vulkan:
        _check_vulkan_sqrt(domain, dtype)
        return
    _check_unary(getattr(qd, name), np_fn, domain, dtype, exact=True)


def _check_vulkan_sqrt(domain, dtype):
    """Vulkan gives sqrt the precision of 1 / inversesqrt (a few ULP), not
    IEEE's correct rounding: real drivers (NVIDIA's) use that room, lavapipe
    does not."""
    x = np.asarray(domain, dtype=dtype)
    out = np.zeros_like(x)
    _apply_unary(qd.sqrt, x, out)
    np.testing.assert_array_max_ulp(out, np.sqrt(x.astype(np.float64)).astype(dtype), maxulp=3)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@test_utils.test()
def test_atan2_all_quadrants(dtype):
    ys, xs = np.meshgrid(np.linspace(-3, 3, 25), np.linspace(-3, 3, 25), indexing="ij")
    _check_binary(qd.atan2, np.arctan2, ys.ravel(), xs.ravel(), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@test_utils.test()
def test_pow_function_and_operator(dtype):
    base, expo = np.meshgrid(np.linspace(0.1, 10, 30), np.linspace(-3, 3, 13), indexing="ij")
    _check_binary(qd.pow, np.power, base.ravel(), expo.ravel(), dtype)

    @qd.kernel
    def pow_op(x: qd.types.ndarray(), y: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(x.shape[0]):
            out[i] = x[i] ** y[i]

    x = base.ravel().astype(dtype)
    y = expo.ravel().astype(dtype)
    out = np.zeros_like(x)
    pow_op(x, y, out)
    assert out.tolist() == test_utils.approx(
        np.power(x.astype(np.float64), y.astype(np.float64)).tolist(), **_TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@test_utils.test()
def test_min_max_floats(dtype):
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    b = rng.normal(size=200)
    _check_binary(qd.min, np.minimum, a, b, dtype, exact=True)
    _check_binary(qd.max, np.maximum, a, b, dtype, exact=True)


@test_utils.test()
def test_min_max_abs_pow_on_integers():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, 1), y: qd.types.ndarray(qd.i32, 1),
            out: qd.types.ndarray(qd.i32, 2)):
        for i in range(x.shape[0]):
            out[i, 0] = qd.min(x[i], y[i])
            out[i, 1] = qd.max(x[i], y[i])
            out[i, 2] = min(x[i], y[i], 3)      # builtins map to qd.min/qd.max
            out[i, 3] = max(x[i], y[i], -3)
            out[i, 4] = qd.abs(x[i])
            out[i, 5] = abs(y[i])
            out[i, 6] = x[i] ** 3
            out[i, 7] = qd.pow(y[i], 2)

    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, size=64).astype(np.int32)
    y = rng.integers(-50, 50, size=64).astype(np.int32)
    out = np.zeros((64, 8), dtype=np.int32)
    run(x, y, out)
    xl, yl = x.astype(np.int64), y.astype(np.int64)
    expected = np.stack([np.minimum(xl, yl), np.maximum(xl, yl),
                         np.minimum(np.minimum(xl, yl), 3), np.maximum(np.maximum(xl, yl), -3),
                         np.abs(xl), np.abs(yl), xl ** 3, yl ** 2], axis=1)
    np.testing.assert_array_equal(out, expected)


@test_utils.test()
def test_math_of_compile_time_values_folds_in_python():
    out = qd.field(qd.f64, shape=3)

    @qd.kernel
    def run():
        for _ in range(1):
            out[0] = qd.sin(0.5) + qd.sqrt(2.0)
            out[1] = qd.atan2(1.0, -1.0)
            out[2] = qd.max(2, 7, 5) + qd.min(4.5, -1.0)

    run()
    assert out[0] == pytest.approx(math.sin(0.5) + math.sqrt(2.0), rel=1e-15)
    assert out[1] == pytest.approx(math.atan2(1.0, -1.0), rel=1e-15)
    assert out[2] == 6.0


# ---- casts ---------------------------------------------------------------------------

@test_utils.test()
def test_cast_float_to_int_truncates_toward_zero():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.i32, 2)):
        for i in range(x.shape[0]):
            out[i, 0] = qd.cast(x[i], qd.i32)
            out[i, 1] = int(x[i])

    x = np.array([-2.7, -2.5, -0.4, 0.0, 0.4, 2.5, 2.7, 1e6 + 0.5], dtype=np.float32)
    out = np.zeros((len(x), 2), dtype=np.int32)
    run(x, out)
    expected = [math.trunc(float(v)) for v in x]
    np.testing.assert_array_equal(out[:, 0], expected)
    np.testing.assert_array_equal(out[:, 1], expected)


@test_utils.test()
def test_cast_int_to_float_and_float_builtin():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.f32, 2)):
        for i in range(x.shape[0]):
            out[i, 0] = qd.cast(x[i], qd.f32) / 4.0
            out[i, 1] = float(x[i]) / 4.0

    x = np.array([-7, -1, 0, 1, 3, 16777217], dtype=np.int32)
    out = np.zeros((len(x), 2), dtype=np.float32)
    run(x, out)
    expected = x.astype(np.float32) / np.float32(4.0)
    np.testing.assert_array_equal(out[:, 0], expected)
    np.testing.assert_array_equal(out[:, 1], expected)


@test_utils.test()
def test_cast_between_integer_widths_wraps():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 2)):
        for i in range(x.shape[0]):
            out[i, 0] = qd.cast(qd.cast(x[i], qd.u8), qd.i32)
            out[i, 1] = qd.cast(qd.cast(x[i], qd.i8), qd.i32)
            out[i, 2] = qd.cast(qd.cast(x[i], qd.i16), qd.i32)

    x = np.array([0, 127, 128, 255, 256, 300, -1, -129, 40000], dtype=np.int32)
    out = np.zeros((len(x), 3), dtype=np.int32)
    run(x, out)
    np.testing.assert_array_equal(out[:, 0], x.astype(np.uint8).astype(np.int32))
    np.testing.assert_array_equal(out[:, 1], x.astype(np.int8).astype(np.int32))
    np.testing.assert_array_equal(out[:, 2], x.astype(np.int16).astype(np.int32))


@test_utils.test()
def test_cast_of_python_constant_keeps_dtype():
    out = qd.field(qd.i64, shape=())

    @qd.kernel
    def run():
        for _ in range(1):
            s = qd.cast(0, qd.i64)
            for _ in range(4):
                s += 2 ** 30
            out[None] = s

    run()
    assert out[None] == 2 ** 32


@test_utils.test()
def test_annotated_local_declares_its_type():
    out = qd.field(qd.i64, shape=())

    @qd.kernel
    def run():
        for _ in range(1):
            s: qd.i64 = 0
            for _ in range(4):
                s += 2 ** 30
            out[None] = s

    run()
    assert out[None] == 2 ** 32


@test_utils.test()
def test_cast_f64_to_f32_rounds():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.f64, 1), out: qd.types.ndarray(qd.f64, 1)):
        for i in range(x.shape[0]):
            out[i] = qd.cast(qd.cast(x[i], qd.f32), qd.f64)

    x = np.array([0.1, 1.0 / 3.0, 16777217.0, -2.5e-8])
    out = np.zeros_like(x)
    run(x, out)
    np.testing.assert_array_equal(out, x.astype(np.float32).astype(np.float64))


# ---- promotion ------------------------------------------------------------------------

@test_utils.test()
def test_implicit_cast_on_store_keeps_program_order():
    # Regression: storing an i32 into an f32 field needs an
    # implicit cast; the following read of the same element must see it.
    x = qd.field(qd.f32, shape=4)
    y = qd.field(qd.f32, shape=4)

    @qd.kernel
    def run():
        for i in range(4):
            x[i] = i + 1
            y[i] = x[i] * 2.0

    run()
    np.testing.assert_array_equal(x.to_numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(y.to_numpy(), [2, 4, 6, 8])


@test_utils.test()
def test_int_times_float_literal_compiles():
    # Regression: `i * 0.5` promotes the loop index to f32 through an implicit cast.
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def run():
        for i in range(4):
            x[i] = i * 0.5

    run()
    np.testing.assert_array_equal(x.to_numpy(), [0.0, 0.5, 1.0, 1.5])


@test_utils.test()
def test_i32_plus_f32_is_f32():
    out = qd.field(qd.f64, shape=2)

    @qd.kernel
    def run(n: qd.i32, f: qd.f32):
        for _ in range(1):
            out[0] = n + f          # f32 result: 2**24 + 1 rounds to 2**24
            t = n + f
            out[1] = t * 1.0

    run(2 ** 24 + 1, 0.0)
    assert out[0] == float(2 ** 24)
    assert out[1] == float(2 ** 24)
    run(3, 0.25)
    assert out[0] == 3.25


@test_utils.test()
def test_i32_plus_i64_is_i64():
    out = qd.field(qd.i64, shape=3)

    @qd.kernel
    def run(big: qd.i64, small: qd.i32):
        for i in range(3):
            out[i] = small + big + i       # i32 + i64 -> i64, then + i32 -> i64

    run(2 ** 40, 2 ** 31 - 1)
    np.testing.assert_array_equal(out.to_numpy(), [2 ** 40 + 2 ** 31 - 1 + i for i in range(3)])


@test_utils.test()
def test_int_true_division_gives_default_fp_f32():
    out = qd.field(qd.f32, shape=6)

    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, 1), y: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            out[i] = x[i] / y[i]

    x = np.array([7, -7, 1, 0, 9, 1], dtype=np.int32)
    y = np.array([2, 2, 3, 5, -4, 7], dtype=np.int32)
    run(x, y)
    np.testing.assert_array_equal(out.to_numpy(), (x / y).astype(np.float32))


@test_utils.test(default_fp=qd.f64)
def test_int_true_division_gives_default_fp_f64():
    out = qd.field(qd.f64, shape=3)

    @qd.kernel
    def run(a: qd.i32, b: qd.i32):
        for _ in range(1):
            out[0] = a / b                    # f64 division: 1/3 to 16 digits
            out[1] = (a / b) * b              # no f32 rounding in between
            out[2] = float(a) / b

    run(1, 3)
    assert out[0] == 1.0 / 3.0
    assert out[1] == (1.0 / 3.0) * 3
    assert out[2] == 1.0 / 3.0


@test_utils.test()
def test_floordiv_and_mod_follow_python_on_negative_ints():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, 1), y: qd.types.ndarray(qd.i32, 1),
            q: qd.types.ndarray(qd.i32, 1), r: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            q[i] = x[i] // y[i]
            r[i] = x[i] % y[i]

    pairs = [(a, b) for a in (-9, -7, -1, 0, 1, 6, 7, 100) for b in (-4, -3, -1, 1, 2, 3, 5)]
    x = np.array([a for a, _ in pairs], dtype=np.int32)
    y = np.array([b for _, b in pairs], dtype=np.int32)
    q = np.zeros_like(x)
    r = np.zeros_like(x)
    run(x, y, q, r)
    assert q.tolist() == [a // b for a, b in pairs]
    assert r.tolist() == [a % b for a, b in pairs]


@test_utils.test()
def test_floordiv_and_mod_follow_python_on_floats():
    @qd.kernel
    def run(x: qd.types.ndarray(qd.f64, 1), y: qd.types.ndarray(qd.f64, 1),
            q: qd.types.ndarray(qd.f64, 1), r: qd.types.ndarray(qd.f64, 1)):
        for i in range(x.shape[0]):
            q[i] = x[i] // y[i]
            r[i] = x[i] % y[i]

    pairs = [(a, b) for a in (-7.5, -0.5, 0.0, 3.25, 7.5) for b in (-2.0, -0.75, 2.0, 4.0)]
    x = np.array([a for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    q = np.zeros_like(x)
    r = np.zeros_like(x)
    run(x, y, q, r)
    assert q.tolist() == [a // b for a, b in pairs]
    assert r.tolist() == [a % b for a, b in pairs]


@test_utils.test()
def test_floordiv_and_mod_with_literal_divisor():
    out = qd.field(qd.i32, shape=(11, 2))

    @qd.kernel
    def run():
        for i in range(11):
            v = i - 5
            out[i, 0] = v // 3
            out[i, 1] = v % 3

    run()
    got = out.to_numpy()
    assert got[:, 0].tolist() == [(i - 5) // 3 for i in range(11)]
    assert got[:, 1].tolist() == [(i - 5) % 3 for i in range(11)]


@test_utils.test()
def test_u8_arithmetic_wraps_around():
    @qd.kernel
    def run(a: qd.types.ndarray(qd.u8, 1), b: qd.types.ndarray(qd.u8, 1),
            out: qd.types.ndarray(qd.u8, 2)):
        for i in range(a.shape[0]):
            out[i, 0] = a[i] + b[i]
            out[i, 1] = a[i] - b[i]
            out[i, 2] = a[i] * b[i]
            out[i, 3] = a[i] + 10

    a = np.array([250, 5, 255, 128, 0], dtype=np.uint8)
    b = np.array([10, 10, 1, 2, 1], dtype=np.uint8)
    out = np.zeros((5, 4), dtype=np.uint8)
    run(a, b, out)
    al, bl = a.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(out[:, 0], (al + bl) % 256)
    np.testing.assert_array_equal(out[:, 1], (al - bl) % 256)
    np.testing.assert_array_equal(out[:, 2], (al * bl) % 256)
    np.testing.assert_array_equal(out[:, 3], (al + 10) % 256)


@test_utils.test()
def test_u8_field_accumulation_wraps():
    x = qd.field(qd.u8, shape=3)

    @qd.kernel
    def bump():
        for i in range(3):
            for _ in range(100):
                x[i] = x[i] + 3

    x.from_numpy(np.array([0, 1, 200], dtype=np.uint8))
    bump()
    np.testing.assert_array_equal(x.to_numpy(), [(v + 300) % 256 for v in (0, 1, 200)])


@test_utils.test()
def test_i64_values_beyond_2_pow_31():
    x = qd.field(qd.i64, shape=4)

    @qd.kernel
    def run(n: qd.i64, m: qd.i64):
        for _ in range(1):
            x[0] = n * 3 + 2 ** 40
            x[1] = n * m
            x[2] = -(2 ** 62) + m
            x[3] = (n * m) // 7 - (n * m) % 7

    n, m = 2 ** 33 + 5, 123456789
    run(n, m)
    assert x.to_numpy().tolist() == [n * 3 + 2 ** 40, n * m, -(2 ** 62) + m,
                                     (n * m) // 7 - (n * m) % 7]
    x[1] = 2 ** 50 + 1   # host round trip keeps all 64 bits
    assert x[1] == 2 ** 50 + 1


@test_utils.test()
def test_i64_loop_sum_does_not_overflow():
    out = qd.field(qd.i64, shape=())

    @qd.kernel
    def run(n: qd.i64):
        for _ in range(1):
            s: qd.i64 = 0
            k: qd.i64 = 0
            while k < n:
                s += k * k
                k += 1
            out[None] = s

    run(3000)
    assert out[None] == sum(k * k for k in range(3000))   # ~9e9 > 2**31


@test_utils.test()
def test_i64_value_mixed_with_i32_loop_index():
    x = qd.field(qd.i64, shape=4)

    @qd.kernel
    def run(n: qd.i64):
        for i in range(4):
            x[i] = n * i + i

    run(2 ** 31 + 7)
    np.testing.assert_array_equal(x.to_numpy(), [(2 ** 31 + 7) * i + i for i in range(4)])


@test_utils.test()
def test_large_int_literal_next_to_i32_is_not_silently_truncated():
    x = qd.field(qd.i64, shape=4)

    @qd.kernel
    def run():
        for i in range(4):
            x[i] = i * 2 ** 32 + 1

    try:
        run()
    except qd.QuadrantsError:
        return                          # rejecting the literal is acceptable
    np.testing.assert_array_equal(x.to_numpy(), [i * 2 ** 32 + 1 for i in range(4)])


@test_utils.test()
def test_float_literal_takes_default_fp_f32():
    out = qd.field(qd.f64, shape=())

    @qd.kernel
    def run():
        for _ in range(1):
            v = 0.1          # an f32 local under the default default_fp
            out[None] = v * 3.0

    run()
    assert out[None] == float(np.float32(0.1) * np.float32(3.0))
    assert out[None] != 0.1 * 3.0


@test_utils.test(default_fp=qd.f64)
def test_default_fp_f64_changes_literal_type():
    out = qd.field(qd.f64, shape=2)

    @qd.kernel
    def run():
        for _ in range(1):
            v = 0.1          # an f64 local now
            out[0] = v * 3.0
            w = float(7) / 3.0
            out[1] = w

    run()
    assert out[0] == 0.1 * 3.0
    assert out[1] == 7.0 / 3.0


@test_utils.test(default_fp=qd.f64)
def test_default_fp_f64_makes_float_builtin_and_field_float_f64():
    x = qd.field(float, shape=2)
    assert x.dtype == qd.f64

    @qd.kernel
    def run(n: qd.i32):
        for _ in range(1):
            x[0] = float(n) / 3.0
            x[1] = qd.sqrt(float(n))

    run(2)
    assert x[0] == 2.0 / 3.0
    assert x[1] == math.sqrt(2.0)


@test_utils.test()
def test_comparison_results_used_as_ints():
    out = qd.field(qd.i32, shape=(6, 2))

    @qd.kernel
    def run(t: qd.i32):
        for i in range(6):
            out[i, 0] = (i < t) + (i == t) * 10 + (i >= 4) * 100
            count = 0
            count += i != 2
            out[i, 1] = count

    run(3)
    got = out.to_numpy()
    assert got[:, 0].tolist() == [(i < 3) + (i == 3) * 10 + (i >= 4) * 100 for i in range(6)]
    assert got[:, 1].tolist() == [int(i != 2) for i in range(6)]


@test_utils.test()
def test_comparison_results_in_select_and_sum_via_cast():
    out = qd.field(qd.i32, shape=())

    @qd.kernel
    def run(t: qd.f32):
        for i in range(10):
            out[None] += qd.cast(i * 0.5 > t, qd.i32)

    run(2.0)
    assert out[None] == sum(1 for i in range(10) if i * 0.5 > 2.0)


@test_utils.test()
def test_unsigned_and_bitwise_ops():
    @qd.kernel
    def run(a: qd.types.ndarray(qd.u32, 1), out: qd.types.ndarray(qd.u32, 2)):
        for i in range(a.shape[0]):
            out[i, 0] = a[i] >> 3
            out[i, 1] = a[i] << 4
            out[i, 2] = a[i] & 0xF0F0
            out[i, 3] = a[i] | 0x1
            out[i, 4] = a[i] ^ 0xFFFF
            out[i, 5] = ~a[i]

    a = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 12345678], dtype=np.uint32)
    out = np.zeros((5, 6), dtype=np.uint32)
    run(a, out)
    al = a.astype(np.int64)
    expected = np.stack([al >> 3, (al << 4) & 0xFFFFFFFF, al & 0xF0F0, al | 1, al ^ 0xFFFF,
                         ~al & 0xFFFFFFFF], axis=1)
    np.testing.assert_array_equal(out.astype(np.int64), expected)


@test_utils.test()
def test_float_math_on_integers_uses_default_fp_f32():
    out = qd.field(qd.f64, shape=(6, 3))

    @qd.kernel
    def run():
        for i in range(6):
            out[i, 0] = qd.sqrt(i + 2)       # f32 sqrt of an int
            out[i, 1] = qd.min(i, 2.5)       # int vs float literal -> f32
            out[i, 2] = 1 if i < 2.5 else 0  # int compared with a float

    run()
    got = out.to_numpy()
    # An f32 sqrt (its values are f32 values), within the few ULP Vulkan
    # allows (exact elsewhere).
    sqrt32 = got[:, 0].astype(np.float32)
    np.testing.assert_array_equal(sqrt32.astype(np.float64), got[:, 0])
    expected = np.sqrt(np.arange(2, 8, dtype=np.float32))
    if qd.lang.impl.current_cfg().arch == qd.vulkan:
        np.testing.assert_array_max_ulp(sqrt32, expected, maxulp=3)
    else:
        np.testing.assert_array_equal(sqrt32, expected)
    np.testing.assert_array_equal(got[:, 1], np.minimum(np.arange(6), 2.5))
    np.testing.assert_array_equal(got[:, 2], (np.arange(6) < 2.5).astype(np.float64))


@test_utils.test(default_fp=qd.f64)
def test_float_math_on_integers_uses_default_fp_f64():
    out = qd.field(qd.f64, shape=5)

    @qd.kernel
    def run():
        for i in range(5):
            out[i] = qd.sqrt(i + 2) + qd.log(i + 1)

    run()
    expected = [math.sqrt(i + 2) + math.log(i + 1) for i in range(5)]
    assert out.to_numpy().tolist() == test_utils.approx(expected, rel=1e-15, bits=64)


@test_utils.test()
def test_int_divided_by_literal_is_true_division():
    out = qd.field(qd.f32, shape=7)

    @qd.kernel
    def run():
        for i in range(7):
            out[i] = (i - 3) / 2

    run()
    np.testing.assert_array_equal(out.to_numpy(), (np.arange(7) - 3) / 2)
