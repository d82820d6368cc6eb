"""Statements other than assignments and for loops: expression statements,
pass, if (one branch only when the condition is known at compile time),
while, break and continue, assert, and returns."""
import ast

from quadrants.lang import context, printing
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
