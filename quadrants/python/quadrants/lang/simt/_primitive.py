"""How qd.simt's functions reach the IR: one SIMT statement per primitive,
with its operands converted to the types the primitive takes."""
from quadrants.lang import context, runtime, types
from quadrants.lang.exception import QuadrantsSyntaxError
from quadrants.lang.expr import Composite, Expr
from quadrants.lang.ops import cast


def require_kernel(what):
    """Raises unless called from kernel code; `what` names the function."""
    if context.current() is None:
        raise QuadrantsSyntaxError(f"{what}() can only be called in kernel code")


def require_simt(what):
    """Raises upstream's ValueError where the backend has no blocks or
    subgroups (the CPU)."""
    require_kernel(what)
    if runtime.program().subgroup_size == 0:
        raise ValueError(f"{what} is not supported for arch {runtime.state.arch.name}")


def scalar(value, what):
    """`value` as a scalar run-time Expr."""
    value = context.load(value)
    if isinstance(value, Composite):
        raise QuadrantsSyntaxError(f"{what} takes a scalar, got {value._describe()}")
    return context.to_expr(value)


def as_type(value, dtype, what):
    return cast(scalar(value, what), dtype)


def emit(op, dtype, *operands):
    """The primitive `op` (its IR name) on Exprs `operands`; its value, of
    `dtype`, or None for a primitive without one."""
    stmt = context.builder().simt(op, "" if dtype is None else dtype.name,
                                  [o.stmt for o in operands])
    return None if dtype is None else Expr(stmt, dtype)


def value_op(op, value, *lanes, what):
    """A primitive moving `value` (of any scalar type) between lanes, with
    i32 lane operands."""
    v = scalar(value, what)
    return emit(op, v.dtype, v, *[as_type(lane, types.i32, what) for lane in lanes])
