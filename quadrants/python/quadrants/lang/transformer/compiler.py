"""FunctionCompiler: lowers one function body, visiting its statements in
order; the visitors of each kind of construct come from the mixins."""
import ast
import builtins

from quadrants.lang import context
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.transformer.assignments import AssignmentsMixin
from quadrants.lang.transformer.calls import CallsMixin
from quadrants.lang.transformer.directives import DirectivesMixin
from quadrants.lang.transformer.expressions import ExpressionsMixin
from quadrants.lang.transformer.loops import LoopsMixin
from quadrants.lang.transformer.statements import StatementsMixin

_UNSUPPORTED = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension", ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression", ast.Try: "try",
    ast.With: "with", ast.ClassDef: "class definition",
    ast.FunctionDef: "nested function definition", ast.AsyncFunctionDef: "async def",
    ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Yield: "yield",
    ast.YieldFrom: "yield from", ast.Await: "await", ast.Delete: "del",
    ast.Import: "import", ast.ImportFrom: "import", ast.Raise: "raise",
    ast.NamedExpr: "assignment expression (:=)", ast.Starred: "starred expression",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with",
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = "match"


class FunctionCompiler(AssignmentsMixin, StatementsMixin, LoopsMixin, DirectivesMixin,
                       ExpressionsMixin, CallsMixin, ast.NodeVisitor):
    """Lowers one function body (the kernel, or an inlined func)."""

    def __init__(self, ctx, source, scope, globals_, is_kernel):
        self.ctx = ctx
        self.source = source      # FunctionSource: ast, file, line offset, name
        self.scope = scope        # name -> value (Python scoping per function)
        self.globals = globals_
        self.is_kernel = is_kernel
        self.loops = []
        self.return_value = None
        self.depth = 0            # nesting of blocks inside this function
        self.pending_loop_config = None  # from qd.loop_config, for the next loop

    # ---- errors and locations ----------------------------------------------
    def where(self, node):
        return f"{self.source.file}:{self.source.line_offset + getattr(node, 'lineno', 1)}"

    def error(self, node, message, kind=QuadrantsCompilationError):
        return kind(f"{self.where(node)}: in {self.ctx.kind} '{self.ctx.name}': {message}")

    def locate(self, node):
        if hasattr(node, "lineno"):
            self.ctx.builder.set_location(self.source.file,
                                          self.source.line_offset + node.lineno)

    # ---- entry --------------------------------------------------------------
    def compile_body(self, body):
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Return):
                if self.is_kernel:
                    raise self.error(stmt, "kernels cannot return values",
                                     QuadrantsSyntaxError)
                if i != len(body) - 1 or self.depth:
                    raise self.error(stmt, "return is only supported as the last "
                                     "statement of a qd.func", QuadrantsSyntaxError)
                self.locate(stmt)
                value = None if stmt.value is None else self.eval(stmt.value)
                # A returned tuple holds values, not the callee's variables.
                self.return_value = (tuple(context.load(v) for v in value)
                                     if isinstance(value, tuple) else context.load(value))
                return
            self.visit(stmt)
            self.check_loop_config_target(body, i)

    def visit(self, node):
        if type(node) in _UNSUPPORTED:
            raise self.error(node, f"{_UNSUPPORTED[type(node)]} is not supported in "
                             f"Quadrants kernels", QuadrantsSyntaxError)
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

    def block(self, body):
        self.depth += 1
        try:
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.Return):
                    raise self.error(stmt, "return is only supported as the last "
                                     "statement of a qd.func", QuadrantsSyntaxError)
                self.visit(stmt)
                self.check_loop_config_target(body, i)
        finally:
            self.depth -= 1

    # ---- names and variables --------------------------------------------------
    def lookup(self, node, name):
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined", QuadrantsSyntaxError)
