"""Rounding, bit-level ops and C-style division: qd.round, qd.frexp,
qd.bit_cast, qd.raw_div, qd.raw_mod, and qd.math's clz, popcnt, ffs, isnan
and isinf. Inside a kernel they build IR; outside they compute on numbers."""
import math
import numbers

import numpy as np

from quadrants.lang import context, matrix, ops, types
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr
from quadrants.lang.ops import binary, cast, intrinsic, select


def _in_kernel():
    return context.current() is not None


def _value(x):
    return context.load(x) if _in_kernel() else x


def _entries(name, x):
    """The components of vector/matrix `x`, the argument of qd.`name`."""
    if not isinstance(x, matrix.Matrix):
        raise QuadrantsTypeError(f"{name}() needs a scalar or a vector/matrix, got "
                                 f"{x._describe()}")
    return x.entries


def _components(fn, x, name=None):
    """fn over the components of vector/matrix `x`."""
    return x._like([fn(e) for e in _entries(name or fn.__name__, x)])


def _zip_components(name, fn, a, b):
    """fn over matching components of a and b, a scalar broadcast."""
    a = matrix.Matrix(a) if isinstance(a, (list, tuple)) else a
    b = matrix.Matrix(b) if isinstance(b, (list, tuple)) else b
    shaped = a if isinstance(a, Composite) else b
    if not isinstance(shaped, matrix.Matrix):
        raise QuadrantsTypeError(f"{name}() needs scalars or vectors/matrices, got "
                                 f"{shaped._describe()}")

    def part(v, k):
        if not isinstance(v, Composite):
            return v
        if not isinstance(v, matrix.Matrix) or (v.n, v.m, v.ndim) != \
                (shaped.n, shaped.m, shaped.ndim):
            raise QuadrantsTypeError(f"{name}(): shapes do not match: "
                                     f"{a._describe() if isinstance(a, Composite) else a} and "
                                     f"{b._describe() if isinstance(b, Composite) else b}")
        return v.entries[k]
    return shaped._like([fn(part(a, k), part(b, k)) for k in range(len(shaped.entries))])


# ---- rounding ---------------------------------------------------------------

def _round(x):
    x = _value(x)
    if isinstance(x, Composite):
        return _components(_round, x)
    if isinstance(x, Expr):
        return Expr(context.builder().unary("round", x.stmt))
    return np.round(x)


@intrinsic
def round(x, dtype=None):  # pylint: disable=redefined-builtin
    """qd.round(x, dtype=None): x rounded to the nearest integer,
    component-wise, in x's float type, then cast to `dtype` when given.

    Run-time values round halfway cases away from zero (C's round: 2.5 -> 3,
    -2.5 -> -3, exactly for every float). Python numbers go through
    numpy.round, which rounds halfway cases to even, as upstream does. A
    run-time integer operand is a QuadrantsTypeError (round takes reals)."""
    result = _round(x)
    return result if dtype is None else cast(result, dtype)


@intrinsic
def frexp(x):
    """qd.frexp(x) -> (mantissa, exponent), component-wise, as numpy.frexp:
    x == mantissa * 2**exponent with 0.5 <= |mantissa| < 1; the mantissa has
    x's float type, the exponent is an i32. Zero, infinities and NaN give
    (x, 0); subnormal inputs are exact on every backend. Under autodiff the
    mantissa's derivative is 2**-exponent (0 at x == 0); the exponent, an
    integer, carries none."""
    x = _value(x)
    if isinstance(x, Composite):
        pairs = [frexp(e) for e in _entries("frexp", x)]
        return x._like([p[0] for p in pairs]), x._like([p[1] for p in pairs])
    if isinstance(x, Expr):
        b = context.builder()
        return (Expr(b.unary("frexp_mantissa", x.stmt)),
                Expr(b.unary("frexp_exponent", x.stmt)))
    return np.frexp(x)


# ---- bits -------------------------------------------------------------------

@intrinsic
def bit_cast(x, dtype):
    """qd.bit_cast(x, dtype): the bits of x read as `dtype` (C++'s
    reinterpret_cast), component-wise. Both types must have the same width
    (f32 <-> i32/u32, f64 <-> i64/u64, f16 <-> i16/u16, i32 <-> u32, ...);
    other pairs, and u1, are a QuadrantsTypeError. Outside kernels x must be
    a numpy scalar, whose type fixes its bits. It has no derivative."""
    dtype = types.normalize(dtype, "qd.bit_cast(x, dtype): dtype")
    x = _value(x)
    if isinstance(x, Composite):
        return _components(lambda e: bit_cast(e, dtype), x, "bit_cast")
    if isinstance(x, Expr) or (_in_kernel() and isinstance(x, (numbers.Number, np.generic))):
        x = context.to_expr(x)
        if x.dtype == dtype:
            return x
        return Expr(context.builder().bit_cast(x.stmt, dtype.name), dtype)
    if not isinstance(x, np.generic):
        raise QuadrantsTypeError(f"qd.bit_cast() outside a kernel needs a numpy scalar such as "
                                 f"np.float32(x), whose type fixes its bits; got {x!r}")
    target = types.to_numpy_dtype(dtype)
    if x.dtype == np.bool_ or dtype == types.u1 or x.dtype.itemsize != target.itemsize:
        raise QuadrantsTypeError(f"qd.bit_cast() needs types of the same size (and not u1): "
                                 f"{x.dtype} and {dtype}")
    return np.array(x).view(target)[()]


def _host_bit_count(name, x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, np.integer):
        raise QuadrantsTypeError(
            f"qd.math.{name}() outside a kernel needs a numpy integer such as np.int32(x): "
            f"the result depends on the operand's width, which {x!r} does not have")
    width = x.dtype.itemsize * 8
    bits = int(x) & ((1 << width) - 1)
    if name == "popcnt":
        return bin(bits).count("1")
    if name == "clz":
        return width - bits.bit_length()
    return (bits & -bits).bit_length()  # ffs: 1-based lowest set bit, 0 for none


def _bit_count(name, doc):
    @intrinsic
    def op(x):
        x = _value(x)
        if isinstance(x, Composite):
            return _components(op, x)
        if _in_kernel() and isinstance(x, numbers.Integral) and not isinstance(x, bool):
            x = context.to_expr(x)
        if isinstance(x, Expr):
            return Expr(context.builder().unary(name, x.stmt))
        return _host_bit_count(name, x)
    op.__name__ = name
    op.__doc__ = doc
    return op


_BIT_COUNT_NOTE = (" Integer operands of any width (i8 to u64), counted over the "
                   "unsigned bit pattern; the result is an i32. A float operand is a "
                   "QuadrantsTypeError.")
clz = _bit_count("clz", "qd.math.clz(x): the number of leading zero bits of x "
                 "(clz(0) is x's width, clz(-1) is 0)." + _BIT_COUNT_NOTE)
popcnt = _bit_count("popcnt", "qd.math.popcnt(x): the number of set bits of x "
                    "(popcnt(-1) is x's width)." + _BIT_COUNT_NOTE)
ffs = _bit_count("ffs", "qd.math.ffs(x): the 1-based position of the lowest set bit "
                 "of x, 0 when x is 0 (CUDA's __ffs)." + _BIT_COUNT_NOTE)


_NOT_FOUND = 0xFFFFFFFF


def _host_fns(mask, base, offset):
    """fns on Python integers: the scan PTX's fns describes."""
    mask, base = int(mask) & _NOT_FOUND, int(base) & _NOT_FOUND
    if offset == 0:
        return base if base < 32 and (mask >> base) & 1 else _NOT_FOUND
    positions = range(base, 32) if offset > 0 else range(min(base, 31), -1, -1)
    count = abs(int(offset))
    for pos in positions:
        if (mask >> pos) & 1:
            count -= 1
            if count == 0:
                return pos
    return _NOT_FOUND


def _nth_set_bit(m, n):
    """The position of the n-th (1-based) set bit of u32 `m` from the
    bottom, found by halving the window with popcounts (five steps, no
    loop); meaningful when 1 <= n <= popcnt(m)."""
    u32 = types.u32
    pos = context.to_expr(0, like=u32)
    for width in (16, 8, 4, 2, 1):
        window = ops.bit_and(ops.bit_sar(m, pos), context.constant((1 << width) - 1, u32))
        low = ops.cast(popcnt(window), u32)
        skip = ops.cmp_lt(low, n)
        n = ops.select(skip, ops.sub(n, low), n)
        pos = ops.select(skip, ops.add(pos, context.constant(width, u32)), pos)
    return pos


@intrinsic
def fns(mask, base, offset):
    """qd.math.fns(mask, base, offset): the bit position of the |offset|-th
    set bit of the 32-bit `mask` counting upward from bit `base` (offset >
    0) or downward from it (offset < 0); for offset 0, `base` itself when
    that bit is set. 0xFFFFFFFF when there is no such bit (CUDA's __fns).
    The result is a u32."""
    mask, base, offset = _value(mask), _value(base), _value(offset)
    if not _in_kernel():
        return _host_fns(mask, base, offset)
    u32, i32 = types.u32, types.i32
    mask = ops.cast(context.to_expr(mask), u32)
    base = ops.cast(context.to_expr(base), u32)
    offset = ops.cast(context.to_expr(offset), i32)
    c = lambda v: context.constant(v, u32)  # noqa: E731
    in_range = ops.cmp_lt(base, c(32))
    shift = ops.select(in_range, base, c(0))
    # Bits at or above base, and at or below it.
    above = ops.select(in_range, ops.bit_and(mask, ops.bit_shl(c(_NOT_FOUND), shift)), c(0))
    below_mask = ops.select(ops.cmp_lt(base, c(31)),
                            ops.sub(ops.bit_shl(c(1), ops.add(shift, c(1))), c(1)),
                            c(_NOT_FOUND))
    below = ops.bit_and(mask, below_mask)
    n = ops.cast(ops.abs(offset), u32)
    up_count = ops.cast(popcnt(above), u32)
    down_count = ops.cast(popcnt(below), u32)
    up = ops.select(ops.cmp_le(n, up_count), _nth_set_bit(above, n), c(_NOT_FOUND))
    down_rank = ops.sub(ops.add(down_count, c(1)), n)
    down = ops.select(ops.cmp_le(n, down_count), _nth_set_bit(below, down_rank),
                      c(_NOT_FOUND))
    here = ops.select(ops.bit_and(in_range, ops.cmp_ne(ops.bit_and(ops.bit_sar(mask, shift),
                                                                   c(1)), c(0))),
                      base, c(_NOT_FOUND))
    zero = context.constant(0, i32)
    return ops.select(ops.cmp_gt(offset, zero), up,
                      ops.select(ops.cmp_lt(offset, zero), down, here))


# ---- C-style division -------------------------------------------------------

def _c_div_host(a, b):
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    return a / b


def _c_mod_host(a, b):
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return a - b * _c_div_host(a, b)
    return math.fmod(a, b)


def _raw(name, a, b):
    a, b = _value(a), _value(b)
    if isinstance(a, (Composite, list, tuple)) or isinstance(b, (Composite, list, tuple)):
        return _zip_components(name, lambda x, y: _raw(name, x, y), a, b)
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        return _c_div_host(a, b) if name == "raw_div" else _c_mod_host(a, b)
    a = context.to_expr(a, like=b if isinstance(b, Expr) else None)
    b = context.to_expr(b, like=a)
    if name == "raw_div" and (a.dtype.is_float or b.dtype.is_float):
        return binary("div", a, b, None)
    # Python's // and % floor; C truncates toward zero. They differ by one
    # step exactly where the remainder is non-zero and the signs differ.
    remainder = binary("mod", a, b, None)
    signs_differ = binary("cmp_ne", binary("cmp_lt", a, 0, None),
                          binary("cmp_lt", b, 0, None), None)
    fix = binary("logical_and", binary("cmp_ne", remainder, 0, None), signs_differ, None)
    if name == "raw_mod":
        return select(fix, binary("sub", remainder, b, None), remainder)
    quotient = binary("floordiv", a, b, None)
    return select(fix, binary("add", quotient, 1, None), quotient)


@intrinsic
def raw_div(x1, x2):
    """qd.raw_div(x1, x2): C-style division, component-wise. Integer operands
    truncate toward zero (raw_div(-7, 2) is -3, where -7 // 2 is -4); with a
    float operand it is x1 / x2."""
    return _raw("raw_div", x1, x2)


@intrinsic
def raw_mod(x1, x2):
    """qd.raw_mod(x1, x2): C-style remainder, component-wise: it takes the
    dividend's sign (raw_mod(-4, 3) is -1, where -4 % 3 is 2), so
    x1 == raw_div(x1, x2) * x2 + raw_mod(x1, x2) for integers; floats follow
    C's fmod."""
    return _raw("raw_mod", x1, x2)


# ---- classification ---------------------------------------------------------

# Per float width: the unsigned type of its bits, the mask of all but the
# sign bit, and the bits of +infinity.
_FLOAT_BITS = {16: (types.u16, 0x7FFF, 0x7C00),
               32: (types.u32, 0x7FFFFFFF, 0x7F800000),
               64: (types.u64, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000)}


def _classify(name, comparison, host_fn, doc):
    @intrinsic
    def op(x):
        x = _value(x)
        if isinstance(x, Composite):
            return _components(op, x)
        if not isinstance(x, Expr):
            if isinstance(x, np.ndarray):
                return getattr(np, name)(x)
            return host_fn(float(x))
        if not x.dtype.is_float:
            return context.constant(0, types.u1)  # integers are finite numbers
        # On the bits: exact whatever the backend's float comparisons do.
        bits_type, magnitude_mask, infinity = _FLOAT_BITS[x.dtype.bits]
        magnitude = binary("bit_and", bit_cast(x, bits_type), magnitude_mask, None)
        return binary(comparison, magnitude, infinity, None)
    op.__name__ = name
    op.__doc__ = doc
    return op


isnan = _classify("isnan", "cmp_gt", math.isnan,
                  "qd.math.isnan(x): whether x is a NaN (of either sign), "
                  "component-wise; False for integers.")
isinf = _classify("isinf", "cmp_eq", math.isinf,
                  "qd.math.isinf(x): whether x is +infinity or -infinity, "
                  "component-wise; False for integers.")
