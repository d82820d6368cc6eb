"""Library code written in the kernel language, compiled into the kernel
being built from inside an intrinsic (a Python function that kernel code
calls): qd.sym_eig's general path is such a body, and so is each phase of
qd.algorithms.

inline(fn, ...) compiles the body of plain function `fn` where the call is,
like a @qd.func, with its parameters bound to the given values.
top_level=True compiles it as kernel top-level code instead: each of its
outermost for loops becomes a parallel task of its own, run after the
tasks before it, which is how a multi-phase algorithm orders its phases."""
import numbers

from quadrants.lang import context
from quadrants.lang.exception import QuadrantsSyntaxError
from quadrants.lang.expr import Composite, Expr, GlobalRef, Var
from quadrants.lang.kernel import FunctionSource
from quadrants.lang.transformer import FunctionCompiler

_sources = {}


def _source(fn):
    source = _sources.get(fn)
    if source is None:
        source = _sources[fn] = FunctionSource(fn)
    return source


def inline(fn, bindings, top_level=False):
    """Compiles fn's body into the current kernel with its parameters bound
    to `bindings` (a name -> value dict); returns what the body returns
    (top_level bodies return nothing)."""
    ctx = context.current()
    if ctx is None:
        raise QuadrantsSyntaxError(f"{fn.__name__} can only be compiled into kernel code")
    source = _source(fn)
    compiler = FunctionCompiler(ctx, source, {}, source.globals, is_kernel=top_level)
    for name, value in bindings.items():
        if isinstance(value, (Var, GlobalRef, Composite)):
            value = context.load(value)  # by value, as a @qd.func takes it
        if name in source.assigned and isinstance(value, (Composite, Expr, numbers.Number)):
            compiler.declare(name, value)
        else:
            compiler.scope[name] = value
    compiler.compile_body(source.node.body)
    return None if top_level else compiler.return_value
