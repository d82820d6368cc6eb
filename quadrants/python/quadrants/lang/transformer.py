"""Compiles the Python AST of a kernel (and the funcs it calls) into IR.

Statements are visited in order and lowered through the C++ builder as
they are met. Compile-time values (numbers, fields, templates, qd.static
results) stay Python objects and fold away; run-time values are Exprs.
"""
import ast
import builtins
import contextlib
import numbers
import types as pytypes

from quadrants.lang import context, ops, printing, types
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang import matrix
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.expr import (Composite, Expr, GlobalRef, NdarrayArg, ShapeProxy, Var,
                                 is_runtime)
from quadrants.lang.field import Field
from quadrants.lang.struct import StructField, StructType

_BINARY = {
    ast.Add: ("add", lambda a, b: a + b),
    ast.Sub: ("sub", lambda a, b: a - b),
    ast.Mult: ("mul", lambda a, b: a * b),
    ast.Div: ("div", lambda a, b: a / b),
    ast.FloorDiv: ("floordiv", lambda a, b: a // b),
    ast.Mod: ("mod", lambda a, b: a % b),
    ast.Pow: ("pow", lambda a, b: a ** b),
    ast.BitAnd: ("bit_and", lambda a, b: a & b),
    ast.BitOr: ("bit_or", lambda a, b: a | b),
    ast.BitXor: ("bit_xor", lambda a, b: a ^ b),
    ast.LShift: ("shl", lambda a, b: a << b),
    ast.RShift: ("shr", lambda a, b: a >> b),
    ast.MatMult: ("matmul", lambda a, b: a @ b),
}

_COMPARE = {
    ast.Lt: ("cmp_lt", lambda a, b: a < b),
    ast.LtE: ("cmp_le", lambda a, b: a <= b),
    ast.Gt: ("cmp_gt", lambda a, b: a > b),
    ast.GtE: ("cmp_ge", lambda a, b: a >= b),
    ast.Eq: ("cmp_eq", lambda a, b: a == b),
    ast.NotEq: ("cmp_ne", lambda a, b: a != b),
}

# Augmented assignments on field/ndarray elements that are atomic.
_ATOMIC_AUG = {ast.Add: "atomic_add", ast.Sub: "atomic_sub", ast.BitAnd: "atomic_and",
               ast.BitOr: "atomic_or", ast.BitXor: "atomic_xor"}

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


class NdRange:
    """qd.ndrange(a, (b, c), ...): a multi-dimensional iteration space."""

    def __init__(self, *dims):
        self.bounds = []
        for d in dims:
            if isinstance(d, (tuple, list)):
                if len(d) != 2:
                    raise QuadrantsTypeError("ndrange bounds are n or (begin, end)")
                self.bounds.append((d[0], d[1]))
            else:
                self.bounds.append((0, d))


class Grouped:
    """qd.grouped(x): loops over the indices of x as one index vector."""

    def __init__(self, target):
        self.target = target


def grouped(x):
    """for I in qd.grouped(x): I is the index vector of a field, ndarray or
    qd.ndrange (x[I] indexes with it)."""
    return Grouped(x)


class LoopConfig:
    """What qd.loop_config(...) asked of the next for loop."""

    def __init__(self, node, serialize=False, block_dim=None):
        self.node = node            # the qd.loop_config call, for errors
        self.serialize = serialize
        self.block_dim = block_dim


def loop_config(*, serialize=False, block_dim=None, parallelize=None,
                block_dim_adaptive=True):
    """qd.loop_config(serialize=False, block_dim=None, parallelize=None,
    block_dim_adaptive=True), as a statement right before a for loop in a
    kernel, configures that loop only.

    serialize=True runs the loop serially, in order, even when it is the
    outermost (parallel) loop of the kernel; `break` is then allowed in it.
    block_dim is the number of threads per block on GPU backends (a
    positive int; CPU backends have no blocks and ignore it).
    parallelize is the number of CPU threads the loop may use (a positive
    int, as upstream): 1 runs it serially, like serialize=True; a larger
    count is a hint that does not change results, so it is accepted and the
    runtime's thread pool is used. block_dim_adaptive (a bool, upstream's
    GPU block-size heuristic) is accepted and does not change results.
    """
    raise QuadrantsSyntaxError("qd.loop_config() can only be called in kernel code, as a "
                               "statement right before the for loop it configures")


_LOOP_CONFIG_OPTIONS = ("serialize", "block_dim", "parallelize", "block_dim_adaptive")


class LoopFrame:
    """What break/continue may do in the loop being built."""

    def __init__(self, parallel, static):
        self.parallel = parallel
        self.static = static


class FunctionCompiler(ast.NodeVisitor):
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

    def check_loop_config_target(self, body, i):
        """A qd.loop_config(...) statement must be followed by a for loop."""
        config = self.pending_loop_config
        if config is None:
            return
        following = body[i + 1] if i + 1 < len(body) else None
        if not isinstance(following, ast.For):
            self.pending_loop_config = None
            found = "nothing" if following is None else \
                f"a {type(following).__name__} statement"
            raise self.error(config.node, f"qd.loop_config() must be followed directly by "
                             f"the for loop it configures, found {found}",
                             QuadrantsSyntaxError)

    # ---- names and variables --------------------------------------------------
    def lookup(self, node, name):
        if name in self.scope:
            return self.scope[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name '{name}' is not defined", QuadrantsSyntaxError)

    def declare(self, name, value):
        """Binds `name` to a new local variable holding `value`."""
        if isinstance(value, Composite):
            self.scope[name] = matrix.make_local(self, name, value)
            return self.scope[name]
        expr = context.to_expr(value)
        var = self.new_var(name, expr.dtype)
        self.ctx.builder.local_store(var.alloca, expr.stmt)
        return var

    def new_var(self, name, dtype):
        var = self.new_scalar_var(name, dtype)
        self.scope[name] = var
        return var

    def new_scalar_var(self, name, dtype):
        """A local scalar variable, not bound to a name."""
        region, which = self.ctx.region
        alloca = self.ctx.builder.alloca_at_start(region, which, dtype.name)
        return Var(alloca, dtype, name)

    def assign_name(self, node, name, value):
        current = self.scope.get(name)
        if isinstance(current, Var):
            if isinstance(value, Composite):
                raise self.error(node, f"'{name}' is a scalar variable and cannot be "
                                 f"assigned {value._describe()}", QuadrantsTypeError)
            self.store_var(current, value)
            return
        if matrix.is_local(current):
            matrix.store(current, value, f"assignment to '{name}'")
            return
        if isinstance(value, Composite):
            self.scope[name] = matrix.make_local(self, name, value)
            return
        value = context.load(value)
        if isinstance(value, (Expr, numbers.Number)):
            expr = context.to_expr(value)
            var = self.new_var(name, expr.dtype)
            self.ctx.builder.local_store(var.alloca, expr.stmt)
        else:
            # Compile-time objects (fields, ndarrays, tuples, ...) are aliases.
            self.scope[name] = value

    def store_var(self, var, value):
        expr = context.to_expr(value, like=var.dtype)
        self.ctx.builder.local_store(var.alloca, expr.stmt)

    def assign(self, node, target, value):
        if isinstance(target, ast.Name):
            self.assign_name(target, target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = context.load(value) if not isinstance(value, (tuple, list)) else value
            if isinstance(value, (tuple, list)):
                # Every value is read before any target is written (a, b = b, a).
                value = [context.load(v) if isinstance(v, (Var, GlobalRef, Composite)) else v
                         for v in value]
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(node, "cannot unpack this value into "
                                 f"{len(target.elts)} targets", QuadrantsSyntaxError)
            for t, v in zip(target.elts, value):
                self.assign(node, t, v)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            ref = self.eval(target)
            if isinstance(ref, GlobalRef) and not isinstance(value, Composite):
                expr = context.to_expr(value, like=ref.dtype)
                self.ctx.builder.global_store(ref.ptr, expr.stmt)
            elif isinstance(ref, (Var, GlobalRef, Composite)):
                matrix.store(ref, value, f"assignment to {ast.unparse(target)}")
            else:
                raise self.error(node, "only field and ndarray elements and components "
                                 "of local vectors, matrices and structs can be assigned "
                                 "by subscript or attribute", QuadrantsSyntaxError)
        else:
            raise self.error(node, "unsupported assignment target", QuadrantsSyntaxError)

    # ---- statements -----------------------------------------------------------
    def visit_Expr(self, node):
        self.eval(node.value)

    def visit_Pass(self, node):
        pass

    def visit_Assign(self, node):
        value = self.eval(node.value)
        if len(node.targets) > 1 and is_runtime(value):
            value = context.load(value)
        for target in node.targets:
            self.assign(node, target, value)

    def visit_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "annotated assignment needs a plain name",
                             QuadrantsSyntaxError)
        annotation = self.eval(node.annotation)
        if isinstance(annotation, (matrix.MatrixType, StructType)):
            if node.value is None:
                raise self.error(node, "a vector, matrix or struct variable needs an "
                                 "initial value", QuadrantsSyntaxError)
            value = annotation.cast(self.eval(node.value))
            self.scope[node.target.id] = matrix.make_local(self, node.target.id, value)
            return
        dtype = types.normalize(annotation)
        var = self.new_var(node.target.id, dtype)
        if node.value is not None:
            self.store_var(var, self.eval(node.value))

    def visit_AugAssign(self, node):
        op = type(node.op)
        if op not in _BINARY:
            raise self.error(node, "unsupported augmented assignment", QuadrantsSyntaxError)
        if isinstance(node.target, (ast.Subscript, ast.Attribute)):
            ref = self.eval(node.target)
            if isinstance(ref, GlobalRef) or (isinstance(ref, matrix.Matrix) and any(
                    isinstance(e, GlobalRef) for e in ref.entries)):
                value = self.eval(node.value)
                if op in _ATOMIC_AUG:
                    getattr(ops, _ATOMIC_AUG[op])(ref, value)
                    return
                name, python_fn = _BINARY[op]
                result = ops.binary(name, ref, value, python_fn)
                if isinstance(ref, GlobalRef):
                    self.ctx.builder.global_store(
                        ref.ptr, context.to_expr(result, like=ref.dtype).stmt)
                else:
                    matrix.store(ref, result, "augmented assignment")
                return
            if isinstance(ref, matrix.DynamicElement) and op in _ATOMIC_AUG and any(
                    isinstance(e, GlobalRef) for e in ref.entries):
                # A run-time component of a field element: atomic in the
                # branch that selects it.
                value = context.load(self.eval(node.value))
                ref.store(lambda e: getattr(ops, _ATOMIC_AUG[op])(e, value))
                return
            if isinstance(ref, (Var, Composite)):
                name, python_fn = _BINARY[op]
                result = ops.binary(name, ref, self.eval(node.value), python_fn)
                matrix.store(ref, result, f"augmented assignment to "
                             f"{ast.unparse(node.target)}")
                return
        current = self.eval(node.target)
        name, python_fn = _BINARY[op]
        result = ops.binary(name, current, self.eval(node.value), python_fn)
        self.assign(node, node.target, result)

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
                    self.block(body)
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
            self.block(node.body)
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
            raise self.error(node, f"'{what}' is not supported in a qd.static loop",
                             QuadrantsSyntaxError)
        if frame.parallel and what == "break":
            raise self.error(node, "'break' is not allowed in the outermost (parallel) "
                             "loop of a kernel", QuadrantsSyntaxError)

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
            if not isinstance(text, str):
                raise self.error(node, "an assert message must be a string",
                                 QuadrantsSyntaxError)
            message = text
        if not isinstance(cond, Expr):
            if not cond:
                raise self.error(node, f"assertion is always false: {message}",
                                 QuadrantsCompilationError)
            return
        self.ctx.builder.assert_(cond.stmt, message, [a.stmt for a in args])

    def visit_Return(self, node):
        raise self.error(node, "return is only supported as the last statement of a "
                         "qd.func", QuadrantsSyntaxError)

    # ---- for loops -------------------------------------------------------------
    def visit_For(self, node):
        config, self.pending_loop_config = self.pending_loop_config, None
        if node.orelse:
            raise self.error(node, "for/else is not supported", QuadrantsSyntaxError)
        if isinstance(node.iter, ast.Call) and self.is_static_call(node.iter):
            return self.static_for(node, self.eval_static(node.iter))
        if config is not None and config.serialize and self.is_outermost():
            with self.serial_task():
                return self.dynamic_for(node)
        return self.dynamic_for(node)

    @contextlib.contextmanager
    def serial_task(self):
        """Builds what is inside as the body of a one-iteration parallel
        loop: one thread runs it, so a loop built in it is serial and in
        order, like the inner loops of a parallel loop."""
        b = self.ctx.builder
        task = b.range_for(context.to_expr(0).stmt, context.to_expr(1).stmt)
        b.push_block(task, 0)
        saved_region, saved_parallel = self.ctx.region, self.ctx.in_parallel
        self.ctx.region = (task, 0)
        self.ctx.in_parallel = True
        try:
            yield
        finally:
            self.ctx.region, self.ctx.in_parallel = saved_region, saved_parallel
            b.pop_block()

    def dynamic_for(self, node):
        iterable = self.eval(node.iter)
        if isinstance(iterable, range):
            iterable = NdRange((iterable.start, iterable.stop)) if iterable.step == 1 else \
                self.fail_step(node)
        if isinstance(iterable, RuntimeRange):
            iterable = NdRange((iterable.begin, iterable.end))
        if isinstance(iterable, NdRange):
            return self.range_for(node, iterable)
        if isinstance(iterable, Grouped):
            return self.grouped_for(node, iterable.target)
        if isinstance(iterable, (MatrixField, StructField)):
            return self.struct_for(node, iterable._leaf_fields()[0])
        if isinstance(iterable, Field):
            return self.struct_for(node, iterable)
        if isinstance(iterable, NdarrayArg):
            return self.ndarray_for(node, iterable)
        raise self.error(node, "a kernel can loop over range(), qd.ndrange(), a field, "
                         "an ndarray parameter, or qd.static(...) of a Python iterable",
                         QuadrantsSyntaxError)

    def fail_step(self, node):
        raise self.error(node, "range() with a step is not supported; use "
                         "qd.static(range(...)) or scale the index", QuadrantsSyntaxError)

    def targets(self, node, count, what="this loop"):
        names = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) \
            else [node.target]
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.error(node, "loop targets must be names", QuadrantsSyntaxError)
        if len(names) != count:
            raise self.error(node, f"{what} has {count} indices but the loop has "
                             f"{len(names)} targets", QuadrantsSyntaxError)
        return [n.id for n in names]

    def is_outermost(self):
        return self.is_kernel and self.depth == 0 and not self.ctx.in_parallel

    def run_loop_body(self, node, loop, bindings, parallel):
        b = self.ctx.builder
        b.push_block(loop, 0)
        saved_region, saved_parallel = self.ctx.region, self.ctx.in_parallel
        if parallel:
            self.ctx.region = (loop, 0)
            self.ctx.in_parallel = True
        self.loops.append(LoopFrame(parallel=parallel, static=False))
        before = set(self.scope)
        try:
            for name, value in bindings(loop).items():
                self.scope[name] = value
            self.block(node.body)
        finally:
            self.loops.pop()
            self.ctx.region, self.ctx.in_parallel = saved_region, saved_parallel
            b.pop_block()
            if parallel:
                self.forget_locals(before)

    def forget_locals(self, before):
        """Drops the local variables first bound in a parallel loop's body:
        they live in that loop's task, so a later loop that reuses a name
        gets a variable of its own."""
        for name in list(self.scope):
            if name not in before and (isinstance(self.scope[name], Var) or
                                       matrix.is_local(self.scope[name])):
                del self.scope[name]

    def grouped_for(self, node, target):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "a qd.grouped loop has one target", QuadrantsSyntaxError)
        if isinstance(target, range):
            target = NdRange((target.start, target.stop))
        elif isinstance(target, (Field, MatrixField, StructField)):
            target = NdRange(*target.shape)
        elif isinstance(target, NdarrayArg):
            target = NdRange(*[target.shape[k] for k in range(target.ndim)])
        elif not isinstance(target, NdRange):
            raise self.error(node, "qd.grouped() takes a field, an ndarray or qd.ndrange()",
                             QuadrantsTypeError)
        return self.range_for(node, target, group=node.target.id)

    def range_for(self, node, ndrange, group=None):
        if group is not None:
            names = [f"{group}[{k}]" for k in range(len(ndrange.bounds))]
            bind = self._bind_group
        else:
            names = self.targets(node, len(ndrange.bounds))
            bind = None
        return self._range_for(node, ndrange, names, group, bind)

    @staticmethod
    def _bind_group(group, names, values):
        exprs = [values[n] for n in names]
        return {group: matrix.Matrix._make(exprs, len(exprs), 1, 1)}

    def _range_for(self, node, ndrange, names, group, bind):
        def regroup(bindings):
            return bindings if bind is None else bind(group, names, bindings)
        b = self.ctx.builder
        begins = [context.load(lo) for lo, _ in ndrange.bounds]
        parallel = self.is_outermost()
        if len(names) == 1:
            end = context.load(ndrange.bounds[0][1])
            first = context.to_expr(begins[0], like=end if isinstance(end, Expr) else None)
            loop = b.range_for(first.stmt, context.to_expr(end, like=first).stmt)

            def bind_one(lp):
                return regroup({names[0]: Expr(b.loop_index(lp, 0))})
            return self.run_loop_body(node, loop, bind_one, parallel)
        # Several dimensions run as one flat loop; indices are recovered by
        # division, the last dimension varying fastest.
        extents = [ops.binary("sub", context.load(hi), lo, lambda x, y: x - y)
                   for lo, (_, hi) in zip(begins, ndrange.bounds)]
        total = extents[0]
        for e in extents[1:]:
            total = ops.binary("mul", total, e, lambda x, y: x * y)
        loop = b.range_for(context.to_expr(0).stmt, context.to_expr(total).stmt)

        def bind_many(lp):
            flat = Expr(b.loop_index(lp, 0))
            values = [None] * len(names)
            for axis in range(len(names) - 1, -1, -1):
                extent = extents[axis]
                index = ops.binary("mod", flat, extent, None) if axis else flat
                values[axis] = ops.binary("add", index, begins[axis], None)
                if axis:
                    flat = ops.binary("floordiv", flat, extent, None)
            return regroup(dict(zip(names, values)))
        self.run_loop_body(node, loop, bind_many, parallel)

    def ndarray_for(self, node, array):
        """for i, j in arr: every index of the ndarray, as a range loop over
        its run-time shape (the last axis varying fastest)."""
        if array.ndim == 0:
            raise self.error(node, f"cannot loop over 0-D ndarray '{array.name}'",
                             QuadrantsSyntaxError)
        self.targets(node, array.ndim, f"ndarray '{array.name}' ({array.ndim}-D)")
        return self.range_for(node, NdRange(*[array.shape[k] for k in range(array.ndim)]))

    def struct_for(self, node, f):
        if len(f.shape) == 0:
            raise self.error(node, f"cannot loop over 0-D field '{f.name}'",
                             QuadrantsSyntaxError)
        names = self.targets(node, len(f.shape), f"field '{f.name}' ({len(f.shape)}-D)")
        b = self.ctx.builder
        prog = self.ctx.program
        dense = prog.parent_of(f.place_id())
        loop = b.struct_for(dense)

        def bind(lp):
            return {name: Expr(b.loop_index(lp, axis)) for axis, name in enumerate(names)}
        self.run_loop_body(node, loop, bind, self.is_outermost())

    def is_static_call(self, call):
        try:
            fn = self.eval_quiet(call.func)
        except QuadrantsError:
            return False
        return fn is static

    def eval_quiet(self, node):
        if isinstance(node, ast.Attribute):
            base = self.eval_quiet(node.value)
            return getattr(base, node.attr)
        if isinstance(node, ast.Name):
            return self.lookup(node, node.id)
        raise QuadrantsCompilationError("not a plain name")

    def eval_static(self, call):
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, "qd.static() takes one argument", QuadrantsSyntaxError)
        value = self.eval(call.args[0])
        if is_runtime(value):
            raise self.error(call, "qd.static() needs a compile-time value, got a "
                             "run-time one", QuadrantsTypeError)
        return value

    def static_for(self, node, iterable):
        if isinstance(iterable, NdRange):
            iterable = _static_ndrange(self, node, iterable)
        try:
            items = list(iterable)
        except TypeError:
            raise self.error(node, "qd.static() loop needs an iterable",
                             QuadrantsTypeError) from None
        self.loops.append(LoopFrame(parallel=False, static=True))
        try:
            for item in items:
                if isinstance(node.target, ast.Name):
                    self.scope[node.target.id] = item
                else:
                    self.assign(node, node.target, item)
                self.block(node.body)
        finally:
            self.loops.pop()

    # ---- expressions -----------------------------------------------------------
    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        return self.lookup(node, node.id)

    def visit_Tuple(self, node):
        return tuple(self.eval(e) for e in node.elts)

    def visit_List(self, node):
        return [self.eval(e) for e in node.elts]

    def visit_Dict(self, node):
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def visit_JoinedStr(self, node):
        # With run-time values the result is a printing.RuntimeText, which
        # only print() accepts.
        return printing.join_text([self.eval(value) for value in node.values])

    def visit_FormattedValue(self, node):
        value = self.eval(node.value)
        spec = self.eval(node.format_spec) if node.format_spec else ""
        if not isinstance(spec, str):
            raise self.error(node, "a format spec must be known at compile time",
                             QuadrantsSyntaxError)
        conversion = chr(node.conversion) if node.conversion > 0 else None
        return printing.format_value(value, conversion, spec)

    def visit_Attribute(self, node):
        base = self.eval(node.value)
        if is_runtime(base):
            raise self.error(node, f"run-time values have no attribute '{node.attr}'",
                             QuadrantsSyntaxError)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"{type(base).__name__} object has no attribute "
                             f"'{node.attr}'", QuadrantsSyntaxError) from None

    def visit_Subscript(self, node):
        base = self.eval(node.value)
        index = self.eval(node.slice)
        if isinstance(base, (Field, NdarrayArg, MatrixField, StructField)):
            return self.element(node, base, index)
        if isinstance(base, matrix.Matrix):
            return base[index]
        if is_runtime(base):
            raise self.error(node, "cannot subscript a scalar run-time value",
                             QuadrantsTypeError)
        index = context.load(index)
        if isinstance(index, Expr) and not isinstance(base, ShapeProxy):
            raise self.error(node, "cannot index a Python object with a run-time value",
                             QuadrantsTypeError)
        return base[index]

    def element(self, node, base, index):
        if index is None:
            index = ()
        elif not isinstance(index, tuple):
            index = (index,)
        flat = []
        for v in index:
            # A vector index (qd.grouped) stands for its components.
            v = context.load(v)
            flat.extend(v.entries if isinstance(v, matrix.Matrix) else [v])
        indices = []
        for v in flat:
            e = context.to_expr(v)
            if e.dtype.is_float:
                raise self.error(node, f"an index must be an integer, found {e.dtype}",
                                 QuadrantsTypeError)
            indices.append(e.stmt)
        b = self.ctx.builder
        # Errors about this access name the variable as the user wrote it.
        label = ast.unparse(node.value) if isinstance(node, ast.Subscript) else base.name
        if isinstance(base, (MatrixField, StructField)):
            if len(indices) != len(base.shape):
                raise self.error(node, f"field '{base.name}' has {len(base.shape)} "
                                 f"dimensions, indexed with {len(indices)}",
                                 QuadrantsTypeError)
            return base._element(lambda f: b.field_ptr(f.place_id(), indices, label))
        if isinstance(base, Field):
            if len(indices) != len(base.shape):
                raise self.error(node, f"field '{base.name}' has {len(base.shape)} "
                                 f"dimensions, indexed with {len(indices)}",
                                 QuadrantsTypeError)
            return GlobalRef(b.field_ptr(base.place_id(), indices, label), base.dtype)
        if len(indices) != base.ndim:
            raise self.error(node, f"ndarray '{base.name}' has {base.ndim} dimensions, "
                             f"indexed with {len(indices)}", QuadrantsTypeError)
        if isinstance(base.element, StructType):
            leaves = len(base.element._flat_dtypes())
            refs = [GlobalRef(b.ndarray_ptr(base.arg, indices + [
                context.constant(k, types.i32).stmt], label), base.dtype)
                for k in range(leaves)]
            return base.element._from_flat(refs)
        if base.element is not None:
            et = base.element
            refs = []
            for k in range(et.n * et.m):
                sub = [k] if et.ndim == 1 else [k // et.m, k % et.m]
                ptr = b.ndarray_ptr(base.arg, indices + [context.constant(c, types.i32).stmt
                                                         for c in sub], label)
                refs.append(GlobalRef(ptr, base.dtype))
            return matrix.Matrix._make(refs, et.n, et.m, et.ndim)
        return GlobalRef(b.ndarray_ptr(base.arg, indices, label), base.dtype)

    def visit_Slice(self, node):
        raise self.error(node, "slices are not supported in kernels", QuadrantsSyntaxError)

    def visit_BinOp(self, node):
        op = type(node.op)
        if op not in _BINARY:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported",
                             QuadrantsSyntaxError)
        name, python_fn = _BINARY[op]
        return ops.binary(name, self.eval(node.left), self.eval(node.right), python_fn)

    def visit_UnaryOp(self, node):
        value = context.load(self.eval(node.operand))
        op = type(node.op)
        if isinstance(value, matrix.Matrix):
            if op is ast.USub:
                return -value
            if op is ast.UAdd:
                return value
            name = {ast.Not: "logical_not", ast.Invert: "bit_not"}[op]
            return value._like([Expr(self.ctx.builder.unary(name, context.to_expr(e).stmt))
                                for e in value.entries])
        if not isinstance(value, Expr):
            return {ast.USub: lambda v: -v, ast.UAdd: lambda v: +v,
                    ast.Not: lambda v: not v, ast.Invert: lambda v: ~v}[op](value)
        if op is ast.UAdd:
            return value
        name = {ast.USub: "neg", ast.Not: "logical_not", ast.Invert: "bit_not"}[op]
        return Expr(self.ctx.builder.unary(name, value.stmt))

    def visit_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = context.load(self.eval(node.values[0]))
        for value_node in node.values[1:]:
            if not isinstance(result, Expr):
                # Python short-circuit on compile-time values.
                if (not result) if is_and else result:
                    return result
                result = context.load(self.eval(value_node))
                continue
            other = context.load(self.eval(value_node))
            result = ops.binary("logical_and" if is_and else "logical_or", result, other,
                                None)
        return result

    def visit_Compare(self, node):
        left = self.eval(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            if type(op) not in _COMPARE:
                l, r = context.load(left), context.load(right)
                if is_runtime(l) or is_runtime(r):
                    raise self.error(node, f"comparison {type(op).__name__} is not "
                                     f"supported on run-time values", QuadrantsSyntaxError)
                value = {ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
                         ast.In: lambda a, b: a in b,
                         ast.NotIn: lambda a, b: a not in b}[type(op)](l, r)
            else:
                name, python_fn = _COMPARE[type(op)]
                value = ops.binary(name, left, right, python_fn)
            result = value if result is None else ops.binary("logical_and", result, value,
                                                             lambda a, b: a and b)
            left = right
        return result

    def visit_IfExp(self, node):
        cond = context.load(self.eval(node.test))
        if not isinstance(cond, Expr):
            return self.eval(node.body if cond else node.orelse)
        a = context.load(self.eval(node.body))
        c = context.load(self.eval(node.orelse))
        if isinstance(a, Composite) or isinstance(c, Composite):
            return ops.select(cond, a, c)
        ea = context.to_expr(a, like=c if isinstance(c, Expr) else None)
        ec = context.to_expr(c, like=ea)
        return Expr(self.ctx.builder.select(cond.stmt, ea.stmt, ec.stmt))

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
                             tuple(context.load(v) for v in a) for a in args])
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
        from quadrants.lang import kernel  # pylint: disable=import-outside-toplevel
        if isinstance(fn, pytypes.MethodType) and isinstance(fn.__func__,
                                                             pytypes.FunctionType):
            args = [fn.__self__] + list(args)
            fn = fn.__func__
        if not isinstance(fn, pytypes.FunctionType):
            return _NOT_INLINABLE
        try:
            wrapper = kernel.python_callable(fn)
        except QuadrantsSyntaxError as e:
            raise self.error(node, str(e), QuadrantsSyntaxError) from None
        return wrapper.inline(self.ctx, node, self, args, kwargs)

    def set_loop_config(self, node):
        if node.args:
            raise self.error(node, "qd.loop_config() takes keyword arguments only "
                             "(serialize=..., block_dim=..., parallelize=...)",
                             QuadrantsSyntaxError)
        options = {}
        for keyword in node.keywords:
            if keyword.arg not in _LOOP_CONFIG_OPTIONS:
                raise self.error(node, f"qd.loop_config() got an unknown option "
                                 f"'{keyword.arg}' (expected one of "
                                 f"{', '.join(_LOOP_CONFIG_OPTIONS)})", QuadrantsSyntaxError)
            value = context.load(self.eval(keyword.value))
            if is_runtime(value):
                raise self.error(node, f"qd.loop_config({keyword.arg}=...) needs a "
                                 f"compile-time value, got a run-time one",
                                 QuadrantsTypeError)
            options[keyword.arg] = value
        serialize = options.get("serialize", False)
        if not isinstance(serialize, bool):
            raise self.error(node, f"qd.loop_config(serialize=...) must be a bool, got "
                             f"{serialize!r}", QuadrantsTypeError)
        block_dim = options.get("block_dim")
        if block_dim is not None and (isinstance(block_dim, bool) or
                                      not isinstance(block_dim, numbers.Integral) or
                                      block_dim <= 0):
            raise self.error(node, f"qd.loop_config(block_dim=...) must be a positive int "
                             f"or None, got {block_dim!r}", QuadrantsTypeError)
        parallelize = options.get("parallelize")
        if parallelize is not None and (isinstance(parallelize, bool) or
                                        not isinstance(parallelize, numbers.Integral) or
                                        parallelize <= 0):
            raise self.error(node, f"qd.loop_config(parallelize=...) must be a positive int "
                             f"or None, got {parallelize!r}", QuadrantsTypeError)
        if not isinstance(options.get("block_dim_adaptive", True), bool):
            raise self.error(node, f"qd.loop_config(block_dim_adaptive=...) must be a bool, "
                             f"got {options['block_dim_adaptive']!r}", QuadrantsTypeError)
        # One thread is serial execution; more threads only change speed.
        serialize = serialize or parallelize == 1
        if self.pending_loop_config is not None:
            raise self.error(node, "qd.loop_config() is called twice before one loop",
                             QuadrantsSyntaxError)
        self.pending_loop_config = LoopConfig(node, serialize,
                                              None if block_dim is None else int(block_dim))

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


def _static_ndrange(compiler, node, ndrange):
    import itertools  # pylint: disable=import-outside-toplevel
    bounds = []
    for lo, hi in ndrange.bounds:
        lo, hi = context.load(lo), context.load(hi)
        if isinstance(lo, Expr) or isinstance(hi, Expr):
            raise compiler.error(node, "qd.ndrange() here needs compile-time bounds",
                                 QuadrantsSyntaxError)
        bounds.append(range(lo, hi))
    return list(itertools.product(*bounds))


class RuntimeRange:
    """range(a, b) with run-time bounds."""

    def __init__(self, begin, end):
        self.begin = begin
        self.end = end


def static(value):
    """qd.static(x): evaluates x at compile time (qd.static(range(n)) unrolls)."""
    return value


def _int_cast(x=0):
    from quadrants.lang import runtime  # pylint: disable=import-outside-toplevel
    return ops.cast(x, runtime.default_ip()) if is_runtime(x) or isinstance(x, Expr) \
        else int(x)


def _float_cast(x=0.0):
    from quadrants.lang import runtime  # pylint: disable=import-outside-toplevel
    return ops.cast(x, runtime.default_fp()) if is_runtime(x) or isinstance(x, Expr) \
        else float(x)


_int_cast._qd_intrinsic = True
_float_cast._qd_intrinsic = True
_BUILTIN_INTRINSICS = {min: ops.min, max: ops.max, abs: ops.abs, int: _int_cast,
                       float: _float_cast, pow: ops.pow}
