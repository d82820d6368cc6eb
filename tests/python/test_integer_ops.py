"""qd.bit_shr (the logical right shift, against numpy's unsigned shift) and
integer powers with negative exponents."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_bit_shr_fills_zeros_from_the_left():
    @qd.kernel
    def shr32(a: qd.i32, b: qd.i32) -> qd.i32:
        return qd.bit_shr(a, b)

    @qd.kernel
    def shr8(a: qd.i8, b: qd.i32) -> qd.i32:
        return qd.i32(qd.bit_shr(a, b))

    @qd.kernel
    def shr_vec(a: qd.i32) -> qd.i32:
        v = qd.bit_shr(qd.Vector([a, -a]), 4)
        return v[0] + v[1]

    for value, shift in ((1000, 3), (-1000, 3), (-1, 31), (-1, 0), (123456789, 7)):
        assert shr32(value, shift) == np.int32(np.uint32(value % 2**32) >> shift)
    assert shr8(-2, 1) == 127
    assert shr_vec(64) == 4 + ((2**32 - 64) >> 4)
    assert qd.bit_shr(-16, 2) == (2**32 - 16) >> 2  # host: the default int type's bits


@test_utils.test()
def test_an_integer_to_a_negative_constant_power_is_refused():
    @qd.kernel
    def power(x: qd.i32, y: qd.template()) -> qd.i32:
        return x**y

    @qd.kernel
    def through_pow(x: qd.i64) -> qd.i64:
        return qd.pow(x, -2)

    assert power(3, 4) == 81
    for call in (lambda: power(10, -1), lambda: through_pow(2)):
        with pytest.raises(qd.QuadrantsRuntimeError, match="negative integer power"):
            call()

    @qd.kernel
    def float_base(x: qd.f32) -> qd.f32:
        return x**-2

    assert float_base(2.0) == 0.25


def _reference_fns(mask, base, offset):
    """The bit scan CUDA's __fns describes, one position at a time."""
    if offset == 0:
        return base if base < 32 and (mask >> base) & 1 else 0xFFFFFFFF
    order = range(base, 32) if offset > 0 else range(min(base, 31), -1, -1)
    hits = [p for p in order if (mask >> p) & 1]
    return hits[abs(offset) - 1] if abs(offset) <= len(hits) else 0xFFFFFFFF


@test_utils.test()
def test_fns_finds_the_nth_set_bit_up_or_down_from_base():
    @qd.kernel
    def fns(mask: qd.u32, base: qd.u32, offset: qd.i32) -> qd.u32:
        return qd.math.fns(mask, base, offset)

    rng = np.random.default_rng(5)
    masks = [0, 0xFFFFFFFF, 1, 0x80000000, 0x0F0F00F0] + [int(m) for m in
                                                           rng.integers(0, 2**32, 6)]
    for mask in masks:
        for base in (0, 3, 16, 31, 32, 40):
            for offset in (-33, -5, -1, 0, 1, 2, 7, 32):
                expected = _reference_fns(mask, base, offset)
                assert fns(mask, base, offset) == expected, (hex(mask), base, offset)
                assert qd.math.fns(mask, base, offset) == expected


@test_utils.test(require=qd.extension.data64)
def test_small_integer_powers_of_floats_are_exact_products():
    @qd.kernel
    def powers(x: qd.f64) -> qd.types.vector(5, qd.f64):
        v = qd.Vector([x, x])
        return qd.Vector([x**2, x**3, x**-2, qd.pow(x, 0), (v**2)[1]])

    for x in (4.0, 3.0, 1.1, -2.5):
        got = powers(x)
        assert list(got) == [x * x, x * x * x, 1.0 / (x * x), 1.0, x * x]

    x = qd.field(qd.f32, (), needs_grad=True)
    y = qd.field(qd.f32, (), needs_grad=True)

    @qd.kernel
    def cube():
        y[None] = x[None]**3

    x[None] = 1.5
    with qd.ad.Tape(loss=y):
        cube()
    assert x.grad[None] == pytest.approx(3 * 1.5**2, rel=1e-6)
