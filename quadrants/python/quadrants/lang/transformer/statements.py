"""Statements other than assignments and for loops: expression statements,
pass, if (one branch only when the condition is known at compile time),
while, break and continue, assert, and returns."""
import ast

from quadrants.lang import checkpoint, context, graph, printing, stream
from quadrants.lang.exception import (QuadrantsAlwaysFalseAssertion,
                                      QuadrantsCompilationError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)
from quadrants.lang.expr import Expr
from quadrants.lang.transformer.loops import LoopFrame, StaticJump


class StatementsMixin:
    """FunctionCompiler's control-flow and other plain statements."""

    def visit_Expr(self, node):
        self.eval(node.value)

    def visit_Pass(self, node):
        pass

    def visit_If(self, node):
        cond = context.load(self.eval(node.test))
        if not isinstance(cond, Expr):
            self.block(node.body if cond else node.orelse)
            return
        branch = self.ctx.builder.if_(cond.stmt)
        for which, body in ((0, node.body), (1, node.orelse)):
            if body:
                self.ctx.builder.push_block(branch, which)
                try:
                    self.block(body, dynamic=True)
                finally:
                    self.ctx.builder.pop_block()

    def visit_While(self, node):
        if graph.is_do_while(node):
            # The kernel split takes the do_while loops it can; this one is
            # nested where it cannot.
            raise self.error(node, "qd.graph.do_while() must be at the kernel top level or "
                             "directly nested inside another qd.graph.do_while(); it cannot "
                             "appear inside a for-loop.", QuadrantsSyntaxError)
        if node.orelse:
            raise self.error(node, "while/else is not supported", QuadrantsSyntaxError)
        b = self.ctx.builder
        loop = b.while_()
        b.push_block(loop, 0)
        self.loops.append(LoopFrame(parallel=False, static=False))
        try:
            cond = context.load(self.eval(node.test))
            if isinstance(cond, Expr) and cond.dtype.is_float:
                raise self.error(node, f"a condition must be an integer, found {cond.dtype}",
                                 QuadrantsTypeError)
            if isinstance(cond, Expr):
                stop = b.if_(b.unary("logical_not", cond.stmt))
                b.push_block(stop, 0)
                b.break_()
                b.pop_block()
            elif not cond:
                b.break_()
            self.block(node.body, dynamic=True)
        finally:
            self.loops.pop()
            b.pop_block()

    def visit_Break(self, node):
        self.check_jump(node, "break")
        self.ctx.builder.break_()

    def visit_Continue(self, node):
        self.check_jump(node, "continue")
        self.ctx.builder.continue_()

    def check_jump(self, node, what):
        if not self.loops:
            raise self.error(node, f"'{what}' outside a loop", QuadrantsSyntaxError)
        frame = self.loops[-1]
        if frame.static:
            if self.dynamic_depth == frame.dynamic_depth:
                raise StaticJump(what)  # decided at compile time
            raise self.error(node, f"You are trying to `{what}` a static `for` loop from a "
                             f"run-time if: '{what}' in a qd.static loop must be decided at "
                             f"compile time (under qd.static(...) conditions only)",
                             QuadrantsSyntaxError)
        if frame.parallel and what == "break":
            raise self.error(node, "Cannot break in the outermost loop: it is the kernel's "
                             "parallel loop, whose iterations run independently",
                             QuadrantsSyntaxError)

    def visit_Assert(self, node):
        cond = context.load(self.eval(node.test))
        message = ast.unparse(node.test)
        args = []
        if node.msg is not None:
            msg = node.msg
            if isinstance(msg, ast.BinOp) and isinstance(msg.op, ast.Mod):
                values = self.eval(msg.right)
                values = values if isinstance(values, tuple) else (values,)
                args = [context.to_expr(v) for v in values]
                msg = msg.left
            text = self.eval(msg)
            if isinstance(text, printing.RuntimeText) and not args:
                text, args = _printf_message(text)
            if not isinstance(text, str):
                raise self.error(node, "an assert message must be a string",
                                 QuadrantsSyntaxError)
            message = text
        if not isinstance(cond, Expr):
            if not cond:
                raise self.error(node, f"assertion is always false: {message}",
                                 QuadrantsAlwaysFalseAssertion)
            return
        self.ctx.builder.assert_(cond.stmt, message, [a.stmt for a in args])

    def visit_Return(self, node):
        self.compile_return(node)


def _printf_message(text):
    """An f-string with run-time values as an assert message: a printf
    format ("x[%d] got=%d") and the values it formats."""
    pieces, args = [], []
    for part in text.parts:
        if isinstance(part, str):
            pieces.append(part.replace("%", "%%"))
            continue
        value = context.to_expr(part.value)  # a scalar; vectors are refused here
        spec = printing.printf_spec(part.spec, value.dtype) if part.spec else ""
        pieces.append(spec or ("%f" if value.dtype.is_float else "%d"))
        args.append(value)
    return "".join(pieces), args


class GraphRegionsMixin:
    """FunctionCompiler's `with` statements: qd.graph.parallel_context()
    regions of qd.graph.parallel() sections, compiled in order (sections
    are independent, so any order gives the same results)."""

    def visit_With(self, node):
        if len(node.items) != 1:
            raise self.error(node, "'with' in Quadrants kernels only supports a single "
                             "context manager", QuadrantsSyntaxError)
        item = node.items[0]
        if item.optional_vars is not None:
            raise self.error(node, "'with ... as ...' is not supported in Quadrants kernels",
                             QuadrantsSyntaxError)
        call = item.context_expr
        if not isinstance(call, ast.Call):
            raise self.error(node, "'with' in Quadrants kernels requires a call expression",
                             QuadrantsSyntaxError)
        if checkpoint.is_checkpoint(node):
            return self.misplaced_checkpoint(node)
        if graph.matches(call.func, "parallel_context"):
            return self.graph_parallel_region(node, call)
        if graph.matches(call.func, "parallel"):
            self.graph_arguments(node, call, "parallel")
            if self.graph_section:
                raise self.error(node, "qd.graph.parallel() sections cannot be nested inside "
                                 "one another", QuadrantsSyntaxError)
            raise self.error(node, "qd.graph.parallel() can only be used directly inside a "
                             "qd.graph.parallel_context() region", QuadrantsSyntaxError)
        if self.static_target(call.func) is stream.stream_parallel:
            return self.stream_parallel_block(node, call)
        raise self.error(node, "'with' in Quadrants kernels only supports qd.stream_parallel(), "
                         "qd.checkpoint(), qd.graph.parallel_context(), or qd.graph.parallel()",
                         QuadrantsSyntaxError)

    def stream_parallel_block(self, node, call):
        """`with qd.stream_parallel():` at a kernel's top level: its
        statements are one section of the kernel's stream region, so a CUDA
        launch runs the blocks as concurrent branches of one graph."""
        if call.args or call.keywords:
            raise self.error(node, "qd.stream_parallel() takes no arguments",
                             QuadrantsSyntaxError)
        if not self.is_kernel or self.ctx.inline_depth:
            raise self.error(node, "qd.stream_parallel() can only be used inside @qd.kernel, "
                             "not @qd.func", QuadrantsSyntaxError)
        if self.ctx.graph:
            raise self.error(node, "qd.stream_parallel() is not compatible with graph=True "
                             "kernels. Streams and graphs cannot be combined; remove graph=True "
                             "or the qd.stream_parallel() block.", QuadrantsSyntaxError)
        if self.depth or self.graph_section:
            raise self.error(node, "qd.stream_parallel() blocks cannot be nested, and must be "
                             "at the kernel's top level", QuadrantsSyntaxError)
        if self.ctx.stream_region is None:
            self.ctx.stream_region = self.ctx.graph_regions
            self.ctx.graph_regions += 1
        self.ctx.builder.set_graph_section(self.ctx.stream_region, self.ctx.stream_sections)
        self.ctx.stream_sections += 1
        self.graph_section = True
        try:
            self.statements(node.body)
        finally:
            self.ctx.builder.set_graph_section(-1, -1)
            self.graph_section = False

    def misplaced_checkpoint(self, node):
        """A `with qd.checkpoint` the kernel's split did not take: its
        arguments are checked first, then where it is."""
        checkpoint.parse(node, self.globals,
                         lambda at, message: self.error(at, message, QuadrantsSyntaxError))
        if not self.is_kernel or self.ctx.inline_depth:
            message = "qd.checkpoint() can only be used inside @qd.kernel, not @qd.func"
        elif not self.ctx.graph:
            message = ("qd.checkpoint() requires @qd.kernel(graph=True); the resume model only "
                       "applies to graph kernels")
        elif not self.ctx.checkpoints:
            message = (f"qd.checkpoint() found in kernel {self.ctx.name!r}, but this kernel was "
                       f"not decorated with `checkpoints=True`. Add `checkpoints=True` to the "
                       f"decorator -- e.g. `@qd.kernel(graph=True, checkpoints=True)` -- to opt "
                       f"into the pause / resume model.")
        elif self.graph_section:
            message = ("qd.checkpoint() cannot appear inside a qd.graph.parallel() section; a "
                       "section body must be straight-line task work")
        else:
            message = ("qd.checkpoint() must be at the kernel top level or directly inside a "
                       "qd.graph.do_while() body, not inside a for-loop, if or region")
        raise self.error(node, message, QuadrantsSyntaxError)

    def graph_arguments(self, node, call, name):
        graph.warn_if_deprecated(call.func, name)
        if call.args or call.keywords:
            raise self.error(node, f"qd.graph.{name}() takes no arguments",
                             QuadrantsSyntaxError)

    def graph_parallel_region(self, node, call):
        self.graph_arguments(node, call, "parallel_context")
        if not self.is_kernel or self.ctx.inline_depth:
            raise self.error(node, "qd.graph.parallel_context() can only be used inside "
                             "@qd.kernel, not @qd.func", QuadrantsSyntaxError)
        if not self.ctx.graph:
            raise self.error(node, "qd.graph.parallel_context() requires "
                             "@qd.kernel(graph=True)", QuadrantsSyntaxError)
        if self.ctx.checkpoints:
            raise self.error(node, "qd.graph.parallel_context() is not supported in a "
                             "@qd.kernel(graph=True, checkpoints=True) kernel: a fork/join "
                             "region does not participate in the checkpoint/resume model (its "
                             "sections would run unconditionally on every launch, ignoring "
                             "yield/resume). Use qd.graph.parallel_context() only in a "
                             "non-checkpoints kernel, or express the work as ordinary "
                             "qd.checkpoint() stages.", QuadrantsSyntaxError)
        if self.graph_section:
            raise self.error(node, "qd.graph.parallel_context() cannot appear inside a "
                             "qd.graph.parallel() section", QuadrantsSyntaxError)
        if self.graph_region:
            raise self.error(node, "qd.graph.parallel_context() regions cannot be nested",
                             QuadrantsSyntaxError)
        self.graph_region = True
        self.ctx.graph_regions += 1
        self.ctx.graph_sections = 0
        try:
            # At the kernel's level: a section's loops are top-level tasks.
            self.statements(node.body)
        finally:
            self.graph_region = False

    def region_statement(self, stmt, index):
        """Checks what a parallel_context region holds (sections, optionally
        under compile-time ifs and loops) and compiles a section; True when
        it did."""
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and
                                          isinstance(stmt.value, ast.Constant)):
            return False
        if isinstance(stmt, ast.With) and len(stmt.items) == 1 and \
                isinstance(stmt.items[0].context_expr, ast.Call) and \
                graph.matches(stmt.items[0].context_expr.func, "parallel"):
            self.graph_section_body(stmt)
            return True
        static = (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Call) and
                  self.is_static_call(stmt.test)) or \
            (isinstance(stmt, ast.For) and isinstance(stmt.iter, ast.Call) and
             self.is_static_call(stmt.iter) and not stmt.orelse)
        if static:
            return False
        kind = type(stmt).__name__
        raise self.error(stmt, "A qd.graph.parallel_context() region may contain only 'with "
                         "qd.graph.parallel():' blocks (optionally inside 'if "
                         "qd.static(...)' or 'for ... in qd.static(...)'). Move other work "
                         f"outside the region. [offending stmt {index}: {kind}]",
                         QuadrantsSyntaxError)

    def graph_section_body(self, stmt):
        call = stmt.items[0].context_expr
        self.graph_arguments(stmt, call, "parallel")
        if stmt.items[0].optional_vars is not None:
            raise self.error(stmt, "'with ... as ...' is not supported in Quadrants kernels",
                             QuadrantsSyntaxError)
        for inner in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
            if checkpoint.is_checkpoint(inner):
                raise self.error(inner, "qd.checkpoint() cannot appear inside a "
                                 "qd.graph.parallel() section; a section body must be "
                                 "straight-line task work", QuadrantsSyntaxError)
            if graph.is_do_while(inner):
                raise self.error(inner, "qd.graph.do_while() cannot appear inside a "
                                 "qd.graph.parallel() section; a section body must be "
                                 "straight-line task work (put the "
                                 "qd.graph.parallel_context() region inside the "
                                 "qd.graph.do_while() loop, not the other way around)",
                                 QuadrantsSyntaxError)
            if isinstance(inner, ast.With):
                for item in inner.items:
                    if isinstance(item.context_expr, ast.Call):
                        func = item.context_expr.func
                        if graph.matches(func, "parallel_context"):
                            raise self.error(inner, "qd.graph.parallel_context() cannot "
                                             "appear inside a qd.graph.parallel() section",
                                             QuadrantsSyntaxError)
                        if graph.matches(func, "parallel"):
                            raise self.error(inner, "qd.graph.parallel() sections cannot be "
                                             "nested inside one another",
                                             QuadrantsSyntaxError)
        self.graph_region, self.graph_section = False, True
        # Its statements are tagged, so a graph can run the region's
        # sections as branches.
        self.ctx.builder.set_graph_section(self.ctx.graph_regions - 1, self.ctx.graph_sections)
        self.ctx.graph_sections += 1
        try:
            self.statements(stmt.body)
        finally:
            self.ctx.builder.set_graph_section(-1, -1)
            self.graph_region, self.graph_section = True, False
