"""Calls: @qd.func and plain Python functions (inlined when an argument
is kernel data), intrinsics and the builtins that map to them (min, max,
abs, int, float, pow), print and str.format, range(), qd.ndrange(), and
plain Python calls on compile-time values."""
import types as pytypes

from quadrants.lang import context, ops, printing, runtime, types
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError
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
        args = [self.eval(a) for a in node.args]
        kwargs = {k.arg: self.eval(k.value) for k in node.keywords}
        if getattr(fn, "_qd_func", False):
            return fn.inline(self.ctx, node, self, args, kwargs)
        if isinstance(fn, type(min)) and fn in _BUILTIN_INTRINSICS:
            fn = _BUILTIN_INTRINSICS[fn]
        elif fn is int or fn is float:
            fn = _BUILTIN_INTRINSICS[fn]
        if getattr(fn, "_qd_intrinsic", False) or isinstance(fn, types.DataType):
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
        if _needs_inlining(args, kwargs):
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
    return ops.cast(x, runtime.default_ip()) if is_runtime(x) or isinstance(x, Expr) \
        else int(x)


def _float_cast(x=0.0):
    return ops.cast(x, runtime.default_fp()) if is_runtime(x) or isinstance(x, Expr) \
        else float(x)


_int_cast._qd_intrinsic = True
_float_cast._qd_intrinsic = True
_BUILTIN_INTRINSICS = {min: ops.min, max: ops.max, abs: ops.abs, int: _int_cast,
                       float: _float_cast, pow: ops.pow}
