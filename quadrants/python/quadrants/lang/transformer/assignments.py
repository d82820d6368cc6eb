"""Variables and assignments: local scalars (vectors, matrices and structs
through matrix.make_local), plain, annotated, unpacking and augmented
assignments, and stores to field and ndarray elements (atomic for the
augmented +=, -=, &=, |= and ^=)."""
import ast
import numbers

import numpy as np

from quadrants.lang import context, matrix, ops, types
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, GlobalRef, Var, is_runtime
from quadrants.lang.struct import StructType
from quadrants.lang.transformer import overflow
from quadrants.lang.transformer.expressions import _BINARY

# Augmented assignments on field/ndarray elements that are atomic.
_ATOMIC_AUG = {ast.Add: "atomic_add", ast.Sub: "atomic_sub", ast.BitAnd: "atomic_and",
               ast.BitOr: "atomic_or", ast.BitXor: "atomic_xor"}


class AssignmentsMixin:
    """FunctionCompiler's variables and assignment statements."""

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

    def shares(self, name):
        """Whether a new variable `name` is one the serial code shares with
        a parallel loop, declared here in the serial code."""
        return name in self.shared_locals and not self.ctx.in_parallel

    def new_shared(self, name, value):
        """A shared local holding `value` (a scalar or a vector/matrix):
        GlobalRefs into a fresh hidden buffer, stored in serial code."""
        b = self.ctx.builder
        if isinstance(value, matrix.Matrix):
            exprs = [context.to_expr(e) for e in value.entries]
            dt = exprs[0].dtype
            for e in exprs[1:]:
                dt = types.promote(dt, e.dtype)
        else:
            exprs = [context.to_expr(value)]
            dt = exprs[0].dtype
        arg = self.ctx.hidden.temporary(name, dt, len(exprs))
        refs = []
        for k, e in enumerate(exprs):
            ptr = b.ndarray_ptr(arg.arg, [context.constant(k, types.i32).stmt], name)
            ref = GlobalRef(ptr, arg.dtype)
            b.global_store(ptr, ops.cast(e, arg.dtype).stmt)
            refs.append(ref)
        shared = value._like(refs) if isinstance(value, matrix.Matrix) else refs[0]
        self.scope[name] = shared
        return shared

    def assign_name(self, node, name, value):
        if name in self.immutable:
            raise self.error(node, f'Kernel argument "{name}" is immutable in the kernel: '
                             f"assign to its elements, or to a new local name",
                             QuadrantsSyntaxError)
        current = self.scope.get(name)
        if isinstance(current, GlobalRef) and name in self.shared_locals:
            if isinstance(value, Composite):
                raise self.error(node, f"'{name}' is a scalar variable and cannot be "
                                 f"assigned {value._describe()}", QuadrantsTypeError)
            expr = context.to_expr(context.load(value), like=current.dtype)
            self.ctx.builder.global_store(current.ptr, ops.cast(expr, current.dtype).stmt)
            return
        if isinstance(current, matrix.Matrix) and name in self.shared_locals and \
                any(isinstance(e, GlobalRef) for e in current.entries):
            matrix.store(current, value, f"assignment to '{name}'")
            return
        if current is None and name in self.source.assigned_once:
            loaded = context.load(value)
            if isinstance(loaded, numbers.Number):
                # A run-time variable, as upstream's; its one value is known
                # to directives that need a constant (qd.loop_config).
                self.known_constants[name] = loaded
        if self.shares(name) and current is None and self.ctx.hidden is not None:
            loaded = context.load(value)
            if isinstance(loaded, (Expr, numbers.Number, matrix.Matrix)):
                self.new_shared(name, loaded)
                return
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
            if isinstance(value, matrix.Matrix):
                value = matrix.unpacked(value)
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
            if hasattr(ref, "_qd_assign"):  # tile loads and stores (qd.simt)
                ref._qd_assign(self, node, value)
            elif isinstance(ref, GlobalRef) and not isinstance(value, Composite):
                expr = context.to_expr(value, like=ref.dtype)
                self.ctx.builder.global_store(ref.ptr, expr.stmt)
            elif isinstance(ref, (Var, GlobalRef, Composite)):
                matrix.store(ref, value, f"assignment to {ast.unparse(target)}")
            else:
                # The last sentence is upstream's wording.
                raise self.error(node, "only field and ndarray elements and components "
                                 "of local vectors, matrices and structs can be assigned "
                                 "by subscript or attribute. Static assign cannot be used "
                                 "on elements in arrays", QuadrantsSyntaxError)
        else:
            raise self.error(node, "unsupported assignment target", QuadrantsSyntaxError)

    def visit_Assign(self, node):
        value = self.eval(node.value)
        if isinstance(value, np.ndarray):
            # A 0-D numpy array is the scalar it holds (of its dtype).
            if value.ndim != 0:
                raise self.error(node, f"Only 0-dimensional numpy array can be used to "
                                 f"initialize a scalar expression; got one of shape "
                                 f"{value.shape}", QuadrantsTypeError)
            value = value[()]
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

    def augassign_protocol(self, node, target, op):
        """`target op= value` for an object taking it itself (_qd_augassign:
        qd.simt tiles, sparse matrix builder entries)."""
        try:
            target._qd_augassign(self, node, _BINARY[op][0], self.eval(node.value))
        except TypeError as e:
            raise self.error(node, str(e), QuadrantsTypeError) from None

    def visit_AugAssign(self, node):
        op = type(node.op)
        if op not in _BINARY:
            raise self.error(node, "unsupported augmented assignment", QuadrantsSyntaxError)
        if isinstance(node.target, (ast.Subscript, ast.Attribute)):
            ref = self.eval(node.target)
            if hasattr(ref, "_qd_augassign"):  # e.g. a sparse matrix builder's [i, j]
                self.augassign_protocol(node, ref, op)
                return
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
        if hasattr(current, "_qd_augassign"):  # t -= qd.outer(u, v) on a qd.simt tile
            self.augassign_protocol(node, current, op)
            return
        if isinstance(node.target, ast.Name) and node.target.id in self.shared_locals and \
                op in _ATOMIC_AUG and (isinstance(current, GlobalRef) or (
                    isinstance(current, matrix.Matrix) and
                    any(isinstance(e, GlobalRef) for e in current.entries))):
            # A shared local updated by a parallel loop's iterations at once.
            getattr(ops, _ATOMIC_AUG[op])(current, self.eval(node.value))
            return
        name, python_fn = _BINARY[op]
        value = self.eval(node.value)
        result = ops.binary(name, current, value, python_fn)
        overflow.check(self, node, name, current, value, result)
        self.assign(node, node.target, result)
