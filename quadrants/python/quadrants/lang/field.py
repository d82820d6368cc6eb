"""Fields (global arrays laid out by the SNode tree) and the SNode builder."""
import numbers

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError


class Axes:
    """Axis selection for dense(): qd.i, qd.ij, qd.ijk, qd.ijkl."""

    def __init__(self, *axes):
        self.axes = list(axes)

    def __repr__(self):
        return "".join("ijklmnop"[a] for a in self.axes)


i, j, k, l = Axes(0), Axes(1), Axes(2), Axes(3)
ij, ijk, ijkl = Axes(0, 1), Axes(0, 1, 2), Axes(0, 1, 2, 3)


def _shape_tuple(shape):
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(shape)
    for extent in shape:
        if not isinstance(extent, numbers.Integral) or extent <= 0:
            raise QuadrantsTypeError(f"field shape must be positive integers, got {shape}")
    return tuple(int(e) for e in shape)


# Fields of the current session, for lazy_grad(); stale ones are pruned.
_registry = []


class Field:
    """A global array placed in the SNode tree.

    Host access (x[i], to_numpy, ...) synchronizes first, so errors recorded
    by earlier launches surface there.
    """

    def __init__(self, dtype, shape, needs_grad, name, is_grad=False):
        self.dtype = dtype
        self._shape = shape
        self.name = name
        self._place = None
        self._generation = runtime.state.generation
        self._is_grad = is_grad
        self.grad = None
        if needs_grad:
            self.grad = Field(dtype, shape, False, name + ".grad", is_grad=True)
            self.grad.primal = self
        _registry[:] = [f for f in _registry if f._generation == runtime.state.generation]
        _registry.append(self)

    # ---- placement --------------------------------------------------------
    @property
    def placed(self):
        return self._place is not None

    def _check_alive(self):
        if self._generation != runtime.state.generation:
            raise QuadrantsRuntimeError(
                f"field '{self.name}' belongs to a Quadrants session that was reset; "
                f"create it again after qd.init()")
        return runtime.program()

    def _place_at(self, parent, shape):
        prog = self._check_alive()
        if self._place is not None:
            raise QuadrantsRuntimeError(f"field '{self.name}' is already placed")
        self._place = prog.add_place(parent, self.dtype.name, self.name)
        self._shape = shape
        if self.grad is not None:
            prog.mark_needs_grad(self._place)
        if self._is_grad and self.primal._place is not None:
            prog.link_grad(self.primal._place, self._place)
        elif self.grad is not None and self.grad._place is not None:
            prog.link_grad(self._place, self.grad._place)

    def place_id(self):
        """The place SNode, placing the field first if it never was."""
        self._check_alive()
        if self._place is None:
            _place_default(self)
        return self._place

    # ---- metadata ---------------------------------------------------------
    @property
    def shape(self):
        self._check_alive()
        if self._place is None:
            _place_default(self)
        return self._shape

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<qd.field {self.name}: {self.dtype}{list(self.shape)}>"

    # ---- host access ------------------------------------------------------
    def _index(self, key):
        return types.host_index(key, len(self.shape), f"field '{self.name}'")

    def __getitem__(self, key):
        place = self.place_id()
        prog = runtime.program()
        prog.sync()
        return prog.read_field(place, self._index(key))

    def __setitem__(self, key, value):
        place = self.place_id()
        prog = runtime.program()
        prog.sync()
        prog.write_field(place, self._index(key), value)

    def to_numpy(self, dtype=None):
        place = self.place_id()
        prog = runtime.program()
        prog.sync()
        out = prog.field_to_numpy(place)
        return out if dtype is None else out.astype(dtype)

    def from_numpy(self, array):
        place = self.place_id()
        array = np.asarray(array)
        if tuple(array.shape) != tuple(self.shape):
            raise ValueError(f"from_numpy: field '{self.name}' has shape {self.shape}, "
                             f"the array {tuple(array.shape)}")
        prog = runtime.program()
        prog.sync()
        prog.field_from_numpy(place, array)

    def fill(self, value):
        place = self.place_id()
        prog = runtime.program()
        prog.sync()
        prog.field_fill(place, value)


def field(dtype, shape=None, needs_grad=False, name=None):
    """qd.field(dtype, shape=None, needs_grad=False).

    With a shape the field is placed at once in its own dense level; without
    one it waits for qd.root....place(x), or becomes a 0-D field at first use.
    """
    runtime.program()
    dtype = types.normalize(dtype)
    shape = _shape_tuple(shape)
    if not isinstance(needs_grad, bool):
        raise QuadrantsTypeError(f"needs_grad must be a bool, got {needs_grad!r}")
    runtime.state.unnamed_fields += name is None
    f = Field(dtype, shape, needs_grad, name or f"field{runtime.state.unnamed_fields}")
    if shape is not None:
        _place_with_shape(f, shape)
        if f.grad is not None:
            _place_with_shape(f.grad, shape)
    return f


def _place_with_shape(f, shape):
    prog = runtime.program()
    if len(shape) == 0:
        f._place_at(0, ())
        return
    dense = prog.add_dense(0, list(range(len(shape))), list(shape))
    f._place_at(dense, shape)


def _place_default(f):
    _place_with_shape(f, f._shape or ())


class SNode:
    """A node of the layout tree being built: qd.root.dense(...).place(...)."""

    def __init__(self, snode_id, shape):
        self._id = snode_id
        self._shape = shape  # the full shape of fields placed under it

    def dense(self, axes, dimensions):
        if isinstance(axes, Axes):
            axes = axes.axes
        elif isinstance(axes, int):
            axes = [axes]
        if isinstance(dimensions, numbers.Integral):
            dimensions = [dimensions] * len(axes)
        dimensions = list(dimensions)
        if len(dimensions) != len(axes):
            raise QuadrantsTypeError(f"dense(): {len(axes)} axes but {len(dimensions)} sizes")
        prog = runtime.program()
        node = prog.add_dense(self._id, list(axes), [int(d) for d in dimensions])
        shape = list(self._shape)
        for axis, size in zip(axes, dimensions):
            while len(shape) <= axis:
                shape.append(1)
            shape[axis] = int(size)
        return SNode(node, tuple(shape))

    def place(self, *fields):
        for f in fields:
            if not isinstance(f, Field):
                raise QuadrantsTypeError(f"place() takes fields, got {f!r}")
            f._place_at(self._id, self._shape)
        return self

    def lazy_grad(self):
        """Places the unplaced adjoints of every placed field needing grad."""
        for f in list(_live_fields()):
            if f.grad is not None and f.placed and not f.grad.placed:
                _place_with_shape(f.grad, f.shape)


def _live_fields():
    for f in _registry:
        if f._generation == runtime.state.generation:
            yield f


class _Root(SNode):
    def __init__(self):
        super().__init__(0, ())

    def dense(self, axes, dimensions):
        runtime.program()
        return super().dense(axes, dimensions)


root = _Root()

