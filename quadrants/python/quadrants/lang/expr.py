"""Values the AST transformer works with while building a kernel.

Compile-time values are plain Python objects. Run-time values are wrapped:
Expr (an IR value), Var (a local variable), GlobalRef (a field or ndarray
element, loadable and storable), NdarrayArg (an ndarray parameter).
"""
import numbers

from quadrants.lang import kernel_stack, types
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError


class Expr:
    __slots__ = ("stmt", "dtype")

    def __init__(self, stmt, dtype=None):
        self.stmt = stmt
        self.dtype = dtype if dtype is not None else types.by_name(stmt.dtype)

    def __repr__(self):
        return f"<Expr {self.dtype}>"

    def __bool__(self):
        raise QuadrantsSyntaxError(
            "a run-time value cannot be used where Python needs a compile-time bool "
            "(e.g. in `and`/`or` with Python objects or in qd.static)")


class Var:
    """A local variable: an alloca of a fixed dtype."""
    __slots__ = ("alloca", "dtype", "name")

    def __init__(self, alloca, dtype, name):
        self.alloca = alloca
        self.dtype = dtype
        self.name = name


class GlobalRef:
    """An element of a field or ndarray; `place` is the field place's id
    (None for ndarrays and other memory)."""
    __slots__ = ("ptr", "dtype", "place")

    def __init__(self, ptr, dtype, place=None):
        self.ptr = ptr
        self.dtype = dtype
        self.place = place


class NdarrayArg:
    """An ndarray parameter inside a kernel."""

    def __init__(self, arg, dtype, ndim, name, element=None, layout=None, value=None,
                 path=None, clamp=False):
        self.arg = arg
        self.dtype = dtype          # the scalar dtype of the components
        self.ndim = ndim            # the array's own dimensions
        self.name = name
        self.element = element      # a vector/matrix element type, or None
        # The memory order of the axes (see Ndarray), or None for row-major:
        # indices and shapes in kernel code stay in the users' order.
        self.layout = layout
        self.value = value          # the Ndarray compiled for, when there is one
        self.path = path            # where launches find it (hidden_params), or None
        # boundary="clamp": each index is clamped into [0, extent - 1].
        self.clamp = clamp

    def physical(self, indices):
        """Indices in the users' axis order, in the memory's order."""
        return indices if self.layout is None else [indices[a] for a in self.layout]

    def physical_axis(self, axis):
        if self.layout is None:
            return axis
        return self.layout.index(axis)

    @property
    def shape(self):
        return ShapeProxy(self)


class ShapeProxy:
    """arr.shape inside a kernel: arr.shape[k] is a run-time i32."""

    def __init__(self, array):
        self.array = array

    def __len__(self):
        return self.array.ndim

    def __getitem__(self, axis):
        if not isinstance(axis, numbers.Integral):
            raise QuadrantsTypeError("arr.shape[k] needs a compile-time integer k")
        if not -self.array.ndim <= axis < self.array.ndim:
            raise QuadrantsTypeError(f"axis {axis} out of range for ndarray "
                                     f"'{self.array.name}' with {self.array.ndim} dimensions")
        axis = self.array.physical_axis(axis % self.array.ndim)
        return Expr(kernel_stack.builder().ndarray_shape(self.array.arg, axis), types.i32)

    def __iter__(self):
        return (self[k] for k in range(self.array.ndim))


class Composite:
    """A value made of several scalars (a vector, matrix or struct), each an
    Expr, Var, GlobalRef or Python number: the front end scalarizes them,
    so the IR only ever sees their components."""
    __slots__ = ()

    def _load(self):
        """The same value with every component loaded (an Expr or number)."""
        raise NotImplementedError

    def _leaves(self):
        """The scalar components, in a fixed order."""
        raise NotImplementedError


def is_runtime(x):
    return isinstance(x, (Expr, Var, GlobalRef))
