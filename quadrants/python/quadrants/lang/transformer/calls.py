"""Calls: @qd.func and plain Python functions (inlined when an argument
is kernel data), intrinsics and the builtins that map to them (min, max,
abs, int, float, pow), print and str.format, range(), qd.ndrange(), and
plain Python calls on compile-time values."""
import ast
import types as pytypes

from quadrants.lang import context, matrix, ops, printing, runtime, types
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import ArgumentValueError, QuadrantsSyntaxError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, NdarrayArg, is_runtime
from quadrants.lang.field import Field
from quadrants.lang.hooks import Hooks
from quadrants.lang.struct import StructField
from quadrants.lang.transformer.directives import loop_config, static
from quadrants.lang.transformer.loops import NdRange, RuntimeRange

# Plain Python functions called with kernel data are inlined like a
# @qd.func; quadrants.lang.kernel, which builds on this compiler, registers
# the wrapper that parses them.
inlining = Hooks("quadrants.lang.kernel", "python_callable")


class CallsMixin:
    """FunctionCompiler's calls."""

    def visit_Call(self, node):
        fn = self.eval(node.func)
        if fn is static:
            return self.eval_static(node)
        if fn is loop_config:
            return self.set_loop_config(node)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.unpacked(a.value, "*"))
            else:
                args.append(self.eval(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(self.unpacked(k.value, "**"))
            else:
                kwargs[k.arg] = self.eval(k.value)
        if getattr(fn, "_qd_func", False):
            return fn.inline(self.ctx, node, self, args, kwargs)
        if isinstance(fn, type(min)) and fn in _BUILTIN_INTRINSICS:
            fn = _BUILTIN_INTRINSICS[fn]
        elif fn is int or fn is float:
            fn = _BUILTIN_INTRINSICS[fn]
        if isinstance(fn, types.DataType):
            return self.typed_value(node, fn, args, kwargs)
        if getattr(fn, "_qd_intrinsic", False):
            return fn(*args, **kwargs)
        if fn is print:
            return printing.kernel_print(*args, **kwargs)
        if getattr(fn, "__name__", None) == "format" and \
                isinstance(getattr(fn, "__self__", None), str):
            return printing.format_string(fn.__self__, args, kwargs)
        if fn is range:
            return self.make_range(node, args)
        if fn is NdRange:
            return NdRange(*[context.load(a) if not isinstance(a, tuple) else
                             tuple(context.load(v) for v in a) for a in args], **kwargs)
        if getattr(fn, "_qd_kernel", False):
            raise self.error(node, "a kernel cannot call another kernel; make the callee "
                             "a @qd.func", QuadrantsSyntaxError)
        if _needs_inlining(args, kwargs) or getattr(fn, "_qd_kernel_language", False):
            inlined = self.inline_python(node, fn, args, kwargs)
            if inlined is not _NOT_INLINABLE:
                return inlined
        loaded = [context.load(a) for a in args]
        if any(is_runtime(a) for a in loaded) or any(is_runtime(v) for v in kwargs.values()):
            raise self.error(node, f"cannot call Python function "
                             f"{getattr(fn, '__name__', fn)!s} with run-time values; "
                             f"use a @qd.func", QuadrantsTypeError)
        return fn(*loaded, **kwargs)

    def inline_python(self, node, fn, args, kwargs):
        """Inlines a call of a plain Python function, lambda or bound method
        like a @qd.func, or returns _NOT_INLINABLE for other callables
        (builtins, classes, callable objects), which keep running in Python."""
        if isinstance(fn, pytypes.MethodType) and isinstance(fn.__func__,
                                                             pytypes.FunctionType):
            args = [fn.__self__] + list(args)
            fn = fn.__func__
        if not isinstance(fn, pytypes.FunctionType):
            return _NOT_INLINABLE
        try:
            wrapper = inlining.python_callable(fn)
        except QuadrantsSyntaxError as e:
            raise self.error(node, str(e), QuadrantsSyntaxError) from None
        return wrapper.inline(self.ctx, node, self, args, kwargs)

    def typed_value(self, node, dtype, args, kwargs):
        """qd.u32(2891336453): a literal of that type; qd.f32(x) of an
        expression: a cast. As upstream, a literal must be of the type's
        kind (an int for an integer type, a float for a float type) and fit
        it; converting between kinds is qd.cast's."""
        if len(args) != 1 or kwargs:
            raise self.error(node, "A primitive type can only decorate a single expression.",
                             QuadrantsSyntaxError)
        if isinstance(context.load(args[0]), Composite):
            raise self.error(node, "A primitive type cannot decorate an expression with a "
                             "compound type.", QuadrantsSyntaxError)
        literal = _literal(node.args[0])
        if literal is not None:
            if isinstance(literal, int) and dtype.is_float:
                raise self.error(node, "Integer literals must be annotated with a integer "
                                 "type. For type casting, use `qd.cast`.", QuadrantsTypeError)
            if isinstance(literal, float) and not dtype.is_float:
                raise self.error(node, "Floating-point literals must be annotated with a "
                                 "floating-point type. For type casting, use `qd.cast`.",
                                 QuadrantsTypeError)
            if not dtype.is_float and dtype != types.u1 and not context.fits(literal, dtype):
                raise self.error(node, f"the literal {literal} exceeded the range of specified "
                                 f"dtype {dtype.name}", QuadrantsTypeError)
        return dtype(args[0])

    def unpacked(self, node, star):
        """The items of `*x` (a list) or `**x` (a dict) in a call: x must be
        known at compile time (a tuple, list or dict; a field's shape)."""
        value = self.eval(node)
        if isinstance(value, pytypes.GeneratorType):
            # A generator is consumed by the first compilation, so a later one
            # would see it empty (upstream refuses it with a ValueError too).
            raise self.error(node, f"{star}{ast.unparse(node)}: a generator cannot be unpacked "
                             f"in kernel code (it is used up after one compilation); make "
                             f"it a tuple", ArgumentValueError)
        try:
            return dict(value) if star == "**" else list(value)
        except TypeError:
            raise self.error(node, f"{star}{ast.unparse(node)} in a call needs a compile-time "
                             f"{'dict' if star == '**' else 'tuple or list'}",
                             QuadrantsSyntaxError) from None

    def make_range(self, node, args):
        args = [context.load(a) for a in args]
        if any(isinstance(a, Expr) for a in args):
            if len(args) == 1:
                return RuntimeRange(0, args[0])
            if len(args) == 2:
                return RuntimeRange(args[0], args[1])
            self.fail_step(node)
        return range(*args)


_NOT_INLINABLE = object()


def _literal(node):
    """The Python int or float a (signed) numeric literal spells, else None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return sign * node.value
    return None


def _holds_kernel_data(value):
    """Whether a call argument is (or holds) a run-time value or kernel data
    (a field or ndarray parameter), which Python code cannot evaluate at
    compile time: indexing a field in Python would read the host copy once,
    at compile time, where the kernel must read it at run time."""
    if is_runtime(value) or isinstance(value, (Field, NdarrayArg, Composite, MatrixField,
                                               StructField)):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_kernel_data(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_kernel_data(v) for v in value.values())
    return False


def _needs_inlining(args, kwargs):
    return any(_holds_kernel_data(a) for a in args) or \
        any(_holds_kernel_data(v) for v in kwargs.values())


def _int_cast(x=0):
    """int(x) in a kernel: a cast to the default int type, element-wise for a
    vector or matrix."""
    if isinstance(x, matrix.Matrix):
        return x.cast(runtime.default_ip())
    return ops.cast(x, runtime.default_ip()) if is_runtime(x) or isinstance(x, Expr) \
        else int(x)


def _float_cast(x=0.0):
    """float(x) in a kernel, likewise with the default float type."""
    if isinstance(x, matrix.Matrix):
        return x.cast(runtime.default_fp())
    return ops.cast(x, runtime.default_fp()) if is_runtime(x) or isinstance(x, Expr) \
        else float(x)


def _reduction(builtin, method):
    """all(v) / any(v) of a vector or matrix in a kernel: its .all() / .any()
    (run-time values reduce in the kernel); of anything else: Python's."""
    def reduce(x):
        if isinstance(x, Composite) and hasattr(x, method):
            return getattr(x, method)()
        return builtin(x)
    reduce._qd_intrinsic = True
    return reduce


_int_cast._qd_intrinsic = True
_float_cast._qd_intrinsic = True
_BUILTIN_INTRINSICS = {min: ops.min, max: ops.max, abs: ops.abs, int: _int_cast,
                       float: _float_cast, pow: ops.pow,
                       all: _reduction(all, "all"), any: _reduction(any, "any")}
