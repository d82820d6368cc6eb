"""FunctionCompiler: lowers one function body, visiting its statements in
order; the visitors of each kind of construct come from the mixins."""
import ast
import builtins
import linecache

from quadrants.lang import context, session, stream
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsError,
                                      QuadrantsNameError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)
from quadrants.lang.transformer.assignments import AssignmentsMixin
from quadrants.lang.transformer.calls import CallsMixin
from quadrants.lang.transformer.directives import DirectivesMixin
from quadrants.lang.transformer.expressions import ExpressionsMixin
from quadrants.lang.transformer.loops import LoopsMixin
from quadrants.lang.transformer import purity
from quadrants.lang.transformer.statements import GraphRegionsMixin, StatementsMixin

_UNSUPPORTED = {
    ast.Lambda: "lambda",
    ast.SetComp: "set comprehension",
    ast.Try: "try",
    ast.ClassDef: "class definition",
    ast.FunctionDef: "nested function definition", ast.AsyncFunctionDef: "async def",
    ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Yield: "yield",
    ast.YieldFrom: "yield from", ast.Await: "await", ast.Delete: "del",
    ast.Import: "import", ast.ImportFrom: "import", ast.Raise: "raise",
    ast.Starred: "starred expression",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with",
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = "match"


_WRAP = 80  # columns of a quoted source line before it wraps


def source_frame(src, node):
    """'File "f.py", line 12, in fn:' with the line and carets under `node`
    (upstream's layout: tabs as 4 columns, long lines wrapped at 80)."""
    lineno = src.line_offset + getattr(node, "lineno", 1)
    name = getattr(src.node, "name", src.name)
    head = f'File "{src.file}", line {lineno}, in {name}:\n'
    line = linecache.getline(src.file, lineno).rstrip("\n")
    if not line.strip() or not hasattr(node, "col_offset"):
        return head
    indent = getattr(src, "indent", 0)
    start = node.col_offset + indent
    end = node.end_col_offset + indent \
        if getattr(node, "end_lineno", node.lineno) == node.lineno else len(line)
    first, last = len(line[:start].expandtabs(4)), len(line[:end].expandtabs(4))
    text = line.expandtabs(4)
    marks = " " * first + "^" * max(1, last - first)
    out = []
    for k in range(0, len(text), _WRAP):
        out.append(text[k:k + _WRAP])
        chunk = marks[k:k + _WRAP]
        if chunk.strip():
            out.append(chunk.rstrip())
    return head + "\n".join(out) + "\n"


class FunctionCompiler(AssignmentsMixin, StatementsMixin, GraphRegionsMixin, LoopsMixin,
                       DirectivesMixin, ExpressionsMixin, CallsMixin, ast.NodeVisitor):
    """Lowers one function body (the kernel, or an inlined func)."""

    def __init__(self, ctx, source, scope, globals_, is_kernel):
        self.ctx = ctx
        if source not in ctx.sources:
            ctx.sources.append(source)
        self.source = source      # FunctionSource: ast, file, line offset, name
        self.scope = scope        # name -> value (Python scoping per function)
        # Locals assigned one Python number and never written again: their
        # value, for directives that need a constant (qd.loop_config).
        self.known_constants = {}
        self.globals = globals_
        self.is_kernel = is_kernel
        self.loops = []
        self.return_value = None
        self.returned = False     # a return was compiled: the rest is dead code
        self.return_type = None   # a ReturnType when the function is annotated
        self.on_return = None     # a kernel's store of its returned value
        self.on_real_return = None  # a real function's store of its results, then return
        self.depth = 0            # nesting of blocks inside this function
        self.dynamic_depth = 0    # nesting of run-time if/while/for bodies
        self.static_depth = 0     # nesting of qd.static(...) arguments
        self.static_arguments = set()  # the argument nodes of the qd.static being read
        self.immutable = set()    # a kernel's template and ndarray parameters
        # A kernel's qd.template() and qd.Tensor parameters and the objects
        # bound to them, which qd.static(a is None) may test; None in funcs.
        self.template_params = None
        self.shared_locals = set()  # kernel locals kept in global memory (shared_locals.py)
        self.pending_loop_config = None  # from qd.loop_config, for the next loop
        self.loop_block_dim = None  # its block_dim, for the loop being built
        self.loop_name = None  # its name (loop_config(name=...)), likewise
        self.graph_region = False  # in a qd.graph.parallel_context() region
        self.graph_section = False  # in one of its qd.graph.parallel() sections

    # ---- errors and locations ----------------------------------------------
    def where(self, node):
        return f"{self.source.file}:{self.source.line_offset + getattr(node, 'lineno', 1)}"

    def error(self, node, message, kind=QuadrantsCompilationError):
        """The error `kind` at `node`: where it is, then the source lines of
        the calls from the kernel down to it (as a traceback shows them),
        then `message`."""
        frames = [*self.ctx.call_sites, (self.source, node)]
        trace = "".join(source_frame(src, at) for src, at in frames)
        return kind(f"{self.where(node)}: in {self.ctx.kind} '{self.ctx.name}':\n{trace}"
                    f"{message}")

    def locate(self, node):
        if hasattr(node, "lineno"):
            self.ctx.builder.set_location(self.source.file,
                                          self.source.line_offset + node.lineno)

    def static_target(self, node):
        """The value a Name or attribute chain names at compile time, or
        None (unknown name, or another expression): for recognizing calls
        like qd.stream_parallel() before compiling them."""
        if isinstance(node, ast.Name):
            if node.id in self.scope:
                return self.scope[node.id]
            return self.globals[node.id] if node.id in self.globals else None
        if isinstance(node, ast.Attribute):
            owner = self.static_target(node.value)
            return getattr(owner, node.attr, None) if owner is not None else None
        return None

    # ---- entry --------------------------------------------------------------
    def compile_body(self, body):
        if self.is_kernel and not self.ctx.inline_depth:
            stream.check_exclusive(body, self.static_target, self.error)
        self.statements(body)

    def statements(self, body):
        """Compiles statements in order up to the first return reached at
        compile time (a return in a qd.static if or for ends the function)."""
        for i, stmt in enumerate(body):
            if self.returned:
                return
            if self.graph_region and self.region_statement(stmt, i):
                continue  # a section, compiled as such
            self.visit(stmt)
            self.check_loop_config_target(body, i)

    def compile_return(self, node):
        if self.on_real_return is not None:
            return self.compile_real_return(node)
        if self.dynamic_depth:
            raise self.error(node, "Return inside non-static if/for is not supported",
                             QuadrantsCompilationError)
        value = None if node.value is None else self.eval(node.value)
        value = (tuple(context.load(v) for v in value) if isinstance(value, tuple)
                 else context.load(value))
        what = f"kernel '{self.source.name}'" if self.is_kernel else \
            f"function '{self.source.name}'"
        if value is not None and self.return_type is None and self.is_kernel:
            raise self.error(node, f"{what} returns a value but has no return type "
                             f"annotation (e.g. `-> qd.f32`)", QuadrantsCompilationError)
        if value is None and self.return_type is not None:
            raise self.error(node, f"{what} has the return type "
                             f"{self.return_type.annotation!r} but returns nothing",
                             QuadrantsCompilationError)
        if self.return_type is not None:
            if self.on_return is not None:
                self.on_return(self.return_type.cast_leaves(value, what))
            else:
                value = self.return_type.cast_value(value, what)
        # A returned tuple holds values, not the callee's variables.
        self.return_value = value
        self.returned = True

    def compile_real_return(self, node):
        """A return of a qd.real_func: allowed anywhere, since the function
        really leaves (its results are stored first)."""
        value = None if node.value is None else self.eval(node.value)
        value = (tuple(context.load(v) for v in value) if isinstance(value, tuple)
                 else context.load(value))
        what = f"qd.real_func '{self.source.name}'"
        if value is not None and self.return_type is None:
            raise self.error(node, f"{what} returns a value, but its return value must be "
                             f"annotated (e.g. `-> qd.f32`)", QuadrantsCompilationError)
        if value is None and self.return_type is not None:
            raise self.error(node, f"{what} has the return type "
                             f"{self.return_type.annotation!r} but returns nothing",
                             QuadrantsCompilationError)
        leaves = self.return_type.cast_leaves(value, what) if self.return_type else []
        self.on_real_return(self.ctx.builder, leaves)
        if not self.dynamic_depth:
            self.returned = True  # the rest of the body is dead code

    def visit(self, node):
        if type(node) is ast.FunctionDef:
            where = "qd.kernel" if self.is_kernel else "qd.func"
            raise self.error(node, f"Function definition is not allowed in '{where}': define "
                             f"'{node.name}' outside and decorate it with @qd.func",
                             QuadrantsSyntaxError)
        if type(node) in _UNSUPPORTED:
            # Upstream's words first: 'Unsupported node "Raise"'.
            raise self.error(node, f'Unsupported node "{type(node).__name__}": '
                             f"{_UNSUPPORTED[type(node)]} is not supported in Quadrants "
                             f"kernels", QuadrantsSyntaxError)
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} is not supported in Quadrants "
                             f"kernels", QuadrantsSyntaxError)
        self.locate(node)
        try:
            return method(node)
        except QuadrantsError as e:
            if getattr(e, "_qd_located", False) or str(e).startswith(self.source.file):
                raise
            # Errors raised by helpers (types, ops) learn where they happened.
            located = type(e)(f"{self.where(node)}: in {self.ctx.kind} '{self.ctx.name}': {e}")
            located._qd_located = True
            raise located from e
        except (TypeError, ValueError, AttributeError, IndexError, KeyError,
                ZeroDivisionError, NameError) as e:
            raise self.error(node, str(e), QuadrantsTypeError
                             if isinstance(e, TypeError) else QuadrantsCompilationError) from e

    def eval(self, node):
        return self.visit(node)

    def block(self, body, dynamic=False):
        """Compiles a nested block; `dynamic` for the body of an if, while or
        for decided at run time, where a return cannot end the function."""
        self.depth += 1
        self.dynamic_depth += dynamic
        try:
            self.statements(body)
        finally:
            self.depth -= 1
            self.dynamic_depth -= dynamic

    # ---- names and variables --------------------------------------------------
    def lookup(self, node, name):
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            value = self.globals[name]
            purity.check_global_name(self, node, name, value)
            if type(value) is float and session.option("raise_on_templated_floats", False):
                raise self.error(node, f"the global '{name}' is a Python float ({value!r}), "
                                 f"which the kernel would bake in at compile time; "
                                 f"raise_on_templated_floats=True refuses that: pass it as "
                                 f"an argument instead")
            return value
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined", QuadrantsNameError)
