"""Math, casts and atomics. Inside a kernel they build IR; outside they
compute on Python numbers."""
import builtins
import math
import numbers
import operator

import numpy as np

from quadrants.lang import context, python_backend, runtime, types
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsRuntimeError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.expr import Composite, Expr, GlobalRef, Var, is_runtime
from quadrants.lang.hooks import Hooks

# Vector/matrix operands: quadrants.lang.matrix builds Matrix on this module
# and registers its class and component-wise arithmetic here. Field only
# names a field in an error message.
composites = Hooks("quadrants.lang.matrix", "Matrix", "elementwise", "atomic")
fields = Hooks("quadrants.lang.field", "Field")


def intrinsic(fn):
    fn._qd_intrinsic = True
    return fn


def _unary(name, python_fn):
    @intrinsic
    def op(x):
        x = context.load(x) if context.current() else x
        if isinstance(x, Composite):
            return _map_composite(op, x)
        if isinstance(x, Expr):
            if name in _REAL_ONLY and not x.dtype.is_float:
                # Upstream's wording.
                raise QuadrantsTypeError(f"'{name}' takes real inputs only, got {x.dtype}")
            return Expr(context.builder().unary(name, x.stmt))
        return python_fn(x)
    op.__name__ = name
    op.__doc__ = f"qd.{name}(x), elementwise."
    return op


# Rounding an integer is a mistake more often than not; upstream refuses it.
_REAL_ONLY = ("floor", "ceil")


def _rsqrt(x):
    return 1.0 / math.sqrt(x)


sqrt = _unary("sqrt", math.sqrt)
rsqrt = _unary("rsqrt", _rsqrt)
sin = _unary("sin", math.sin)
cos = _unary("cos", math.cos)
tan = _unary("tan", math.tan)
tanh = _unary("tanh", math.tanh)
exp = _unary("exp", math.exp)
log = _unary("log", math.log)
asin = _unary("asin", math.asin)
acos = _unary("acos", math.acos)


def _rounding(name, python_fn, what):
    """qd.<name>(x, dtype=None): `what`, elementwise, in x's type, then cast
    to `dtype` when given."""
    unary = _unary(name, python_fn)

    @intrinsic
    def op(x, dtype=None):
        result = unary(x)
        return result if dtype is None else cast(result, dtype)
    op.__name__ = name
    op.__doc__ = f"qd.{name}(x, dtype=None): {what}, elementwise, in x's type, then " \
                 f"cast to `dtype` when given."
    return op


floor = _rounding("floor", math.floor, "the largest integer not above x")


_stop_grad_value = _unary("stop_grad", lambda v: v)


@intrinsic
def stop_grad(x):
    """qd.stop_grad(x): for a value, x itself, through which no gradient
    flows (reverse and forward mode treat it as a constant). For a field
    (upstream's statement form, `qd.stop_grad(f)`), the rest of the task
    (the enclosing top-level loop) reads f as a constant: no gradient
    reaches f from there."""
    places = _field_places(x)
    if places is None:
        return _stop_grad_value(x)
    ctx = context.current()
    if ctx is None:
        raise QuadrantsSyntaxError("qd.stop_grad(field) can only be called in kernel code")
    ctx.stopped_places.update(places)
    return None


@intrinsic
def volatile_load(x):
    """qd.volatile_load(x): the value of the field or ndarray element x (a
    scalar, or each component of a vector/matrix element) read from memory
    every time it runs: the compiler neither hoists nor merges the load, so
    a loop can wait on a flag another thread writes (spin waits, decoupled
    look-back scans)."""
    if context.current() is None:
        raise QuadrantsSyntaxError("qd.volatile_load() can only be called in kernel code")
    if _field_places(x) is not None:
        name = getattr(x, "name", None) or "f"
        raise QuadrantsSyntaxError(f"qd.volatile_load() takes one element ({name}[i]), not a "
                                   f"Field directly")
    entries = x.entries if isinstance(x, Composite) and hasattr(x, "entries") else [x]
    if any(isinstance(e, Var) for e in entries):
        raise QuadrantsTypeError("qd.volatile_load() of a local variable or local array: "
                                 "no other thread can write it, so there is nothing to "
                                 "wait for; read a field or ndarray element")
    if not entries or not all(isinstance(e, GlobalRef) for e in entries):
        raise QuadrantsSyntaxError(f"qd.volatile_load() needs an lvalue (a field or ndarray "
                                   f"element), got {type(x).__name__}")
    b = context.builder()
    values = [Expr(b.global_load(e.ptr, True), e.dtype) for e in entries]
    return x._like(values) if isinstance(x, Composite) else values[0]


def _field_places(x):
    """The place ids of field `x` (every component of a vector, matrix or
    struct field), or None when x is not a field."""
    leaves = x._leaf_fields() if hasattr(x, "_leaf_fields") else [x]
    if leaves and all(callable(getattr(f, "place_id", None)) and hasattr(f, "snode")
                      for f in leaves):
        return {f.place_id() for f in leaves}
    return None


ceil = _rounding("ceil", math.ceil, "the smallest integer not below x")


abs = _unary("abs", builtins.abs)  # pylint: disable=redefined-builtin
# `not x` elementwise (1 where x is 0, else 0), as upstream's qd.lang.ops has it.
logical_not = _unary("logical_not", lambda v: int(not v))
bit_not = _unary("bit_not", lambda v: ~v)


def _map_composite(fn, x):
    if not isinstance(x, composites.Matrix):
        raise QuadrantsTypeError(f"{getattr(fn, '__name__', fn)}() needs a scalar or a "
                                 f"vector/matrix, got {x._describe()}")
    return x._like([fn(e) for e in x.entries])


def binary(name, a, b, python_fn):
    """a `name` b, building IR when either side is a run-time value."""
    if context.current() is not None:
        a, b = context.load(a), context.load(b)
    if isinstance(a, Composite) or isinstance(b, Composite):
        return composites.elementwise(name, a, b, python_fn)
    if isinstance(a, Expr) or isinstance(b, Expr):
        ea = context.to_expr(a, like=b if isinstance(b, Expr) else None)
        eb = context.to_expr(b, like=ea)
        if name in _BITWISE and (ea.dtype.is_float or eb.dtype.is_float):
            # The first words are upstream's.
            raise QuadrantsTypeError(f"unsupported operand type(s) for '{_BITWISE[name]}': "
                                     f"'{ea.dtype}' and '{eb.dtype}'; bitwise operators "
                                     f"take integers")
        if name in _SHIFTS and ea.dtype != eb.dtype and ea.dtype.is_integral and \
                eb.dtype.is_integral:
            # A shift keeps its left operand's type, as upstream's does.
            eb = context.to_expr(cast(eb, ea.dtype))
        return Expr(context.builder().binary(name, ea.stmt, eb.stmt))
    return python_fn(a, b)


_SHIFTS = ("shl", "shr")
_BITWISE = {"bit_and": "&", "bit_or": "|", "bit_xor": "^", "shl": "<<", "shr": ">>"}


def _named_binary(name, ir_name, python_fn):
    """qd.lang.ops.<name>(a, b): the operator as a function (upstream's
    names), elementwise on vectors and matrices."""
    @intrinsic
    def op(a, b):
        return binary(ir_name, a, b, python_fn)
    op.__name__ = name
    op.__doc__ = f"ops.{name}(a, b): `a {name} b` as a function, elementwise."
    return op


add = _named_binary("add", "add", operator.add)
sub = _named_binary("sub", "sub", operator.sub)
mul = _named_binary("mul", "mul", operator.mul)
truediv = _named_binary("truediv", "div", operator.truediv)
floordiv = _named_binary("floordiv", "floordiv", operator.floordiv)
mod = _named_binary("mod", "mod", operator.mod)
bit_and = _named_binary("bit_and", "bit_and", operator.and_)
bit_or = _named_binary("bit_or", "bit_or", operator.or_)
bit_xor = _named_binary("bit_xor", "bit_xor", operator.xor)
bit_shl = _named_binary("bit_shl", "shl", operator.lshift)
bit_sar = _named_binary("bit_sar", "shr", operator.rshift)
_UNSIGNED = {"i8": types.u8, "i16": types.u16, "i32": types.u32, "i64": types.u64}


@intrinsic
def bit_shr(x, n):
    """qd.bit_shr(x, n): the logical right shift, zeros entering from the
    left for signed integers too (`x >> n` and bit_sar keep the sign),
    elementwise on vectors and matrices."""
    if context.current() is not None:
        x, n = context.load(x), context.load(n)
    if isinstance(x, Composite):
        shifts = n.entries if isinstance(n, Composite) else [n] * len(x.entries)
        return x._like([bit_shr(e, k) for e, k in zip(x.entries, shifts)])
    if context.current() is None:  # Python ints, as the default int type holds them
        return (x % (1 << types.normalize(runtime.default_ip()).bits)) >> n
    ex = context.to_expr(x, like=n if isinstance(n, Expr) else None)
    unsigned = _UNSIGNED.get(ex.dtype.name)
    if unsigned is None:  # unsigned already, or not an integer (refused by shr)
        return binary("shr", ex, n, operator.rshift)
    return cast(binary("shr", cast(ex, unsigned), n, operator.rshift), ex.dtype)


cmp_lt = _named_binary("cmp_lt", "cmp_lt", operator.lt)
cmp_le = _named_binary("cmp_le", "cmp_le", operator.le)
cmp_gt = _named_binary("cmp_gt", "cmp_gt", operator.gt)
cmp_ge = _named_binary("cmp_ge", "cmp_ge", operator.ge)
cmp_eq = _named_binary("cmp_eq", "cmp_eq", operator.eq)
cmp_ne = _named_binary("cmp_ne", "cmp_ne", operator.ne)


_py_min, _py_max = builtins.min, builtins.max


@intrinsic
def atan2(y, x):
    """qd.atan2(y, x): the angle of the point (x, y), in (-pi, pi]."""
    return binary("atan2", y, x, math.atan2)


@intrinsic
def pow(x, y):  # pylint: disable=redefined-builtin
    """qd.pow(x, y): x ** y (an integer power of integers stays an
    integer, so a negative integer exponent of one is refused)."""
    return power(x, y)


def power(x, y):
    """x ** y, the operator and qd.pow. A float raised to a constant integer
    power of at most 32 in magnitude is multiplications (by squaring), so
    x ** 2 is exact where a backend's pow is not (f64 on Vulkan, which
    has no f64 pow instruction)."""
    if context.current() is None:
        return binary("pow", x, y, lambda a, b: a ** b)
    x, y = context.load(x), context.load(y)
    check_power(x, y)
    if isinstance(y, numbers.Integral) and not isinstance(y, bool) and builtins.abs(y) <= 32:
        if isinstance(x, Composite) and isinstance(x, composites.Matrix) and \
                all(isinstance(e, Expr) and e.dtype.is_float for e in x.entries):
            return x._like([power(e, y) for e in x.entries])
        if isinstance(x, Expr) and x.dtype.is_float:
            result, base, k = None, x, builtins.abs(y)
            while k:
                if k & 1:
                    result = base if result is None else binary("mul", result, base, None)
                k >>= 1
                if k:
                    base = binary("mul", base, base, None)
            if result is None:
                return context.constant(1.0, x.dtype)
            return result if y > 0 else binary("div", context.constant(1.0, x.dtype),
                                                 result, None)
    return binary("pow", x, y, lambda a, b: a ** b)


def check_power(x, y):
    """Refuses a run-time integer raised to a negative constant integer
    power, which has no value of the base's type (as upstream refuses it)."""
    if isinstance(x, Expr) and x.dtype.is_integral and isinstance(y, numbers.Integral) \
            and not isinstance(y, bool) and y < 0:
        raise QuadrantsRuntimeError(f"{x.dtype} ** {y}: an integer raised to a negative "
                                    f"integer power has no integer value; make the base a "
                                    f"float (qd.cast(x, qd.f32) ** {y})")


def _fold(name, python_fn):
    """qd.min / qd.max over two or more values, folded left to right."""
    @intrinsic
    def op(*args):
        result = args[0]
        for other in args[1:]:
            result = binary(name, result, other, python_fn)
        return result
    op.__name__ = name
    op.__doc__ = f"qd.{name}(a, b, ...), elementwise."
    return op


min = _fold("min", _py_min)  # pylint: disable=redefined-builtin
max = _fold("max", _py_max)  # pylint: disable=redefined-builtin


@intrinsic
def cast(x, dtype):
    """qd.cast(x, dtype): float -> int truncates toward zero."""
    if python_backend.active() and python_backend.is_tensor(x):
        return python_backend.cast(x, dtype)
    if context.current() is not None:
        x = context.load(x)
    if isinstance(x, Composite):
        return _map_composite(lambda e: cast(e, dtype), x)
    dtype = types.normalize(dtype)
    if isinstance(x, Expr):
        if x.dtype == dtype:
            return x
        return Expr(context.builder().cast(x.stmt, dtype.name), dtype)
    if not isinstance(x, (numbers.Number, np.generic)):
        raise QuadrantsTypeError(f"qd.cast() needs a number, got {x!r}")
    if dtype.is_float:
        value = float(np.array(x).astype(types.to_numpy_dtype(dtype)))
    elif dtype == types.u1:
        value = bool(x)
    else:
        value = int(np.array(math.trunc(x) if isinstance(x, float) else x).astype(
            types.to_numpy_dtype(dtype)))
    # Inside a kernel the result keeps the requested type.
    return context.constant(value, dtype) if context.current() is not None else value


@intrinsic
def random(dtype=float):
    """qd.random(dtype=float): a uniformly distributed random number, drawn in
    kernel code.

    Floats (float means qd.init's default_fp) are uniform in [0, 1): k / 2^p
    for a uniform integer 0 <= k < 2^p, with p = 24 for f32, 53 for f64 and
    11 for f16. Integer types get every value of the type with equal
    probability (i32 over [-2^31, 2^31), u32 over [0, 2^32), ...); u1 gives
    True or False.

    Each iteration of a parallel loop (and each run of the kernel's serial
    code) draws from its own SplitMix64 stream, which starts from a mix of
    qd.init(random_seed=...), the number of launches since qd.init, the
    task and the iteration index. So the same seed and the same sequence of
    launches give the same numbers, whatever the number of threads; another
    seed gives other numbers; and every launch draws new ones.

    A kernel that calls qd.random() cannot be differentiated (kernel.grad
    would replay it with different numbers): that is a compile error.
    """
    if context.current() is None:
        raise QuadrantsSyntaxError("qd.random() can only be called in kernel code")
    try:
        dtype = types.normalize(dtype)
    except QuadrantsTypeError:
        raise QuadrantsTypeError(f"qd.random(dtype): dtype must be a Quadrants scalar "
                                 f"type such as qd.f32, qd.f64 or qd.i32 (or float / "
                                 f"int), got {dtype!r}") from None
    return Expr(context.builder().random(dtype.name), dtype)


def _atomic(name, python_op, local_update=None):
    """qd.<name>(target, value): returns the old value. On a local variable
    the update is plain code: `local_update(old, value)`, or the binary op
    `python_op`."""
    @intrinsic
    def op(target, value):
        if python_backend.active():
            return python_backend.atomic(name, python_op, target, value)
        if isinstance(target, Composite):
            return composites.atomic(name, target, value)
        if not is_runtime(target):
            # The first words are upstream's.
            raise QuadrantsSyntaxError(f"cannot use a non-writable target as the first "
                                       f"operand of '{name}': qd.{name}() needs a "
                                       f"field/ndarray element or a local variable")
        if (python_op.startswith("bit_") and isinstance(target, (Var, GlobalRef))
                and target.dtype.is_float):
            what = (f"the {target.dtype.name} variable '{target.name}'"
                    if isinstance(target, Var) else
                    f"an element of a {target.dtype.name} field or ndarray")
            raise QuadrantsTypeError(f"qd.{name}() is a bitwise update and needs an integer "
                                     f"target; got {what}")
        if isinstance(target, Var):
            old = context.load(target)
            new = (local_update(old, value) if local_update is not None
                   else binary(python_op, old, value, None))
            context.builder().local_store(target.alloca, context.to_expr(new).stmt)
            return old
        if not isinstance(target, GlobalRef):
            raise QuadrantsTypeError(f"qd.{name}() cannot update a read-only value")
        v = context.to_expr(value, like=target.dtype)
        if v.dtype != target.dtype:
            v = cast(v, target.dtype)
        return Expr(context.builder().atomic(name, target.ptr, v.stmt), target.dtype)
    op.__name__ = name
    op.__doc__ = (f"qd.{name}(x, value): atomically updates x (a field or ndarray element, "
                  f"or a local variable) with `{python_op}` by value and returns the value "
                  f"x held before. Concurrent iterations may all update the same x.")
    return op


atomic_add = _atomic("atomic_add", "add")
atomic_sub = _atomic("atomic_sub", "sub")
atomic_min = _atomic("atomic_min", "min")
atomic_max = _atomic("atomic_max", "max")
atomic_and = _atomic("atomic_and", "bit_and")
atomic_or = _atomic("atomic_or", "bit_or")
atomic_xor = _atomic("atomic_xor", "bit_xor")
# atomic_mul runs as a compare-and-swap loop on every backend.
atomic_mul = _atomic("atomic_mul", "mul")
# qd.atomic_exchange(x, y): stores y, whatever x held; returns the old x.
atomic_exchange = _atomic("atomic_exchange", "exchange", lambda old, value: value)


@intrinsic
def atomic_cas(target, expected, desired):
    """qd.atomic_cas(x, expected, desired): atomically stores `desired` into x
    when x equals `expected`; returns the value x held before, so the swap
    happened exactly when the result equals `expected`. Integer targets only
    (a float target is a QuadrantsTypeError); `expected` and `desired` are
    converted to x's type."""
    if isinstance(target, Composite):
        raise QuadrantsTypeError("qd.atomic_cas() needs a scalar target; index a vector or "
                                 "matrix component (v[None][0]) to compare-and-swap it")
    if not is_runtime(target):
        what = ("a field (index it first, e.g. f[None])" if isinstance(target, fields.Field)
                else repr(target))
        raise QuadrantsSyntaxError(f"cannot use a non-writable target as the first operand of "
                                   f"'atomic_cas': got {what}")
    if isinstance(target, (Var, GlobalRef)) and not target.dtype.is_integral:
        raise QuadrantsTypeError(f"qd.atomic_cas() compares integers only; its target is "
                                 f"{target.dtype} (compare-and-swap on floats is not supported)")
    if isinstance(target, Var):
        old = context.load(target)
        hit = binary("cmp_eq", old, cast(expected, target.dtype), None)
        context.builder().local_store(
            target.alloca, context.to_expr(select(hit, cast(desired, target.dtype), old)).stmt)
        return old
    if not isinstance(target, GlobalRef):
        raise QuadrantsTypeError("qd.atomic_cas() cannot update a read-only value")
    e = cast(context.to_expr(expected, like=target.dtype), target.dtype)
    d = cast(context.to_expr(desired, like=target.dtype), target.dtype)
    return Expr(context.builder().atomic_cas(target.ptr, e.stmt, d.stmt), target.dtype)


@intrinsic
def global_thread_idx():
    """qd.global_thread_idx(): the i32 index of the thread running this code.
    On the CPU it is the worker thread's index (every iteration a worker
    runs, and all SIMD lanes of one, share it); on CUDA and AMDGPU it is
    block index * block size + thread index; on Vulkan the global
    invocation index. Serial code (outside the parallel loop) sees 0. Which
    thread runs an iteration may change from launch to launch, so a
    differentiated kernel cannot use it."""
    if context.current() is None:
        raise QuadrantsSyntaxError("qd.global_thread_idx() can only be called in kernel code")
    return Expr(context.builder().thread_index(), types.i32)


@intrinsic
def select(cond, a, b):
    """qd.select(cond, a, b): `a` where cond is nonzero, else `b`, with both
    branches evaluated and promoted to a common type (like `a if cond else
    b` on run-time values). A compile-time condition folds to the chosen
    value; with numpy arrays it is numpy.where."""
    if context.current() is not None:
        cond, a, b = context.load(cond), context.load(a), context.load(b)
    if any(isinstance(v, Composite) for v in (cond, a, b)):
        return _select_composite(cond, a, b)
    if not isinstance(cond, Expr):
        if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or \
                isinstance(b, np.ndarray):
            return np.where(cond, a, b)
        if not isinstance(cond, (numbers.Number, np.generic)):
            raise QuadrantsTypeError(f"qd.select() needs a number or a run-time value as "
                                     f"its condition, got {type(cond).__name__}")
        if isinstance(cond, (float, np.floating)):
            raise QuadrantsTypeError(f"qd.select() needs an integer or boolean condition, "
                                     f"got the float {cond!r}")
        return a if cond else b
    if cond.dtype.is_float:
        raise QuadrantsTypeError(f"qd.select() needs an integer or boolean condition, found "
                                 f"{cond.dtype}")
    ea = context.to_expr(a, like=b if isinstance(b, Expr) else None)
    eb = context.to_expr(b, like=ea)
    return Expr(context.builder().select(cond.stmt, ea.stmt, eb.stmt))


def _select_composite(cond, a, b):
    """qd.select with vectors: component-wise, scalars broadcast."""
    matrix_class = composites.Matrix
    shaped = next(v for v in (cond, a, b) if isinstance(v, Composite))
    if not isinstance(shaped, matrix_class):
        raise QuadrantsTypeError(f"qd.select() needs scalars or vectors/matrices, got "
                                 f"{shaped._describe()}")

    def part(v, k):
        if isinstance(v, matrix_class):
            if (v.n, v.m) != (shaped.n, shaped.m):
                raise QuadrantsTypeError(f"qd.select(): shapes do not match: "
                                         f"{v._describe()} and {shaped._describe()} (Cannot "
                                         f"broadcast tensor to tensor)")
            return v.entries[k]
        return v
    return shaped._like([select(part(cond, k), part(a, k), part(b, k))
                         for k in range(len(shaped.entries))])


@intrinsic
def randn(dt=None):
    """qd.randn(dt=None): a random number from the standard normal
    distribution (mean 0, variance 1), drawn in kernel code from two
    qd.random(dt) draws by the Box-Muller transform. dt is qd.f32 or qd.f64
    (None: qd.init's default_fp)."""
    if context.current() is None:
        raise QuadrantsSyntaxError("qd.randn() can only be called in kernel code")
    try:
        dtype = runtime.default_fp() if dt is None else types.normalize(dt)
    except QuadrantsTypeError:
        dtype = None
    if dtype not in (types.f32, types.f64):
        raise QuadrantsTypeError(f"qd.randn(dt): dt must be qd.f32 or qd.f64, got {dt!r}")
    # 1 - u lies in (0, 1], so its log is finite.
    u1 = binary("sub", context.constant(1.0, dtype), random(dtype), None)
    u2 = random(dtype)
    radius = sqrt(binary("mul", -2.0, log(u1), None))
    return binary("mul", radius, cos(binary("mul", 2.0 * math.pi, u2, None)), None)


@intrinsic
def zero(x):
    """qd.zero(x): zeros of x's type and shape (a scalar or a vector/matrix)."""
    return binary("mul", x, 0, lambda a, b: a * b)


@intrinsic
def one(x):
    """qd.one(x): ones of x's type and shape (a scalar or a vector/matrix)."""
    return binary("add", zero(x), 1, lambda a, b: a + b)


def _compile_time_truth(cond, what):
    if context.current() is not None:
        cond = context.load(cond)
    if isinstance(cond, Composite):
        leaves = [context.load(v) if context.current() is not None else v
                  for v in cond._leaves()]
        if any(isinstance(v, Expr) for v in leaves):
            raise QuadrantsTypeError(f"Static assert with non-static condition: {what} "
                                     f"needs a compile-time condition, got a run-time "
                                     f"{cond._describe()}")
        return builtins.all(leaves)
    if isinstance(cond, Expr):
        raise QuadrantsTypeError(f"Static assert with non-static condition: {what} needs "
                                 f"a compile-time condition, got a run-time {cond.dtype} "
                                 f"value")
    return bool(cond)


@intrinsic
def static_assert(cond, msg=None):
    """qd.static_assert(cond, msg=None): checks a compile-time condition while
    the kernel compiles (QuadrantsCompilationError with `msg` when it is
    false; QuadrantsTypeError when cond is a run-time value). Outside
    kernels it checks at once."""
    if not _compile_time_truth(cond, "qd.static_assert()"):
        raise QuadrantsCompilationError(f"static assertion failed: {msg}" if msg is not None
                                        else "static assertion failed")


@intrinsic
def static_print(*args, **kwargs):
    """qd.static_print(...): Python's print, run once while the kernel
    compiles (run-time values print as their type)."""
    print(*args, **kwargs)


@intrinsic
def assume_in_range(val, base, low, high):
    """qd.assume_in_range(val, base, low, high): val, unchanged. It states
    that base + low <= val < base + high (low and high compile-time ints);
    upstream uses it for a block-local scratchpad optimization that this
    compiler does not have, so the statement changes no result."""
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (numbers.Integral, np.integer)):
            raise QuadrantsTypeError(f"qd.assume_in_range(): {name} must be a compile-time "
                                     f"int, got {bound!r}")
    if low >= high:
        raise QuadrantsTypeError(f"qd.assume_in_range(): needs low < high, got low={low}, "
                                 f"high={high}")
    if context.current() is not None:
        val, base = context.load(val), context.load(base)
    for name, v in (("val", val), ("base", base)):
        dtype = v.dtype if isinstance(v, Expr) else None
        if isinstance(v, Composite) or (dtype is not None and dtype.is_float) or \
                isinstance(v, float):
            raise QuadrantsTypeError(f"qd.assume_in_range(): {name} must be an integer "
                                     f"scalar, got {v!r}")
    return val


types.casting.register(cast=cast)
