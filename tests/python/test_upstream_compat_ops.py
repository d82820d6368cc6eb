"""Upstream-compatibility of the ops that need IR support: qd.round,
qd.frexp, qd.bit_cast, qd.math.clz / popcnt / ffs, qd.raw_div / raw_mod and
qd.math.isnan / isinf, with their behaviour under autodiff. The scenarios
follow upstream's test_unary_ops, test_cast, test_mod, test_element_wise and
test_math_module; the atomics and qd.global_thread_idx are in
test_upstream_compat_atomics.py."""
import math

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.types import to_numpy_dtype as _np
from tests import test_utils

_INT_TYPES = [qd.i8, qd.u8, qd.i16, qd.u16, qd.i32, qd.u32, qd.i64, qd.u64]


def _round_half_away(x):
    """C's round on a double: exact, since x - trunc(x) is exact."""
    if not math.isfinite(x):
        return x
    t = math.trunc(x)
    r = t + math.copysign(1.0, x) if abs(x - t) >= 0.5 else float(t)
    return math.copysign(r, x) if r == 0 else r


def _bits(value, width):
    return int(value) & ((1 << width) - 1)


def _clz(value, width):
    return width - _bits(value, width).bit_length()


def _popcnt(value, width):
    return bin(_bits(value, width)).count("1")


def _ffs(value, width):
    b = _bits(value, width)
    return (b & -b).bit_length()


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# ---- qd.round -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test()
def test_round_is_half_away_from_zero_and_exact(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    below_half = float(np.nextafter(np.array(0.5, _np(dtype)), 0))
    values = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.3, -0.3, 0.7, -0.7, below_half, -below_half,
              4194304.5, -4194304.5, 1e30, -1e30, 0.0, -0.0, math.inf, -math.inf, 1234.49,
              -7.5]
    x = np.array(values, dtype=_np(dtype))
    out = np.zeros_like(x)

    @qd.kernel
    def run(x: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(x.shape[0]):
            out[i] = qd.round(x[i])

    run(x, out)
    expected = np.array([_round_half_away(float(v)) for v in x], dtype=x.dtype)
    np.testing.assert_array_equal(out, expected)
    # The sign of zero survives, as with C's round.
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


@test_utils.test()
def test_round_keeps_nan():
    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        return qd.round(x)

    assert math.isnan(run(math.nan))


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test()
def test_round_dtype_argument(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    scalars = qd.field(qd.f64, shape=3)
    ints = qd.field(qd.i32, shape=4)
    vec = qd.Vector.field(3, qd.f64, shape=3)

    @qd.kernel
    def run():
        x = qd.cast(1.5, dtype)
        v = qd.Vector([qd.cast(1.1, dtype), qd.cast(2.2, dtype), qd.cast(3.3, dtype)])
        scalars[0] = qd.round(x)
        scalars[1] = qd.round(x, dtype)
        ints[0] = qd.round(x, int)
        ints[1] = qd.round(-x, qd.i32)
        vec[0] = qd.round(v)
        vec[1] = qd.round(v, dtype)
        r = qd.round(v, int)
        ints[2] = r[0] + r[1] * 10 + r[2] * 100

    run()
    assert scalars[0] == 2.0 and scalars[1] == 2.0
    assert ints[0] == 2 and ints[1] == -2 and ints[2] == 321
    np.testing.assert_array_equal(vec.to_numpy()[:2], [[1, 2, 3], [1, 2, 3]])


@test_utils.test()
def test_round_element_wise_matches_numpy_away_from_halves():
    y = qd.Vector.field(2, qd.f32, shape=())
    x = qd.Vector.field(2, qd.f32, shape=())
    y[None] = qd.Vector([0.3, 0.9])

    @qd.kernel
    def run():
        x[None] = qd.round(y[None])

    run()
    np.testing.assert_array_equal(x[None].to_numpy(), np.round(y[None].to_numpy()))


@test_utils.test()
def test_round_of_an_integer_is_a_type_error():
    @qd.kernel
    def run(x: qd.i32) -> qd.i32:
        return qd.round(x)

    with pytest.raises(qd.QuadrantsTypeError, match="round takes real inputs only"):
        run(3)


@test_utils.test(arch=qd.cpu)
def test_round_python_scope_follows_numpy():
    assert qd.round(2.5) == np.round(2.5) == 2.0
    assert qd.round(-1.5) == -2.0
    assert qd.round(3.7, int) == 4
    np.testing.assert_array_equal(qd.round(qd.Vector([0.2, 1.7])).to_numpy(), [0.0, 2.0])


# ---- qd.frexp -----------------------------------------------------------------

def _frexp_inputs(dtype):
    info = np.finfo(dtype)
    rng = np.random.default_rng(7)
    values = list(np.ldexp(rng.normal(size=40), rng.integers(info.minexp, info.maxexp, size=40)))
    values += [0.0, -0.0, 1.0, -1.0, 0.5, 1.4, 8.0, float(info.max), -float(info.max),
               float(info.tiny), float(info.tiny) * 0.75, float(info.smallest_subnormal),
               -float(info.smallest_subnormal) * 3, math.inf, -math.inf]
    return np.array(values, dtype=dtype)


@pytest.mark.parametrize("dtype", [qd.f16, qd.f32, qd.f64])
@test_utils.test()
def test_frexp_matches_numpy_including_subnormals(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    np_dtype = _np(dtype)
    x = _frexp_inputs(np_dtype)
    mantissa = np.zeros_like(x)
    exponent = np.zeros(x.shape, np.int32)

    @qd.kernel
    def run(x: qd.types.ndarray(), m: qd.types.ndarray(), e: qd.types.ndarray()):
        for i in range(x.shape[0]):
            m[i], e[i] = qd.frexp(x[i])

    run(x, mantissa, exponent)
    ref_m, ref_e = np.frexp(x)
    np.testing.assert_array_equal(mantissa, ref_m)
    np.testing.assert_array_equal(np.signbit(mantissa), np.signbit(ref_m))
    np.testing.assert_array_equal(exponent, ref_e)


@test_utils.test()
def test_frexp_of_nan_is_nan_with_exponent_zero():
    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        m, e = qd.frexp(x)
        return m + e

    assert math.isnan(run(math.nan))


@test_utils.test()
def test_frexp_upstream_scenario():
    @qd.kernel
    def get_frac(x: qd.f32) -> qd.f32:
        a, b = qd.frexp(x)
        return a

    @qd.kernel
    def get_exp(x: qd.f32) -> qd.i32:
        a, b = qd.frexp(x)
        return b

    assert test_utils.allclose(get_frac(1.4), 0.7)
    assert get_exp(1.4) == 1


@test_utils.test()
def test_frexp_of_a_vector_and_on_the_host():
    m = qd.Vector.field(3, qd.f32, shape=())
    e = qd.Vector.field(3, qd.i32, shape=())

    @qd.kernel
    def run():
        m[None], e[None] = qd.frexp(qd.Vector([3.0, -0.25, 1024.0]))

    run()
    np.testing.assert_array_equal(m[None].to_numpy(), [0.75, -0.5, 0.5])
    np.testing.assert_array_equal(e[None].to_numpy(), [2, -1, 11])
    assert qd.frexp(12.0) == (0.75, 4)


@test_utils.test()
def test_frexp_of_an_integer_is_a_type_error():
    @qd.kernel
    def run(x: qd.i32) -> qd.i32:
        a, b = qd.frexp(x)
        return b

    with pytest.raises(qd.QuadrantsTypeError, match="frexp takes real inputs only"):
        run(3)


# ---- qd.math.popcnt / clz / ffs -----------------------------------------------

@test_utils.test()
def test_popcnt_of_32_and_64_bit_integers():
    kernels = {}
    for dtype in (qd.i32, qd.i64, qd.u32, qd.u64):
        @qd.kernel
        def count(x: dtype) -> qd.i32:
            return qd.math.popcnt(x)
        kernels[dtype] = count
    for count in kernels.values():
        assert (count(100), count(1000), count(10000)) == (3, 6, 5)
    assert kernels[qd.i32](-1) == 32 and kernels[qd.i64](-1) == 64
    assert kernels[qd.u64](0xFFFFFFFFFFFFFFFF) == 64


@test_utils.test()
def test_clz_counts_over_the_unsigned_bit_pattern():
    @qd.kernel
    def clz32(x: qd.i32) -> qd.i32:
        return qd.math.clz(x)

    @qd.kernel
    def clz_u32(x: qd.u32) -> qd.i32:
        return qd.math.clz(x)

    @qd.kernel
    def clz64(x: qd.i64) -> qd.i32:
        return qd.math.clz(x)

    @qd.kernel
    def clz_u64(x: qd.u64) -> qd.i32:
        return qd.math.clz(x)

    for v, want in [(0, 32), (1, 31), (2, 30), (3, 30), (4, 29), (5, 29), (1023, 22),
                    (1024, 21), (-1, 0), (-2, 0), (0x7FFFFFFF, 1)]:
        assert clz32(v) == want, v
    for v, want in [(0, 32), (1, 31), (0x7FFFFFFF, 1), (0x80000000, 0), (0xFFFFFFFF, 0)]:
        assert clz_u32(v) == want, v
    for v, want in [(0, 64), (1, 63), (2, 62), (1 << 31, 32), (1 << 32, 31), (1 << 62, 1),
                    (-1, 0), ((1 << 32) | 0xFF, 31)]:
        assert clz64(v) == want, v
    for v, want in [(0, 64), (1, 63), (1 << 32, 31), (1 << 63, 0), (0xFFFFFFFFFFFFFFFF, 0),
                    (0x7FFFFFFFFFFFFFFF, 1)]:
        assert clz_u64(v) == want, v


@test_utils.test()
def test_ffs_is_one_based_and_zero_for_zero():
    @qd.kernel
    def ffs32(x: qd.i32) -> qd.i32:
        return qd.math.ffs(x)

    @qd.kernel
    def ffs_u32(x: qd.u32) -> qd.i32:
        return qd.math.ffs(x)

    @qd.kernel
    def ffs64(x: qd.i64) -> qd.i32:
        return qd.math.ffs(x)

    @qd.kernel
    def ffs_u64(x: qd.u64) -> qd.i32:
        return qd.math.ffs(x)

    for v, want in [(0, 0), (1, 1), (2, 2), (3, 1), (4, 3), (8, 4), (0x7FFFFFFF, 1),
                    (-(1 << 31), 32), (-1, 1), (0xF0, 5), (0xF00, 9)]:
        assert ffs32(v) == want, v
    for v, want in [(0, 0), (1, 1), (0x80000000, 32), (0xFFFFFFFF, 1), (0xFFFFFFFE, 2)]:
        assert ffs_u32(v) == want, v
    for v, want in [(0, 0), (1, 1), (2, 2), (1 << 31, 32), (1 << 32, 33), (1 << 62, 63),
                    (-1, 1), (1 << 40, 41), ((1 << 40) | (1 << 8), 9)]:
        assert ffs64(v) == want, v
    for v, want in [(0, 0), (1, 1), (1 << 63, 64), (0xFFFFFFFFFFFFFFFF, 1), (1 << 32, 33)]:
        assert ffs_u64(v) == want, v


@test_utils.test()
def test_bit_counts_return_i32_that_promotes_with_i64():
    @qd.kernel
    def popcnt_plus_one(x: qd.i64) -> qd.i64:
        return qd.math.popcnt(x) + qd.i64(1)

    @qd.kernel
    def clz_plus_one(x: qd.i64) -> qd.i64:
        return qd.math.clz(x) + qd.i64(1)

    @qd.kernel
    def ffs_plus_one(x: qd.i64) -> qd.i64:
        return qd.math.ffs(x) + qd.i64(1)

    assert popcnt_plus_one(0) == 1 and popcnt_plus_one(-1) == 65
    assert clz_plus_one(0) == 65 and clz_plus_one(1) == 64
    assert ffs_plus_one(0) == 1 and ffs_plus_one(1 << 32) == 34


@pytest.mark.parametrize("dtype", _INT_TYPES)
@test_utils.test()
def test_bit_counts_of_every_integer_width_in_a_parallel_loop(dtype):
    width = dtype.bits
    rng = np.random.default_rng(width)
    # Random patterns with random runs of leading and trailing zeros.
    bits = rng.integers(0, 2 ** 63, size=500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    bits = (bits >> rng.integers(0, 64, size=500).astype(np.uint64)) << \
        rng.integers(0, 64, size=500).astype(np.uint64)
    edges = [0, 1, (1 << width) - 1, 1 << (width - 1)]
    bits[:4] = edges
    unsigned = np.dtype(f"u{width // 8}")
    x = (bits & np.uint64((1 << width) - 1)).astype(unsigned).view(_np(dtype))
    out = np.zeros((3, x.shape[0]), np.int32)

    @qd.kernel
    def run(x: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(x.shape[0]):
            out[0, i] = qd.math.clz(x[i])
            out[1, i] = qd.math.popcnt(x[i])
            out[2, i] = qd.math.ffs(x[i])

    run(x, out)
    for fn, row in ((_clz, 0), (_popcnt, 1), (_ffs, 2)):
        np.testing.assert_array_equal(out[row], [fn(v, width) for v in x.tolist()],
                                      err_msg=fn.__name__)


@pytest.mark.parametrize("name", ["clz", "popcnt", "ffs"])
@test_utils.test()
def test_bit_counts_reject_floats(name):
    op = getattr(qd.math, name)

    @qd.kernel
    def run(x: qd.f32) -> qd.i32:
        return op(x)

    with pytest.raises(qd.QuadrantsTypeError, match=f"{name} takes integral inputs only"):
        run(1.0)


@test_utils.test(arch=qd.cpu)
def test_bit_counts_on_the_host_need_a_width():
    assert qd.math.clz(np.int32(-1)) == 0 and qd.math.clz(np.uint16(1)) == 15
    assert qd.math.popcnt(np.int64(-1)) == 64
    assert qd.math.ffs(np.uint64(1 << 63)) == 64 and qd.math.ffs(np.int8(0)) == 0
    with pytest.raises(qd.QuadrantsTypeError, match="width"):
        qd.math.clz(5)


# ---- qd.bit_cast --------------------------------------------------------------

@test_utils.test()
def test_bit_cast_round_trip_through_fields():
    x = qd.field(qd.i32, shape=())
    y = qd.field(qd.f32, shape=())
    z = qd.field(qd.i32, shape=())

    @qd.kernel
    def to_float():
        y[None] = qd.bit_cast(x[None], qd.f32)

    @qd.kernel
    def to_int():
        z[None] = qd.bit_cast(y[None], qd.i32)

    x[None] = 2333
    to_float()
    to_int()
    assert z[None] == 2333
    assert y[None] == np.array(2333, np.int32).view(np.float32)


@pytest.mark.parametrize("src,dst", [(qd.f32, qd.i32), (qd.f32, qd.u32), (qd.i32, qd.f32),
                                     (qd.f64, qd.i64), (qd.u64, qd.f64), (qd.i32, qd.u32),
                                     (qd.f16, qd.u16), (qd.i16, qd.f16), (qd.u8, qd.i8)])
@test_utils.test()
def test_bit_cast_matches_numpy_view(src, dst):
    test_utils.skip_if_f64_unsupported(qd.f64 if qd.f64 in (src, dst) else src)
    rng = np.random.default_rng(3)
    size = _np(src).itemsize
    if size == 1:
        x = rng.integers(0, 256, size=256).astype(np.uint8).view(_np(src))
    else:
        # The bits of finite floats, which every backend moves unchanged.
        floats = rng.normal(size=256) * 1000
        x = floats.astype({2: np.float16, 4: np.float32, 8: np.float64}[size]).view(_np(src))
    out = np.zeros(x.shape, _np(dst))

    @qd.kernel
    def run(x: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(x.shape[0]):
            out[i] = qd.bit_cast(x[i], dst)

    run(x, out)
    np.testing.assert_array_equal(out.view(x.dtype), x)


@test_utils.test()
def test_bit_cast_of_a_literal_and_a_vector():
    i = qd.field(qd.i32, shape=())
    v = qd.Vector.field(2, qd.u32, shape=())

    @qd.kernel
    def run():
        x = 3.14
        i[None] = qd.bit_cast(x, qd.i32)
        v[None] = qd.bit_cast(qd.Vector([1.0, -2.0]), qd.u32)

    run()
    assert i[None] == np.array(3.14, np.float32).view(np.int32) == 1078523331
    np.testing.assert_array_equal(v[None].to_numpy(), [0x3F800000, 0xC0000000])


@pytest.mark.parametrize("src,dst", [(qd.f64, qd.i32), (qd.i32, qd.f16), (qd.u1, qd.u8),
                                     (qd.i8, qd.u1)])
@test_utils.test()
def test_bit_cast_between_sizes_is_a_type_error(src, dst):
    test_utils.skip_if_f64_unsupported(src)

    @qd.kernel
    def run(x: src) -> qd.i32:
        return qd.cast(qd.bit_cast(x, dst), qd.i32)

    with pytest.raises(qd.QuadrantsTypeError, match="bit_cast"):
        run(1)


@test_utils.test(arch=qd.cpu)
def test_bit_cast_on_the_host_takes_numpy_scalars():
    assert qd.bit_cast(np.float32(1.0), qd.u32) == 0x3F800000
    assert qd.bit_cast(np.int64(-1), qd.u64) == 0xFFFFFFFFFFFFFFFF
    with pytest.raises(qd.QuadrantsTypeError, match="numpy scalar"):
        qd.bit_cast(1.0, qd.i32)
    with pytest.raises(qd.QuadrantsTypeError, match="same size"):
        qd.bit_cast(np.float64(1.0), qd.i32)


# ---- qd.raw_div / qd.raw_mod --------------------------------------------------

@test_utils.test()
def test_raw_div_and_mod_truncate_toward_zero():
    pairs = [(a, b) for a in range(-10, 11) for b in range(-10, 11) if b != 0]
    pairs += [(10, 3), (-10, 3), (10, -3), (-10, -3), (2 ** 31 - 1, -7), (-2 ** 31 + 1, 9)]
    a = np.array([p[0] for p in pairs], np.int32)
    b = np.array([p[1] for p in pairs], np.int32)
    out = np.zeros((4, len(pairs)), np.int32)

    @qd.kernel
    def run(a: qd.types.ndarray(), b: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(a.shape[0]):
            out[0, i] = qd.raw_div(a[i], b[i])
            out[1, i] = qd.raw_mod(a[i], b[i])
            out[2, i] = a[i] // b[i]
            out[3, i] = a[i] % b[i]

    run(a, b, out)
    np.testing.assert_array_equal(out[0], [_c_div(x, y) for x, y in pairs])
    np.testing.assert_array_equal(out[1], [x - y * _c_div(x, y) for x, y in pairs])
    np.testing.assert_array_equal(out[2], a // b)
    np.testing.assert_array_equal(out[3], a % b)


@test_utils.test()
def test_raw_ops_on_unsigned_64_bit_and_mixed_operands():
    big = qd.field(qd.i64, shape=2)
    unsigned = qd.field(qd.u32, shape=2)
    mixed = qd.field(qd.f32, shape=2)

    @qd.kernel
    def run(x: qd.i64, y: qd.u32):
        big[0] = qd.raw_div(x, -3)
        big[1] = qd.raw_mod(x, -3)
        unsigned[0] = qd.raw_div(y, 7)
        unsigned[1] = qd.raw_mod(y, 7)
        mixed[0] = qd.raw_div(5, qd.f32(4.0))
        mixed[1] = qd.raw_mod(qd.f32(-4.5), 2.0)

    run(-(2 ** 40) - 1, 0xFFFFFFFF)
    assert big[0] == _c_div(-(2 ** 40) - 1, -3) and big[1] == -((2 ** 40 + 1) % 3)
    assert unsigned[0] == 0xFFFFFFFF // 7 and unsigned[1] == 0xFFFFFFFF % 7
    assert mixed[0] == 1.25 and mixed[1] == math.fmod(-4.5, 2.0)


@pytest.mark.parametrize("lhs_is_vector", [True, False])
@test_utils.test()
def test_raw_ops_element_wise(lhs_is_vector):
    x = qd.Vector.field(3, qd.i32, shape=2)

    @qd.kernel
    def run(k: qd.i32):
        b = qd.Vector([2, -4, 5])
        if qd.static(lhs_is_vector):
            a = qd.Vector([k, 9, 6])
            x[0] = qd.raw_div(a, b)
            x[1] = qd.raw_mod(a, b)
        else:
            x[0] = qd.raw_div(k, b)
            x[1] = qd.raw_mod(k, b)

    run(-7)
    a = np.array([-7, 9, 6]) if lhs_is_vector else np.full(3, -7)
    b = np.array([2, -4, 5])
    np.testing.assert_array_equal(x.to_numpy()[0], [_c_div(p, q) for p, q in zip(a, b)])
    np.testing.assert_array_equal(x.to_numpy()[1],
                                  [p - q * _c_div(p, q) for p, q in zip(a, b)])


@test_utils.test(arch=qd.cpu)
def test_raw_ops_on_the_host():
    assert qd.raw_div(-7, 2) == -3 and qd.raw_mod(-7, 2) == -1
    assert qd.raw_div(5, 3) == 1 and qd.raw_div(5, 4.0) == 1.25
    assert qd.raw_mod(-4, 3) == -1 and qd.raw_mod(-4.5, 2.0) == math.fmod(-4.5, 2.0)


# ---- qd.math.isnan / isinf ----------------------------------------------------

@pytest.mark.parametrize("dtype", [qd.f16, qd.f32, qd.f64])
@test_utils.test()
def test_isnan_isinf_on_the_bits(dtype):
    test_utils.skip_if_f64_unsupported(dtype)
    info = np.finfo(_np(dtype))
    x = np.array([math.nan, -math.nan, math.inf, -math.inf, 1.0, 0.0, -0.0,
                  float(info.max), float(info.smallest_subnormal)], _np(dtype))
    out = np.zeros((2, x.shape[0]), np.int32)

    @qd.kernel
    def run(x: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(x.shape[0]):
            out[0, i] = qd.math.isnan(x[i])
            out[1, i] = qd.math.isinf(x[i])

    run(x, out)
    np.testing.assert_array_equal(out[0], np.isnan(x))
    np.testing.assert_array_equal(out[1], np.isinf(x))


@test_utils.test()
def test_isnan_isinf_on_vectors_integers_and_the_host():
    nan = qd.Vector.field(4, qd.i32, shape=())
    inf = qd.Vector.field(4, qd.i32, shape=())
    ints = qd.field(qd.i32, shape=2)

    @qd.kernel
    def run(k: qd.i32):
        nan[None] = qd.math.isnan(qd.math.vec4(qd.math.nan, -qd.math.nan, qd.math.inf, 1))
        inf[None] = qd.math.isinf(qd.math.vec4(qd.math.inf, -qd.math.inf, qd.math.nan, 1))
        ints[0] = qd.math.isnan(k)
        ints[1] = qd.math.isinf(k)

    run(3)
    np.testing.assert_array_equal(nan[None].to_numpy(), [1, 1, 0, 0])
    np.testing.assert_array_equal(inf[None].to_numpy(), [1, 1, 0, 0])
    np.testing.assert_array_equal(ints.to_numpy(), [0, 0])
    assert qd.math.isnan(math.nan) and not qd.math.isnan(1.0)
    assert qd.math.isinf(-math.inf) and not qd.math.isinf(1e308)


# ---- autodiff -------------------------------------------------------------------

@test_utils.test()
def test_round_has_zero_gradient_under_tape():
    n = 8
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(-3.3, 4.1, n).astype(np.float32))

    @qd.kernel
    def compute():
        for i in x:
            loss[None] += 3.0 * qd.round(x[i]) + 0.5 * x[i]

    with qd.ad.Tape(loss=loss):
        compute()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(n, 0.5, np.float32))


@test_utils.test(require=qd.extension.data64, default_fp=qd.f64)
def test_frexp_mantissa_gradient_matches_central_differences():
    values = np.array([0.3, -1.7, 5.0 / 3.0, 1234.5, -0.001, 0.0], np.float64)
    x = qd.field(qd.f64, shape=values.shape[0], needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(values)

    @qd.kernel
    def compute():
        for i in x:
            m, e = qd.frexp(x[i])
            loss[None] += m * m + qd.cast(e, qd.f64)

    with qd.ad.Tape(loss=loss):
        compute()
    grad = x.grad.to_numpy()
    mantissa, exponent = np.frexp(values)
    analytic = np.where(values == 0, 0.0, 2 * mantissa * np.ldexp(1.0, -exponent))
    np.testing.assert_allclose(grad, analytic, rtol=1e-12)

    def f(v):
        m, e = np.frexp(v)
        return m * m + e
    h = 1e-7
    for k in range(values.shape[0] - 1):  # x = 0 has no derivative
        central = (f(values[k] + h * abs(values[k])) - f(values[k] - h * abs(values[k]))) / \
            (2 * h * abs(values[k]))
        assert grad[k] == pytest.approx(central, rel=1e-6)


@test_utils.test()
def test_frexp_mantissa_tangent_in_forward_mode():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.dense(qd.i, 3).place(x, y)
    qd.root.lazy_dual()
    x.from_numpy(np.array([3.0, -0.1, 40.0], np.float32))

    @qd.kernel
    def compute():
        for i in x:
            m, e = qd.frexp(x[i])
            y[i] = m

    with qd.ad.FwdMode(loss=y, param=x, seed=[1.0, 1.0, 1.0]):
        compute()
    _, exponent = np.frexp(x.to_numpy())
    np.testing.assert_allclose(y.dual.to_numpy(), np.ldexp(1.0, -exponent), rtol=1e-6)


@test_utils.test()
def test_bit_ops_carry_no_gradient_and_integer_factors_act_as_constants():
    n = 6
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    bits = qd.field(qd.i32, shape=n)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.arange(1, n + 1, dtype=np.float32) * 0.7)
    bits.from_numpy(np.array([0, 1, 7, 255, -1, 1 << 20], np.int32))

    @qd.kernel
    def compute():
        for i in x:
            weight = qd.math.popcnt(bits[i]) + qd.math.clz(bits[i]) + qd.math.ffs(bits[i])
            same = qd.bit_cast(qd.bit_cast(x[i], qd.i32), qd.f32)
            loss[None] += x[i] * weight + same

    with qd.ad.Tape(loss=loss):
        compute()
    w = [_popcnt(v, 32) + _clz(v, 32) + _ffs(v, 32) for v in bits.to_numpy().tolist()]
    np.testing.assert_array_equal(x.grad.to_numpy(), np.array(w, np.float32))


@test_utils.test(require=qd.extension.data64, default_fp=qd.f64)
def test_raw_div_and_mod_gradients_on_floats():
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    y = qd.field(qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x[None], y[None] = -7.3, 2.1

    @qd.kernel
    def compute():
        loss[None] = qd.raw_div(x[None], y[None]) + 3.0 * qd.raw_mod(x[None], y[None])

    with qd.ad.Tape(loss=loss):
        compute()

    def f(a, b):
        return a / b + 3.0 * math.fmod(a, b)
    h = 1e-6
    dx = (f(-7.3 + h, 2.1) - f(-7.3 - h, 2.1)) / (2 * h)
    dy = (f(-7.3, 2.1 + h) - f(-7.3, 2.1 - h)) / (2 * h)
    assert x.grad[None] == pytest.approx(dx, rel=1e-6)
    assert y.grad[None] == pytest.approx(dy, rel=1e-6)


@test_utils.test()
def test_logical_not_of_vectors_and_run_time_values():
    v = qd.lang.ops.logical_not(qd.Vector([0, 3, -1]))
    assert list(v.to_numpy()) == [1, 0, 0]
    out = qd.field(qd.i32, shape=3)

    @qd.kernel
    def run(a: qd.i32):
        out[0] = qd.lang.ops.logical_not(a)
        out[1] = qd.lang.ops.logical_not(a - a)
        out[2] = qd.lang.ops.logical_not(qd.Vector([a, 0]))[1]

    run(5)
    assert list(out.to_numpy()) == [0, 1, 1]
