"""What the device-wide algorithms share: the block size and depth rules,
argument checks, identities, and how an op emits its phases.

An op is an intrinsic called at the top level of the user's kernel. It
compiles each phase (a kernel-language function) as kernel top-level code
(source_inline with top_level=True), so each phase's loop is a parallel
task of its own that runs after the previous phase's has finished.

The element count n is a run-time value. A top-level value computed
before a side effect cannot be carried into a later task (offload.cc), so
an op first stores n into a slot of its own (the "stash": scratch[0], or
the count output of select / reduce_by_key_add) and every phase reads it
back from there. The phases that store (the stash, a final count) are
one-iteration loops rather than serial code, so that the serial code
between two phases only computes the next loop's bound: the offloader
cannot yet recompute a bound that follows stores in the same stretch of
serial code when the bound reads through a pointer an earlier task also
uses (it points the bound at that serial task's private copy).
"""
import math
import numbers

from quadrants.lang import context, ops, source_inline, types
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, GlobalRef, NdarrayArg, Var
from quadrants.lang.field import Field
from quadrants.lang.struct import StructField

BLOCK_DIM = 256
MAX_LOG256_MAX_N = 4  # 256 ** 4 == 2 ** 32 covers every i32-indexed tensor

SCALAR_DTYPES = (types.i32, types.u32, types.f32, types.i64, types.u64, types.f64)


def intrinsic(fn):
    fn._qd_intrinsic = True
    return fn


def validate_log256_max_n(log256_max_n, what="log256_max_n"):
    if isinstance(log256_max_n, bool) or not isinstance(log256_max_n, numbers.Integral):
        raise ValueError(f"{what} must be a compile-time int, got {log256_max_n!r}")
    if log256_max_n < 1:
        raise ValueError(f"{what}={log256_max_n} must be at least 1")
    if log256_max_n > MAX_LOG256_MAX_N:
        raise ValueError(f"log256_max_n={log256_max_n} exceeds the maximum of "
                         f"{MAX_LOG256_MAX_N}: tensors are indexed by 32-bit ints, and "
                         f"256 ** {MAX_LOG256_MAX_N} == 2 ** 32 elements already cover "
                         f"that range")
    return int(log256_max_n)


def depth_for_n(n):
    """The smallest D >= 1 with 256 ** D >= n."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"the element count must be a non-negative int, got {n!r} (pass "
                         f"log256_max_n explicitly when sizing from a run-time count)")
    depth, cap = 1, BLOCK_DIM
    while cap < n:
        cap *= BLOCK_DIM
        depth += 1
    return depth


def at_least_one(slots):
    """max(slots, 1) for an int or a run-time count (zero-sized allocations
    are illegal)."""
    return ops.max(slots, 1)


def in_kernel_top_level(what):
    ctx = context.current()
    if ctx is None:
        raise QuadrantsSyntaxError(f"{what} can only be called in kernel code")
    if ctx.in_parallel:
        raise QuadrantsSyntaxError(f"{what} must be called at the top level of a kernel, "
                                   f"not inside a parallel loop: each of its phases is a "
                                   f"parallel loop of its own")


def buffer_dtype(buf, what, name):
    """The scalar dtype of a 1-D field or ndarray argument."""
    if isinstance(buf, Field):
        if len(buf.shape) != 1:
            raise QuadrantsTypeError(f"{what}: {name} must be 1-D, got a field of shape "
                                     f"{buf.shape}")
        return buf.dtype
    if isinstance(buf, NdarrayArg):
        if buf.ndim != 1 or buf.element is not None:
            raise QuadrantsTypeError(f"{what}: {name} must be a 1-D ndarray of scalars")
        return buf.dtype
    raise QuadrantsTypeError(f"{what}: {name} must be a 1-D field or ndarray, got "
                             f"{type(buf).__name__}")


def is_buffer(buf):
    return isinstance(buf, (Field, NdarrayArg, MatrixField, StructField))


def check_dtype(what, name, dtype, allowed=SCALAR_DTYPES):
    try:
        dtype = types.normalize(dtype)
    except QuadrantsTypeError:
        dtype = None
    if dtype not in allowed:
        names = ", ".join(t.name for t in allowed)
        raise NotImplementedError(f"{what}: {name} must be one of {names}, got {dtype!r}")
    return dtype


def check_same(what, name, buf, dtype):
    found = buffer_dtype(buf, what, name)
    if found != dtype:
        raise QuadrantsTypeError(f"{what}: {name} holds {found}, expected {dtype}")


def check_count(what, n):
    """n as a value a phase can store: an i32 run-time value or an int."""
    if context.current() is not None:
        n = context.load(n)
    if isinstance(n, Composite) or isinstance(n, (Var, GlobalRef)) or \
            (isinstance(n, Expr) and not n.dtype.is_integral) or \
            (not isinstance(n, Expr) and (isinstance(n, bool) or
                                          not isinstance(n, numbers.Integral))):
        raise QuadrantsTypeError(f"{what}: n must be an integer count (e.g. count[0]), got "
                                 f"{n!r}")
    return n


def identity(op, dtype):
    """The value that leaves `op` unchanged, as a Python number."""
    if op == "add":
        return 0.0 if dtype.is_float else 0
    if dtype.is_float:
        return math.inf if op == "min" else -math.inf
    if dtype.is_signed:
        big = 2 ** (dtype.bits - 1)
        return big - 1 if op == "min" else -big
    return 2 ** dtype.bits - 1 if op == "min" else 0


@intrinsic
def add(a, b):
    return ops.binary("add", a, b, lambda x, y: x + y)


COMBINE = {"add": add, "min": ops.min, "max": ops.max}


def phase(fn, **bindings):
    """Compiles phase `fn` as kernel top-level code."""
    source_inline.inline(fn, bindings, top_level=True)
