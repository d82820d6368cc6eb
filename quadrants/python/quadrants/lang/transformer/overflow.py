"""Integer overflow reports in debug mode: after a run-time integer +, -, *
or << the kernel checks whether the result wrapped and, if so, prints
"<Operation> overflow detected" with the kernel, the file:line and the
source line; the wrapped value is still the result."""
import linecache

from quadrants.lang import context, ops, printing, runtime, types
from quadrants.lang.expr import Expr

_OPERATIONS = {"add": "Addition", "sub": "Subtraction", "mul": "Multiplication",
               "shl": "Shift left"}


def _op(name, a, b):
    return ops.binary(name, a, b, None)


def _wrapped(name, a, b, r):
    """A u1 Expr: whether r = a <name> b wrapped around a's integer type."""
    dtype = r.dtype
    signed = dtype.is_signed
    if name == "add":
        if signed:  # the sign of r differs from the signs of both operands
            return _op("cmp_lt", _op("bit_and", _op("bit_xor", a, r), _op("bit_xor", b, r)), 0)
        return _op("cmp_lt", r, a)
    if name == "sub":
        if signed:  # the operands' signs differ and r's differs from a's
            return _op("cmp_lt", _op("bit_and", _op("bit_xor", a, b), _op("bit_xor", a, r)), 0)
        return _op("cmp_lt", a, b)
    if name == "shl":
        # Shifting back loses bits (or the shift is as wide as the type).
        back = _op("shr", r, b)
        too_wide = _op("cmp_ge", ops.cast(b, types.u64), dtype.bits)
        return _op("bit_or", _op("cmp_ne", back, a), too_wide)
    if dtype.bits < 64:  # mul: the exact product fits 64 bits
        wide = types.i64 if signed else types.u64
        exact = _op("mul", ops.cast(a, wide), ops.cast(b, wide))
        return _op("cmp_ne", exact, ops.cast(r, wide))
    # 64-bit mul: r / a == b exactly iff nothing wrapped; a = -1 (whose
    # quotient itself could wrap) and a = 0 are decided apart.
    zero = _op("cmp_eq", a, 0)
    if signed:
        minus_one = _op("cmp_eq", a, -1)
        divisor = ops.select(_op("bit_or", zero, minus_one), ops.cast(1, dtype), a)
        general = _op("cmp_ne", _op("floordiv", r, divisor), b)
        lowest = _op("cmp_eq", b, -(1 << 63))
        return ops.select(minus_one, lowest, _op("bit_and", general, _op("cmp_ne", a, 0)))
    divisor = ops.select(zero, ops.cast(1, dtype), a)
    return _op("bit_and", _op("cmp_ne", _op("floordiv", r, divisor), b), _op("cmp_ne", a, 0))


def check(compiler, node, name, a, b, result):
    """Emits the report for `result` = a <name> b of AST `node` when debug
    mode is on and it is a run-time integer operation that can wrap."""
    if name not in _OPERATIONS or not runtime.state.options.get("debug") or \
            not isinstance(result, Expr):
        return
    dtype = result.dtype
    if not dtype.is_integral or dtype.bits < 8:
        return
    a = context.to_expr(context.load(a), like=result)
    b = context.load(b)
    b = context.to_expr(b, like=result if name != "shl" or not isinstance(b, Expr) else b)
    if a.dtype != dtype or (name != "shl" and b.dtype != dtype):
        return  # mixed-type arithmetic promoted elsewhere: nothing to compare here
    builder = compiler.ctx.builder
    line = compiler.source.line_offset + getattr(node, "lineno", 1)
    text = linecache.getline(compiler.source.file, line).strip()
    message = (f"{_OPERATIONS[name]} overflow detected in {compiler.ctx.kind} "
               f"'{compiler.ctx.name}' at {compiler.source.file}:{line}: {text}")
    branch = builder.if_(_wrapped(name, a, b, result).stmt)
    builder.push_block(branch, 0)
    try:
        printing.kernel_print(message)
    finally:
        builder.pop_block()
