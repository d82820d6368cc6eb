"""Expressions: constants, names, containers, f-strings, attributes,
subscripts (field and ndarray elements), operators and conditional
expressions. Compile-time operands fold in Python; run-time ones lower
through ops and the builder."""
import ast

from quadrants.lang import (array_slice, buffer_view, context, exception, matrix, ops,
                            printing, runtime, sparse, types)
from quadrants.lang import tensor as tensor_module
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.expr import (Composite, Expr, GlobalRef, NdarrayArg, ShapeProxy,
                                 is_runtime)
from quadrants.lang.field import Field, element_indices
from quadrants.lang.ndarray import Ndarray
from quadrants.lang.transformer import overflow, purity
from quadrants.lang.struct import Struct, StructField, StructType, UnpackedVector


def _has_negative_index(index):
    """Whether a subscript's index holds a negative Python int (slice bounds
    included)."""
    if isinstance(index, slice):
        return _has_negative_index(index.start) or _has_negative_index(index.stop)
    if isinstance(index, tuple):
        return any(_has_negative_index(i) for i in index)
    return isinstance(index, int) and not isinstance(index, bool) and index < 0


def _has_slice(index):
    return isinstance(index, slice) or (isinstance(index, tuple) and
                                        any(isinstance(i, slice) for i in index))


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


# Operands built only of these read locals and constants: evaluating one
# when and/or does not need it has no effect and cannot fault, so it takes
# no branch (which also keeps `while v < 3.0 and k < n:` a plain condition
# for reverse mode).
_PLAIN_NODES = (ast.Name, ast.Constant, ast.Compare, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                ast.IfExp, ast.Load, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def _is_plain_operand(node):
    # Division and modulo can trap on an integer zero the left operand guards.
    return all(isinstance(n, _PLAIN_NODES) and
               not isinstance(n, (ast.Div, ast.FloorDiv, ast.Mod))
               for n in ast.walk(node))


class ExpressionsMixin:
    """FunctionCompiler's expression visitors."""

    def visit_Constant(self, node):
        return node.value

    def visit_Name(self, node):
        return self.as_kernel_data(self.lookup(node, node.id), node.id)

    def visit_Tuple(self, node):
        items = []
        for e in node.elts:
            if not isinstance(e, ast.Starred):
                items.append(self.eval(e))
                continue
            # (*I, j): a vector index (qd.grouped) spreads into its components.
            value = context.load(self.eval(e.value))
            if isinstance(value, matrix.Matrix):
                items.extend(value.entries)
            else:
                items.extend(self.unpacked(e.value, "*"))
        return tuple(items)

    def visit_List(self, node):
        return [self.eval(e) for e in node.elts]

    def visit_ListComp(self, node):
        """[e for x in it if c]: unrolled at compile time, so each iterable
        must be known then (range() of Python ints, qd.ndrange, qd.static(...),
        a list or tuple) and each condition a Python bool; the elements may
        be run-time values."""
        return self._unroll_comprehension(node, node.elt)

    def visit_GeneratorExp(self, node):
        return self._unroll_comprehension(node, node.elt)

    def visit_DictComp(self, node):
        """{k: v for x in it if c}: unrolled like a list comprehension; the
        keys must be compile-time values."""
        pairs = self._unroll_comprehension(node, (node.key, node.value))
        return self._make_dict(node, pairs)

    def _make_dict(self, node, pairs):
        out = {}
        for key, value in pairs:
            if is_runtime(key):
                raise self.error(node, "a dict in a kernel is built at compile time: its "
                                 "keys must be compile-time values", QuadrantsSyntaxError)
            out[key] = value
        return out

    def _unroll_comprehension(self, node, elt):
        """The elements `elt` (an expression node, or a tuple of them)
        takes over the generators of comprehension `node`."""
        out = []
        generators = node.generators
        targets = {leaf.id for g in generators for leaf in ast.walk(g.target)
                   if isinstance(leaf, ast.Name)}
        saved = {name: self.scope[name] for name in targets if name in self.scope}

        def iterate(level):
            if level == len(generators):
                # Values, not references.
                out.append(tuple(context.load(self.eval(e)) for e in elt)
                           if isinstance(elt, tuple) else context.load(self.eval(elt)))
                return
            gen = generators[level]
            iterable = self.eval(gen.iter)
            if isinstance(iterable, matrix.Matrix):
                iterable = matrix.unpacked(iterable)  # components, or rows
            try:
                items = list(iterable) if not is_runtime(iterable) else None
            except TypeError:
                items = None
            if items is None:
                raise self.error(node, "a comprehension in a kernel is unrolled at compile "
                                 "time: it needs a compile-time iterable (range() of "
                                 "Python ints, qd.static(...), a list or tuple)",
                                 QuadrantsSyntaxError)
            for item in items:
                if isinstance(gen.target, ast.Name):
                    self.scope[gen.target.id] = item
                else:
                    self.assign(node, gen.target, item)
                keep = True
                for condition in gen.ifs:
                    value = self.eval(condition)
                    if is_runtime(value):
                        raise self.error(node, "a comprehension's condition must be known "
                                         "at compile time", QuadrantsSyntaxError)
                    keep = keep and bool(value)
                if keep:
                    iterate(level + 1)

        try:
            iterate(0)
        finally:
            for name in targets:
                if name in saved:
                    self.scope[name] = saved[name]
                else:
                    self.scope.pop(name, None)
        return out

    def visit_Dict(self, node):
        pairs = []
        for k, v in zip(node.keys, node.values):
            if k is None:  # {**other}
                other = self.eval(v)
                if not isinstance(other, dict):
                    raise self.error(node, "** in a dict needs a compile-time dict",
                                     QuadrantsSyntaxError)
                pairs.extend(other.items())
            else:
                pairs.append((self.eval(k), self.eval(v)))
        return self._make_dict(node, pairs)

    def visit_NamedExpr(self, node):
        """(name := value): assigns, then is the value."""
        value = self.eval(node.value)
        self.assign(node, node.target, value)
        return self.eval(node.target)

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
        if isinstance(base, NdarrayArg) and node.attr == "grad":
            return self.ndarray_grad(node, base)
        try:
            # A struct's members come before its methods (a member may be
            # called `keys` or `items`).
            value = base._members[node.attr] if isinstance(base, Struct) and \
                node.attr in base._members else getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"{type(base).__name__} object has no attribute "
                             f"'{node.attr}'", QuadrantsSyntaxError) from None
        purity.check_global_attribute(self, node, base, value)
        self.ctx.origins.note_step(base, ("attr", node.attr), value)
        lifted = self.ctx.origins.lifted_path(base, ("attr", node.attr), value)
        if lifted is not None and self.ctx.hidden is not None:
            param = self.ctx.hidden.scalar_arg(value, lifted, ast.unparse(node))
            return Expr(self.ctx.builder.arg_load(param.ir_index), param.dtype)
        return self.as_kernel_data(value, ast.unparse(node))

    def ndarray_grad(self, node, array):
        """arr.grad in kernel code: the adjoint ndarray of an ndarray
        argument, passed to the kernel as a hidden parameter that every
        launch takes from the argument's own .grad."""
        label = ast.unparse(node)
        value = array.value
        if value is None or self.ctx.hidden is None:
            raise self.error(node, f"'{label}': only a qd.ndarray argument has a .grad in "
                             f"kernel code (this one is "
                             f"{'not a qd.ndarray' if value is None else 'out of reach'})",
                             QuadrantsSyntaxError)
        if value.grad is None:
            raise self.error(node, f"'{label}': ndarray '{array.name}' has no gradient; "
                             f"create it with needs_grad=True", QuadrantsGradientError)
        path = None if array.path is None else array.path + (("attr", "grad"),)
        self.ctx.hidden.reads_grad = self.ctx.hidden.reads_grad or label
        return self.ctx.hidden.ndarray_arg(value.grad, path, label)

    def visit_Subscript(self, node):
        base = self.eval(node.value)
        index = self.eval(node.slice)
        if isinstance(base, UnpackedVector):
            return base[context.load(index)]
        if isinstance(base, buffer_view.KernelView):
            if isinstance(index, slice):
                return base.slice(index)
            return self.element(node, base.array, base.index(index))
        if _has_slice(index) and (isinstance(base, (Field, NdarrayArg)) or
                                  getattr(base, "_qd_shared_array", False)):
            try:
                return array_slice.from_subscript(base, index)
            except QuadrantsSyntaxError as e:
                raise self.error(node, str(e), QuadrantsSyntaxError) from None
        if isinstance(base, (NdarrayArg, matrix.Matrix)) and not self.static_depth and \
                _has_negative_index(index):
            # As upstream: fields wrap negative indices, vectors, matrices and
            # ndarrays in kernels do not.
            raise self.error(node, "Negative indices are not supported in Quadrants kernels.",
                             QuadrantsSyntaxError)
        if isinstance(base, (Field, NdarrayArg, MatrixField, StructField)):
            return self.element(node, base, index)
        if getattr(base, "_qd_shared_array", False):  # qd.simt.block.SharedArray
            return self.shared_element(node, base, index)
        if hasattr(base, "_qd_subscript"):  # e.g. a sparse matrix builder's [i, j]
            return base._qd_subscript(self, node, context.load(index))
        if getattr(base, "_qd_tile", False):  # qd.simt tiles: t[:]
            try:
                return base[index]
            except QuadrantsSyntaxError as e:
                raise self.error(node, str(e), QuadrantsSyntaxError) from None
        if isinstance(base, matrix.Matrix):
            return base[index]
        if is_runtime(base):
            raise self.error(node, "cannot subscript a scalar run-time value",
                             QuadrantsTypeError)
        index = context.load(index)
        if isinstance(index, Expr) and not isinstance(base, ShapeProxy):
            raise self.error(node, "cannot index a Python object with a run-time value",
                             QuadrantsTypeError)
        value = base[index]
        if not isinstance(base, ShapeProxy):
            self.ctx.origins.note_step(base, ("item", index), value)
        return self.as_kernel_data(value, ast.unparse(node))

    def as_kernel_data(self, value, label):
        """An ndarray object met in kernel code (a template argument or
        one of its members) becomes a hidden ndarray parameter; a qd.Tensor
        stands for its field or ndarray."""
        if isinstance(value, tensor_module.Tensor):
            impl = value._unwrap()
            # Launches find the impl again through the wrapper.
            self.ctx.origins.note_step(value, ("attr", "_impl"), impl)
            value = impl
        if isinstance(value, Ndarray) and self.ctx.hidden is not None:
            self.ctx.outside_state.append(label)
            return self.ctx.hidden.ndarray_arg(value, self.ctx.origins.path(value), label)
        return value

    def shared_element(self, node, array, index):
        """An element of a qd.simt.block.SharedArray."""
        index = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, int) and i < 0 for i in index):
            raise self.error(node, "Negative indices are not supported in Quadrants kernels.",
                             QuadrantsSyntaxError)
        try:
            return array._element_ref([context.load(i) for i in index])
        except exception.QuadrantsIndexError as e:
            raise self.error(node, str(e), exception.QuadrantsIndexError) from None

    def element(self, node, base, index):
        if index is None:
            index = ()
        elif not isinstance(index, tuple):
            index = (index,)
        flat = []

        def add(v):
            # A vector index (qd.grouped) or a tuple of indices stands for
            # its components.
            v = context.load(v)
            if isinstance(v, (tuple, list)):
                for part in v:
                    add(part)
            else:
                flat.extend(v.entries if isinstance(v, matrix.Matrix) else [v])

        for v in index:
            add(v)
        indices = []
        for axis, v in enumerate(flat):
            e = context.to_expr(v)
            if e.dtype.is_float:
                raise self.error(node, f"indices must be integers: an index is {e.dtype}",
                                 QuadrantsTypeError)
            if isinstance(base, NdarrayArg) and base.clamp and axis < base.ndim:
                e = context.to_expr(ops.max(0, ops.min(e, ops.sub(base.shape[axis], 1))))
            indices.append(e.stmt)
        b = self.ctx.builder
        # Errors about this access name the variable as the user wrote it.
        label = ast.unparse(node.value) if isinstance(node, ast.Subscript) else base.name
        if isinstance(base, (MatrixField, StructField, Field)):
            self.ctx.outside_state.append(label)
        if isinstance(base, (MatrixField, StructField, Field)) and \
                len(indices) < len(base.shape):
            listed = sparse.list_ref(base, indices)
            if listed is not None:
                return listed
        if isinstance(base, (MatrixField, StructField)):
            if len(indices) != len(base.shape):
                raise self.error(node, f"field '{base.name}' has {len(base.shape)} "
                                 f"dimensions, indexed with {len(indices)}",
                                 QuadrantsTypeError)
            return base._element(lambda f: b.field_ptr(f.place_id(),
                                                       element_indices(f, indices), label))
        if isinstance(base, Field):
            if len(indices) != len(base.shape):
                raise self.error(node, f"field '{base.name}' has {len(base.shape)} "
                                 f"dimensions, indexed with {len(indices)}",
                                 QuadrantsTypeError)
            return GlobalRef(b.field_ptr(base.place_id(), element_indices(base, indices),
                                         label), base.dtype, base.place_id())
        if len(indices) != base.ndim:
            raise self.error(node, f"ndarray '{base.name}' has {base.ndim} dimensions, "
                             f"indexed with {len(indices)}", QuadrantsTypeError)
        indices = base.physical(indices)
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
        """a:b:c as a Python slice of evaluated bounds: vectors and matrices
        take compile-time ones, BufferViews run-time ones too."""
        return slice(*[None if part is None else self.eval(part)
                       for part in (node.lower, node.upper, node.step)])

    def visit_BinOp(self, node):
        op = type(node.op)
        if op not in _BINARY:
            raise self.error(node, f"operator {type(node.op).__name__} is not supported",
                             QuadrantsSyntaxError)
        name, python_fn = _BINARY[op]
        left, right = self.eval(node.left), self.eval(node.right)
        if name == "pow":
            try:
                result = ops.power(left, right)
            except QuadrantsRuntimeError as e:
                raise self.error(node, str(e), QuadrantsRuntimeError) from None
        else:
            result = ops.binary(name, left, right, python_fn)
        overflow.check(self, node, name, left, right, result)
        return result

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
            if isinstance(result, Composite):
                # Vectors and matrices: elementwise, each entry 0 or 1.
                other = context.load(self.eval(value_node))
                result = ops.binary("logical_and" if is_and else "logical_or", result,
                                    other, None)
                continue
            if not isinstance(result, Expr):
                # Python short-circuit on compile-time values.
                if (not result) if is_and else result:
                    return result
                result = context.load(self.eval(value_node))
                continue
            if runtime.state.options.get("short_circuit_operators", True) and \
                    not _is_plain_operand(value_node):
                result = self.short_circuit(node, is_and, result, value_node)
                continue
            other = context.load(self.eval(value_node))
            if isinstance(other, Composite):
                result = ops.binary("logical_and" if is_and else "logical_or", result,
                                    other, None)
            elif self.keeps_value(result):
                # Like Python: `a and b` is b where a holds, else a.
                cond = self.truth(node, result)
                result = ops.select(cond, other, result) if is_and else \
                    ops.select(cond, result, other)
            else:
                result = ops.binary("logical_and" if is_and else "logical_or", result,
                                    other, None)
        return result

    @staticmethod
    def keeps_value(left):
        """Whether `left and/or right` yields an operand's value (an
        integer left operand) rather than a boolean."""
        return isinstance(left, Expr) and left.dtype.is_integral and left.dtype != types.u1

    def short_circuit(self, node, is_and, left, right_node):
        """left and/or right, evaluating right only when left does not
        decide the result (a branch on left around right's code)."""
        b = self.ctx.builder
        left_truth = self.truth(node, left)
        dtype = left.dtype if self.keeps_value(left) else types.u1
        var = self.new_scalar_var("<and/or>", dtype)
        b.local_store(var.alloca, left_truth.stmt if dtype == types.u1 else left.stmt)
        decided = left_truth
        if not is_and:
            decided = Expr(b.unary("logical_not", decided.stmt), types.u1)
        branch = b.if_(decided.stmt)
        b.push_block(branch, 0)
        try:
            right = context.load(self.eval(right_node))
            value = self.truth(node, right) if dtype == types.u1 else \
                context.to_expr(ops.cast(self.truth_checked(node, right), dtype))
            b.local_store(var.alloca, value.stmt)
        finally:
            b.pop_block()
        return Expr(b.local_load(var.alloca), dtype)

    def truth_checked(self, node, value):
        """`value` itself, once known to be a valid and/or operand."""
        self.truth(node, value)
        return value

    def truth(self, node, value):
        """A run-time operand of and/or as a u1 (integers and booleans)."""
        e = context.to_expr(value)
        if e.dtype.is_float:
            raise self.error(node, f"and/or needs integer or boolean operands, found "
                             f"{e.dtype}", QuadrantsTypeError)
        if e.dtype == types.u1:
            return e
        return Expr(self.ctx.builder.binary("cmp_ne", e.stmt,
                                            context.constant(0, e.dtype).stmt), types.u1)

    def visit_Compare(self, node):
        left = self.eval(node.left)
        result = None
        left_node = node.left
        for op, right_node in zip(node.ops, node.comparators):
            # A qd.func may test an optional argument against None (the
            # package's own funcs do); a kernel body only inside qd.static.
            if isinstance(op, (ast.Is, ast.IsNot)) and not self.static_depth and (
                    self.template_params is not None or not any(
                        isinstance(n, ast.Constant) and n.value is None
                        for n in (left_node, right_node))):
                name = "is" if isinstance(op, ast.Is) else "is not"
                raise self.error(node, f'Operator "{name}" in Quadrants scope is not '
                                 f"supported: compare with ==, or write qd.static(a {name} "
                                 f"b) for compile-time objects", QuadrantsSyntaxError)
            if isinstance(op, (ast.In, ast.NotIn)) and not self.static_depth:
                raise self.error(node, f'"{type(op).__name__}" is only supported inside '
                                 f"`qd.static`.", QuadrantsSyntaxError)
            operand_nodes = (left_node, right_node)
            left_node = right_node
            right = self.eval(right_node)
            if type(op) not in _COMPARE:
                l, r = context.load(left), context.load(right)
                if isinstance(op, (ast.Is, ast.IsNot)):
                    self._check_static_identity(node, op, operand_nodes, l, r)
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

    def _check_static_identity(self, node, op, operand_nodes, left, right):
        """qd.static(a is None) in a kernel tests a qd.template() or qd.Tensor
        parameter, named directly (or a member of one), against None: what
        its cached specializations are keyed by. In a qd.func any two
        compile-time objects may be compared; run-time values never."""
        none = [isinstance(n, ast.Constant) and n.value is None for n in operand_nodes]
        other = operand_nodes[0] if none[1] else operand_nodes[1] if none[0] else None
        # A member of one (`self.solver is None` in a data-oriented class)
        # counts too: it is fixed when the kernel is specialized.
        root = other
        while isinstance(root, ast.Attribute):
            root = root.value
        if self.template_params is None:
            valid = not (is_runtime(left) or is_runtime(right))
        else:
            valid = (isinstance(root, ast.Name) and not root.id.startswith("__qd_")
                     and root.id in self.template_params
                     and self.scope.get(root.id) is self.template_params[root.id]
                     and not (is_runtime(left) or is_runtime(right)))
        if not valid:
            name = "is" if isinstance(op, ast.Is) else "is not"
            raise self.error(node, f'Operator "{name}" inside `qd.static` requires a direct '
                             f"`qd.template()` or `qd.Tensor` kernel argument and `None`.",
                             QuadrantsSyntaxError)

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
