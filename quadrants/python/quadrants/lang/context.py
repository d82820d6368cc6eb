"""The kernel being compiled, for intrinsics called from kernel code."""
import numbers

from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, GlobalRef, Var
# The stack of kernels being compiled lives below Expr (whose shape proxy
# builds IR); these names keep quadrants.lang.context's.
from quadrants.lang.kernel_stack import _stack, builder, current, pop, push  # noqa: F401 pylint: disable=unused-import


def load(x):
    """The value of x: loads variables and global elements."""
    ctx = _stack.contexts[-1]
    if isinstance(x, Var):
        return Expr(ctx.builder.local_load(x.alloca), x.dtype)
    if isinstance(x, GlobalRef):
        value = ctx.builder.global_load(x.ptr)
        if x.place is not None and x.place in getattr(ctx, "stopped_places", ()):
            value = ctx.builder.unary("stop_grad", value)
        return Expr(value, x.dtype)
    if isinstance(x, Composite):
        return x._load()
    return x


def literal_type(value, like=None):
    """The dtype a Python literal takes next to `like` (an Expr or None)."""
    if isinstance(value, bool):
        return types.u1
    if isinstance(value, numbers.Integral):
        if like is not None and like != types.u1 and (like.is_float or fits(value, like)):
            return like
        if -2**31 <= value < 2**31 and fits(value, runtime.default_ip()):
            return runtime.default_ip()
        # Too wide for the other operand: widen, and promotion follows.
        return types.i64 if value < 2**63 else types.u64
    if isinstance(value, numbers.Real):
        if like is not None and like.is_float:
            return like
        return runtime.default_fp()
    raise QuadrantsTypeError(f"cannot use {type(value).__name__} value {value!r} in a kernel "
                             f"(unsupported operand type {type(value).__name__})")


def fits(value, dtype):
    if dtype.is_signed:
        return -2**(dtype.bits - 1) <= value < 2**(dtype.bits - 1)
    return 0 <= value < 2**dtype.bits


def constant(value, dtype):
    b = builder()
    if dtype.is_float:
        return Expr(b.const_float(dtype.name, float(value)), dtype)
    return Expr(b.const_int(dtype.name, int(value)), dtype)


def to_expr(x, like=None):
    """An Expr for x: loads runtime values, materializes Python numbers."""
    x = load(x)
    if isinstance(x, Expr):
        return x
    if isinstance(x, Composite):
        raise QuadrantsTypeError(f"expected a scalar, got {x._describe()}")
    return constant(x, literal_type(x, like.dtype if isinstance(like, Expr) else like))
