"""Return values of kernels and funcs.

A kernel's return annotation (`-> qd.f32`, a vector/matrix/struct type, or a
tuple of them) fixes the value's scalar leaves. The returned value is cast
leaf by leaf to the annotation at compile time; a kernel stores the leaves
into hidden one-dimensional ndarray parameters, one per leaf dtype, which the
launch allocates and reads back to build the Python value.
"""
import numbers
import typing

import numpy as np

from quadrants.lang import context, ops, types
from quadrants.lang.exception import QuadrantsCompilationError
from quadrants.lang.expr import Composite, Expr
from quadrants.lang.matrix import Matrix, MatrixType
from quadrants.lang.struct import Struct, StructType


def _describe(t):
    if isinstance(t, MatrixType):
        return t._describe()
    return repr(t)


class ReturnType:
    """A parsed return annotation."""

    def __init__(self, annotation, where):
        self.annotation = annotation
        self.shape = self._parse(annotation, where)
        self.leaf_dtypes = self._leaf_dtypes(self.shape)

    @classmethod
    def of(cls, fn, where):
        """The ReturnType of fn's annotation, or None without one (or with
        `-> None`)."""
        import inspect  # pylint: disable=import-outside-toplevel
        try:
            # A string annotation names the type it evaluates to.
            ann = inspect.signature(fn, eval_str=True).return_annotation
        except Exception:  # pylint: disable=broad-except
            ann = inspect.signature(fn).return_annotation
        if ann is inspect.Signature.empty or ann is None or ann is type(None):
            return None
        return cls(ann, where)

    def _parse(self, ann, where):
        if isinstance(ann, (MatrixType, StructType)):
            return ann
        if isinstance(ann, tuple):
            return tuple(self._parse(a, where) for a in ann)
        origin = typing.get_origin(ann)
        if origin is tuple:
            return tuple(self._parse(a, where) for a in typing.get_args(ann))
        try:
            return ann if isinstance(ann, types.DataType) else types.normalize(ann)
        except Exception:  # pylint: disable=broad-except
            raise QuadrantsCompilationError(
                f"{where}: unsupported return type annotation {ann!r}: expected a scalar "
                f"dtype, a vector/matrix/struct type or a tuple of them") from None

    def _leaf_dtypes(self, shape):
        if isinstance(shape, tuple):
            return [d for s in shape for d in self._leaf_dtypes(s)]
        if isinstance(shape, (MatrixType, StructType)):
            return list(shape._flat_dtypes())
        return [shape]

    # ---- compile time ---------------------------------------------------------
    def cast_leaves(self, value, what):
        """The returned value's scalar leaves as Exprs of the annotated
        dtypes; raises QuadrantsCompilationError when the value's shape does
        not match the annotation."""
        out = []
        self._cast(self.shape, context.load(value), what, out)
        return out

    def _cast(self, shape, value, what, out):
        if isinstance(shape, tuple):
            if not isinstance(value, tuple) or len(value) != len(shape):
                found = f"a tuple of {len(value)}" if isinstance(value, tuple) else \
                    _found(value)
                raise QuadrantsCompilationError(f"{what} returns {found}, but its return "
                                                f"type is a tuple of {len(shape)}")
            for s, v in zip(shape, value):
                self._cast(s, context.load(v), what, out)
            return
        if isinstance(shape, MatrixType):
            if not isinstance(value, Matrix) or (value.n, value.m) != (shape.n, shape.m):
                raise QuadrantsCompilationError(f"{what} returns {_found(value)}, but its "
                                                f"return type is a {shape._describe()}")
            out.extend(context.to_expr(ops.cast(e, shape.dtype)) for e in value.entries)
            return
        if isinstance(shape, StructType):
            if not isinstance(value, Struct) or value._stype != shape:
                raise QuadrantsCompilationError(f"{what} returns {_found(value)}, but its "
                                                f"return type is the struct {shape!r}")
            self._cast_struct(shape, value, what, out)
            return
        if isinstance(value, (Composite, tuple)) or not _is_scalar(value):
            raise QuadrantsCompilationError(f"{what} returns {_found(value)}, but its "
                                            f"return type is the scalar {shape}")
        out.append(context.to_expr(ops.cast(value, shape)))

    def _cast_struct(self, shape, value, what, out):
        for k, t in shape.members.items():
            member = context.load(value._members[k])
            if isinstance(t, (MatrixType, StructType)):
                self._cast(t, member, what, out)
            else:
                out.append(context.to_expr(ops.cast(member, t)))

    def cast_value(self, value, what):
        """The returned value converted to the annotation, kept as a
        value (the result of an inlined func)."""
        leaves = self.cast_leaves(value, what)
        built, rest = self._rebuild(self.shape, leaves)
        assert not rest
        return built

    def _rebuild(self, shape, leaves):
        if isinstance(shape, tuple):
            parts = []
            for s in shape:
                part, leaves = self._rebuild(s, leaves)
                parts.append(part)
            return tuple(parts), leaves
        if isinstance(shape, (MatrixType, StructType)):
            count = len(shape._flat_dtypes())
            return shape._from_flat(list(leaves[:count])), leaves[count:]
        return leaves[0], leaves[1:]

    # ---- the hidden buffers ---------------------------------------------------
    def buffer_dtypes(self):
        """The dtypes of the hidden return buffers, in parameter order, with
        each leaf's (buffer, slot)."""
        order, slots = [], []
        for dt in self.leaf_dtypes:
            storage = _storage(dt)
            if storage not in order:
                order.append(storage)
            k = order.index(storage)
            slots.append((k, sum(1 for s in slots if s[0] == k)))
        return order, slots

    def allocate(self):
        order, slots = self.buffer_dtypes()
        counts = [sum(1 for s in slots if s[0] == k) for k in range(len(order))]
        return [np.zeros(n, dtype=types.to_numpy_dtype(dt)) for dt, n in zip(order, counts)]

    def read(self, buffers):
        """The Python value of a launch's return buffers."""
        _, slots = self.buffer_dtypes()
        leaves = [_host_scalar(buffers[k][i], dt)
                  for (k, i), dt in zip(slots, self.leaf_dtypes)]
        value, _ = self._host(self.shape, leaves)
        return value

    def _host(self, shape, leaves):
        if isinstance(shape, tuple):
            parts = []
            for s in shape:
                part, leaves = self._host(s, leaves)
                parts.append(part)
            return tuple(parts), leaves
        if isinstance(shape, MatrixType):
            count = shape.n * shape.m
            flat = leaves[:count]
            rows = flat if shape.ndim == 1 else [flat[i * shape.m:(i + 1) * shape.m]
                                                 for i in range(shape.n)]
            return Matrix(rows, ndim=shape.ndim), leaves[count:]
        if isinstance(shape, StructType):
            members = {}
            for k, t in shape.members.items():
                members[k], leaves = self._host(t, leaves)
            return Struct(shape, members), leaves
        return leaves[0], leaves[1:]


def _storage(dt):
    """The buffer dtype of a leaf: booleans travel as i32."""
    return types.i32 if dt == types.u1 else dt


def _host_scalar(value, dt):
    if dt == types.u1:
        return bool(value)
    return float(value) if dt.is_float else int(value)


def _is_scalar(value):
    return isinstance(value, (Expr, numbers.Number, np.generic))


def _found(value):
    if isinstance(value, Composite):
        return value._describe()
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if value is None:
        return "nothing"
    if _is_scalar(value):
        return "a scalar"
    return f"a {type(value).__name__}"
