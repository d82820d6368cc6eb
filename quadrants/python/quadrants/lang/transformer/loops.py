"""For loops: range() and qd.ndrange() (several dimensions as one flat
loop), qd.grouped(), fields (struct-for), ndarrays, loops that qd.static()
unrolls, and qd.loop_config(serialize=True) at the top of a kernel. The
outermost loop of a kernel is its parallel loop."""
import ast
import contextlib
import copy

from quadrants import _logging
from quadrants.lang import context, matrix, ops, python_backend
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)
from quadrants.lang.expr import Expr, NdarrayArg, Var, is_runtime
from quadrants.lang import sparse
from quadrants.lang.field import Field, SNode, index_bounds, loop_index
from quadrants.lang.struct import StructField
from quadrants.lang._ndrange import _Ndrange as NdRange

class Grouped:
    """qd.grouped(x): loops over the indices of x as one index vector."""

    def __init__(self, target):
        self.target = target


def _leaf(f):
    return f._leaf_fields()[0] if hasattr(f, "_leaf_fields") else f


def grouped(x):
    """for I in qd.grouped(x): I is the index vector of a field, ndarray or
    qd.ndrange (x[I] indexes with it)."""
    if python_backend.active():
        return python_backend.grouped(x)
    return Grouped(x)


class LoopFrame:
    """What break/continue may do in the loop being built. A qd.static loop
    records the run-time nesting at its body (dynamic_depth): a break or
    continue there, under compile-time ifs only, ends the unrolling or the
    current copy of the body."""

    def __init__(self, parallel, static, dynamic_depth=0):
        self.parallel = parallel
        self.static = static
        self.dynamic_depth = dynamic_depth


class StaticJump(Exception):
    """A break ("break") or continue ("continue") of a qd.static loop,
    raised while compiling its body and caught by the loop."""

    def __init__(self, what):
        super().__init__(what)
        self.what = what


class RuntimeRange:
    """range(a, b) with run-time bounds."""

    def __init__(self, begin, end):
        self.begin = begin
        self.end = end


class LoopsMixin:
    """FunctionCompiler's for loops."""

    def visit_For(self, node):
        config, self.pending_loop_config = self.pending_loop_config, None
        self.loop_block_dim = config.block_dim if config is not None else None
        if node.orelse:
            raise self.error(node, "for/else is not supported", QuadrantsSyntaxError)
        node = self.choose_iterable(node)
        if isinstance(node.iter, ast.Call) and self.is_static_call(node.iter):
            return self.static_for(node, self.eval_static(node.iter))
        name = config.name if config is not None else None
        if name is not None and not self.makes_a_task():
            _logging.warn(f"{self.where(config.node)}: in {self.ctx.kind} '{self.ctx.name}': "
                          f"qd.loop_config(name='{name}') names a loop nested inside another "
                          f"for-loop (or a run-time if or while); only top-level loops "
                          f"become GPU kernels of their own, so the name is dropped")
            name = None
        self.loop_name = name
        if config is not None and config.serialize and self.is_outermost():
            with self.serial_task(name):
                return self.dynamic_for(node)
        return self.dynamic_for(node)

    def choose_iterable(self, node):
        """`for x in a if qd.static(c) else b:` loops over the branch the
        compile-time condition picks, so a qd.static() branch unrolls."""
        while isinstance(node.iter, ast.IfExp):
            test = context.load(self.eval(node.iter.test))
            if is_runtime(test):
                break
            node = copy.copy(node)
            node.iter = node.iter.body if test else node.iter.orelse
        return node

    @contextlib.contextmanager
    def serial_task(self, name=None):
        """Builds what is inside as the body of a one-iteration parallel
        loop: one thread runs it, so a loop built in it is serial and in
        order, like the inner loops of a parallel loop. `name` names the
        task (qd.loop_config(name=...))."""
        b = self.ctx.builder
        task = b.range_for(context.to_expr(0).stmt, context.to_expr(1).stmt)
        if name is not None:
            b.set_loop_name(task, name)
            self.loop_name = None
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
        if isinstance(iterable, SNode) and iterable._id != 0:
            return self.snode_for(node, iterable)
        if isinstance(iterable, NdarrayArg):
            return self.ndarray_for(node, iterable)
        raise self.error(node, "a kernel can loop over range(), qd.ndrange(), a field, "
                         "an ndarray parameter, or qd.static(...) of a Python iterable",
                         QuadrantsSyntaxError)

    def fail_step(self, node):
        raise self.error(node, "Range should have 1 or 2 arguments, found 3: range() with a "
                         "step is not supported; use "
                         "qd.static(range(...)) or scale the index", QuadrantsSyntaxError)

    def targets(self, node, count, what="this loop"):
        names = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) \
            else [node.target]
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.error(node, "loop targets must be names", QuadrantsSyntaxError)
        if len(names) != count:
            upstream = " (Ndrange for loop with number of the loop variables not equal to " \
                "the dimension of the ndrange is not supported)" if what == "this loop" else ""
            raise self.error(node, f"{what} has {count} indices but the loop has "
                             f"{len(names)} targets{upstream}", QuadrantsSyntaxError)
        for n in names:
            if isinstance(self.scope.get(n.id), Var):
                raise self.error(node, f"loop index '{n.id}' is already a local variable "
                                 f"assigned before the loop; a loop index is a new name "
                                 f"of the loop's own", QuadrantsCompilationError)
        return [n.id for n in names]

    def makes_a_task(self):
        """Whether a loop here becomes a task of its own: in the kernel,
        outside any run-time if, while or for (qd.static blocks unroll)."""
        return not self.ctx.in_parallel and self.ctx.kind == "kernel" and \
            self.ctx.outer_dynamic_depth + self.dynamic_depth == 0

    def is_outermost(self):
        """Whether a loop here is at the kernel's top level, where it runs in
        parallel: in the kernel body, or in a qd.func called there, outside
        any run-time if, while or for. Blocks decided at compile time (an
        `if qd.static(...)`, a qd.static loop's body) leave it top-level, as
        the offloaded kernel has it."""
        return self.makes_a_task()

    def run_loop_body(self, node, loop, bindings, parallel):
        b = self.ctx.builder
        block_dim, self.loop_block_dim = getattr(self, "loop_block_dim", None), None
        if parallel and block_dim:
            b.set_block_dim(loop, block_dim)
        name, self.loop_name = getattr(self, "loop_name", None), None
        if name is not None:
            b.set_loop_name(loop, name)
        b.push_block(loop, 0)
        saved_region, saved_parallel = self.ctx.region, self.ctx.in_parallel
        # qd.stop_grad(field) lasts to the end of the task it is called in.
        saved_stopped = set(self.ctx.stopped_places)
        if parallel:
            self.ctx.region = (loop, 0)
            self.ctx.in_parallel = True
        self.loops.append(LoopFrame(parallel=parallel, static=False))
        before = set(self.scope)
        try:
            for name, value in bindings(loop).items():
                self.scope[name] = value
            self.block(node.body, dynamic=True)
        finally:
            self.loops.pop()
            self.ctx.region, self.ctx.in_parallel = saved_region, saved_parallel
            b.pop_block()
            if parallel:
                self.forget_locals(before)
                self.ctx.stopped_places = saved_stopped

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
        elif isinstance(target, (Field, MatrixField, StructField)) and \
                sparse.is_sparse_field(_leaf(target).place_id()):
            # A sparse field's cells are visited only while active.
            return self.struct_for(node, _leaf(target), group=node.target.id)
        elif isinstance(target, SNode) and target._id != 0:
            return self.snode_for(node, target, group=node.target.id)
        elif isinstance(target, (Field, MatrixField, StructField)):
            target = NdRange(*index_bounds(target))
        elif isinstance(target, NdarrayArg):
            target = NdRange(*[target.shape[k] for k in range(target.ndim)],
                             axes=target.layout)
        elif not isinstance(target, NdRange):
            raise self.error(node, "qd.grouped() takes a field, an ndarray or qd.ndrange()",
                             QuadrantsTypeError)
        if not target.bounds:
            # A 0-D field has one element, at the empty index.
            group = node.target.id
            return self._range_for(node, NdRange((0, 1)), [f"{group}[]"], group,
                                   lambda g, names, values: {g: matrix.Matrix._make(
                                       [], 0, 1, 1)})
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
        # division, the innermost nesting level varying fastest: the last
        # axis, or axes[-1] of qd.ndrange(..., axes=...).
        extents = [ops.binary("sub", context.load(hi), lo, lambda x, y: x - y)
                   for lo, (_, hi) in zip(begins, ndrange.bounds)]
        total = extents[0]
        for e in extents[1:]:
            total = ops.binary("mul", total, e, lambda x, y: x * y)
        loop = b.range_for(context.to_expr(0).stmt, context.to_expr(total).stmt)
        order = ndrange.order()

        def bind_many(lp):
            flat = Expr(b.loop_index(lp, 0))
            values = [None] * len(names)
            for level in range(len(order) - 1, -1, -1):
                axis = order[level]
                extent = extents[axis]
                index = ops.binary("mod", flat, extent, None) if level else flat
                values[axis] = ops.binary("add", index, begins[axis], None)
                if level:
                    flat = ops.binary("floordiv", flat, extent, None)
            return regroup(dict(zip(names, values)))
        self.run_loop_body(node, loop, bind_many, parallel)

    def ndarray_for(self, node, array):
        """for i, j in arr: every index of the ndarray, as a range loop over
        its run-time shape, in memory order (the innermost memory level
        varying fastest); the targets name the users' axes."""
        if array.ndim == 0:
            raise self.error(node, f"cannot loop over 0-D ndarray '{array.name}'",
                             QuadrantsSyntaxError)
        self.targets(node, array.ndim, f"ndarray '{array.name}' ({array.ndim}-D)")
        return self.range_for(node, NdRange(*[array.shape[k] for k in range(array.ndim)],
                                            axes=array.layout))

    def struct_for(self, node, f, group=None):
        if len(f.shape) == 0:
            raise self.error(node, f"cannot loop over 0-D field '{f.name}'",
                             QuadrantsSyntaxError)
        if group is None:
            names = self.targets(node, len(f.shape), f"field '{f.name}' ({len(f.shape)}-D)")
        b = self.ctx.builder
        prog = self.ctx.program
        dense = prog.parent_of(f.place_id())
        loop = b.struct_for(dense)

        axes = f._layout_axes() or range(len(f.shape))

        def bind(lp):
            # The loop's indices are per layout axis; the field's dimensions
            # are the axes its levels index.
            values = [loop_index(f, Expr(b.loop_index(lp, physical)), axis)
                      for axis, physical in enumerate(axes)]
            if group is not None:
                return {group: matrix.Matrix._make(values, len(values), 1, 1)}
            return dict(zip(names, values))
        self.run_loop_body(node, loop, bind, self.is_outermost())

    def snode_for(self, node, snode, group=None):
        """for I in snode: the cells of a dense or sparse SNode (the active
        ones of a sparse level)."""
        ndim = len(snode.shape)
        if group is None:
            names = self.targets(node, ndim, f"SNode {snode._id} ({ndim}-D)")
        b = self.ctx.builder
        loop = b.struct_for(snode._id)

        def bind(lp):
            values = [Expr(b.loop_index(lp, axis)) for axis in range(ndim)]
            if group is not None:
                return {group: matrix.Matrix._make(values, len(values), 1, 1)}
            return dict(zip(names, values))
        self.run_loop_body(node, loop, bind, self.is_outermost())

    def static_for(self, node, iterable):
        if isinstance(iterable, Grouped) and isinstance(iterable.target, NdRange):
            # Index vectors of compile-time ints, in the ndrange's order.
            iterable = [matrix.Vector(list(index))
                        for index in _static_ndrange(self, node, iterable.target)]
        elif isinstance(iterable, NdRange):
            iterable = _static_ndrange(self, node, iterable)
        try:
            items = list(iterable)
        except TypeError:
            raise self.error(node, "qd.static() loop needs an iterable",
                             QuadrantsTypeError) from None
        self.loops.append(LoopFrame(parallel=False, static=True,
                                    dynamic_depth=self.dynamic_depth))
        # As upstream, the loop's names end with it (they are not locals).
        bound = [n.id for n in ast.walk(node.target)
                 if isinstance(n, ast.Name) and n.id not in self.scope]
        try:
            for item in items:
                if isinstance(node.target, ast.Name):
                    self.scope[node.target.id] = item
                elif _plain_names(node.target) and isinstance(item, (tuple, list)) and \
                        len(item) == len(node.target.elts):
                    # Compile-time values, as a single name binds them.
                    for target, value in zip(node.target.elts, item):
                        self.scope[target.id] = value
                else:
                    self.assign(node, node.target, item)
                try:
                    self.block(node.body)
                except StaticJump as jump:
                    if jump.what == "break":
                        break
                if self.returned:
                    break
        finally:
            self.loops.pop()
            for name in bound:
                self.scope.pop(name, None)


def _plain_names(target):
    return isinstance(target, (ast.Tuple, ast.List)) and \
        all(isinstance(e, ast.Name) for e in target.elts)


def _static_ndrange(compiler, node, ndrange):
    bounds = []
    for lo, hi in ndrange.bounds:
        lo, hi = context.load(lo), context.load(hi)
        if isinstance(lo, Expr) or isinstance(hi, Expr):
            raise compiler.error(node, "qd.ndrange() here needs compile-time bounds",
                                 QuadrantsSyntaxError)
        bounds.append((lo, hi))
    return list(NdRange(*bounds, axes=ndrange.axes))
