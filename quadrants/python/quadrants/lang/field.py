"""Fields (global arrays laid out by the SNode tree) and the SNode builder."""
import numbers

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsTypeError)


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

    A floating-point field has two companions of its shape and dtype: .grad
    (the adjoint, for reverse mode) and .dual (the tangent, for forward
    mode). Each is a Field of its own that may be placed like any other
    (`qd.root.dense(qd.i, n).place(x, x.grad)`) whether or not the primal was
    created with needs_grad / needs_dual. A companion that is placed is
    linked to its primal, so autodiff reads and writes it; a primal whose
    adjoint is neither placed nor asked for (needs_grad) is a constant to
    reverse mode. Integer fields have no companions (.grad and .dual are
    None).

    Host access (x[i], to_numpy, ...) synchronizes first, so errors recorded
    by earlier launches surface there.
    """

    def __init__(self, dtype, shape, name, needs_grad=False, needs_dual=False,
                 primal=None, role="primal"):
        self.dtype = dtype
        self._shape = shape
        self.name = name
        self._place = None
        self._generation = runtime.state.generation
        self._role = role          # "primal", "grad" or "dual"
        self.primal = primal       # the primal of a companion, else None
        self._needs_grad = needs_grad
        self._needs_dual = needs_dual
        self.grad = None
        self.dual = None
        if role == "primal" and dtype.is_float:
            self.grad = Field(dtype, shape, name + ".grad", primal=self, role="grad")
            self.dual = Field(dtype, shape, name + ".dual", primal=self, role="dual")
        _registry[:] = [f for f in _registry if f._generation == runtime.state.generation]
        _registry.append(self)

    # ---- placement --------------------------------------------------------
    @property
    def placed(self):
        return self._place is not None

    @property
    def _is_grad(self):
        return self._role == "grad"

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
        if self._role != "primal" and self.primal.placed and \
                tuple(shape) != tuple(self.primal._shape):
            raise QuadrantsTypeError(f"'{self.name}' must have the shape of its primal "
                                     f"'{self.primal.name}' {self.primal._shape}, but it is "
                                     f"placed with shape {tuple(shape)}")
        self._place = prog.add_place(parent, self.dtype.name, self.name)
        self._shape = shape
        if self._role == "primal":
            if self._needs_grad:
                prog.mark_needs_grad(self._place)
            if self.grad is not None and self.grad.placed:
                prog.link_grad(self._place, self.grad._place)
            if self.dual is not None and self.dual.placed:
                prog.link_dual(self._place, self.dual._place)
        elif self.primal.placed:
            if self._role == "grad":
                prog.link_grad(self.primal._place, self._place)
            else:
                prog.link_dual(self.primal._place, self._place)

    def has_grad(self):
        """Whether this field has an adjoint (reverse-mode gradient): .grad is
        placed, or is placed along with the field (needs_grad=True). A
        companion (x.grad) has no adjoint of its own."""
        return self.grad is not None and (self.grad.placed or self._needs_grad)

    def has_dual(self):
        """Whether this field has a dual (forward-mode tangent): .dual is
        placed, or is placed along with the field (needs_dual=True)."""
        return self.dual is not None and (self.dual.placed or self._needs_dual)

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
            if self._role != "primal":
                return self.primal.shape
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


def field(dtype, shape=None, needs_grad=False, name=None, needs_dual=False):
    """qd.field(dtype, shape=None, needs_grad=False, name=None, needs_dual=False).

    With a shape the field is placed at once in its own dense level (and so
    are .grad with needs_grad and .dual with needs_dual); without one it
    waits for qd.root....place(x), or becomes a 0-D field at first use.
    """
    runtime.program()
    if hasattr(dtype, "field"):
        # qd.field(qd.math.vec3, ...) / qd.field(MyStruct, ...): a field of
        # vectors, matrices or structs.
        return dtype.field(shape=shape, needs_grad=needs_grad, needs_dual=needs_dual,
                           name=name)
    dtype = types.normalize(dtype)
    shape = _shape_tuple(shape)
    for flag, value in (("needs_grad", needs_grad), ("needs_dual", needs_dual)):
        if not isinstance(value, bool):
            raise QuadrantsTypeError(f"{flag} must be a bool, got {value!r}")
    if (needs_grad or needs_dual) and not dtype.is_float:
        flag = "needs_grad" if needs_grad else "needs_dual"
        raise QuadrantsGradientError(f"qd.field(): {dtype} is not differentiable, so a "
                                     f"field of {dtype} cannot have {flag}=True; use a "
                                     f"floating-point dtype (qd.f32, qd.f64)")
    if name is not None and not isinstance(name, str):
        raise QuadrantsTypeError(f"field name must be a str, got {name!r}")
    runtime.state.unnamed_fields += not name
    f = Field(dtype, shape, name or f"field{runtime.state.unnamed_fields}",
              needs_grad=needs_grad, needs_dual=needs_dual)
    if shape is not None:
        _place_with_shape(f, shape)
        for companion in _companions_to_place(f):
            _place_with_shape(companion, shape)
    return f


def _companions_to_place(f):
    """The companions of primal `f` that its creation flags ask for and that
    are not placed yet."""
    wanted = []
    if f._needs_grad and not f.grad.placed:
        wanted.append(f.grad)
    if f._needs_dual and not f.dual.placed:
        wanted.append(f.dual)
    return wanted


def _place_with_shape(f, shape):
    prog = runtime.program()
    if len(shape) == 0:
        f._place_at(0, ())
        return
    dense = prog.add_dense(0, list(range(len(shape))), list(shape))
    f._place_at(dense, shape)


def _place_default(f):
    """Places a field that is used before being placed: a primal as 0-D (or
    with the shape it was created with), with the companions it asked for; a
    companion like its primal, when the primal asked for it."""
    if f._role == "primal":
        _place_with_shape(f, f._shape or ())
        for companion in _companions_to_place(f):
            _place_with_shape(companion, f._shape)
        return
    primal = f.primal
    asked = primal._needs_grad if f._role == "grad" else primal._needs_dual
    if not asked:
        how = "lazy_grad" if f._role == "grad" else "lazy_dual"
        raise QuadrantsRuntimeError(
            f"'{f.name}' is not placed: place it (e.g. qd.root.dense(qd.i, n).place("
            f"{primal.name}, {primal.name}.{f._role})), create '{primal.name}' with "
            f"needs_{f._role}=True, or call qd.root.{how}()")
    shape = primal.shape  # places the primal (and with it f) if needed
    if f._place is None:
        _place_with_shape(f, shape)


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
            # Vector, matrix and struct fields place all their components here.
            leaves = f._leaf_fields() if hasattr(f, "_leaf_fields") else [f]
            for leaf in leaves:
                if not isinstance(leaf, Field):
                    raise QuadrantsTypeError(f"place() takes fields, got {f!r}")
                leaf._place_at(self._id, self._shape)
        return self

    def lazy_grad(self):
        """Places the adjoint of every placed floating-point field whose
        adjoint is not placed yet, each like its primal."""
        self._place_companions("grad")

    def lazy_dual(self):
        """Places the dual of every placed floating-point field whose dual is
        not placed yet, each like its primal."""
        self._place_companions("dual")

    def _place_companions(self, role):
        runtime.program()
        for f in list(_live_fields()):
            companion = getattr(f, role) if f._role == "primal" else None
            if companion is not None and f.placed and not companion.placed:
                _place_with_shape(companion, f.shape)


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

