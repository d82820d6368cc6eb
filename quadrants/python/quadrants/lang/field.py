"""Fields (global arrays laid out by the SNode tree) and the SNode builder."""
import enum
import numbers

import numpy as np

from quadrants._core import core
from quadrants.lang import (context, misc, ops, python_backend, runtime, sparse, torch_interop,
                            types)
from quadrants.lang.exception import (ArgumentValueError, QuadrantsAssertionError,
                                      QuadrantsGradientError,
                                      QuadrantsRuntimeError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)
from quadrants.lang.expr import Expr
from quadrants.lang.hooks import Hooks
from quadrants.lang.matrix import Matrix, Vector
from quadrants.lang.misc import extension, is_extension_supported

# The host reads and writes fields under sparse SNodes, and deactivates
# their cells, with small kernels; quadrants.lang.sparse_host builds them on
# the kernel compiler (which compiles kernels over fields) and registers
# them here.
sparse_host = Hooks("quadrants.lang.sparse_host", "read", "write", "to_numpy", "from_numpy",
                    "fill", "deactivate_all")


class Layout:  # pylint: disable=too-few-public-methods
    """qd.Layout.AOS / SOA for the vector/matrix field constructors: AOS
    (the default) stores the components of an element together, SOA each
    component in a dense level of its own. Results do not depend on it."""
    AOS = "aos"
    SOA = "soa"


class SNodeGradType(enum.Enum):
    """The role of a field: a primal, its adjoint (.grad), its dual (.dual)
    or the adjoint check bit."""
    PRIMAL = 0
    ADJOINT = 1
    DUAL = 2
    ADJOINT_CHECKBIT = 3


class Axes:
    """Axis selection for dense(): qd.i, qd.ij, qd.ijk, qd.ijkl."""

    def __init__(self, *axes):
        self.axes = list(axes)

    def __repr__(self):
        return "".join("ijklmnopqrst"[a] for a in self.axes)


i, j, k, l = Axes(0), Axes(1), Axes(2), Axes(3)
ij, ijk, ijkl = Axes(0, 1), Axes(0, 1, 2), Axes(0, 1, 2, 3)


def _shape_tuple(shape):
    if shape is None:
        return None
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(shape)
    for extent in shape:
        if not isinstance(extent, numbers.Integral):
            raise QuadrantsTypeError(f"field shape must be positive integers, got {shape}")
        if extent <= 0:
            # The first sentence is upstream's wording.
            raise QuadrantsRuntimeError(f"Every dimension of a Quadrants field should be "
                                        f"positive; the shape {shape} has {extent}")
    return tuple(int(e) for e in shape)


# Fields of the current session, for lazy_grad(); stale ones are pruned.
_registry = []
# Bumped whenever a field is created or placed, so that a launch checks the
# fields' placement again only after a change (check_placements).
_placement_changes = [0]
_placements_checked = [-1]


def no_host_iteration(field):
    """`for i in x` over a field runs in kernels only (a struct-for)."""
    # The first sentence is upstream's wording.
    raise NotImplementedError(f"Struct for is only available in Quadrants scope. Iterate over "
                              f"field '{field.name}' in a kernel, or over its indices on the "
                              f"host (numpy.ndindex(*x.shape))")


class Field(sparse.ListMethods):
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

    A field placed with an offset is indexed from that offset on every axis,
    in kernels and on the host (x[offset] is its first element); to_numpy()
    and from_numpy() use arrays of its shape. A field created with an order
    keeps its shape and indices; only its memory layout follows the order.
    """

    __iter__ = no_host_iteration

    def __init__(self, dtype, shape, name, needs_grad=False, needs_dual=False,
                 primal=None, role="primal"):
        self.dtype = dtype
        self._shape = shape
        self.name = name
        self._place = None
        self._generation = runtime.state.generation
        self._retired = None
        self._role = role          # "primal", "grad" or "dual"
        self.primal = primal       # the primal of a companion, else None
        self._needs_grad = needs_grad
        self._needs_dual = needs_dual
        self.grad = None
        self.dual = None
        self._offset = None        # per-axis index origin, None when all zero
        # The layout axes the field's dimensions are (0 = i, 1 = j, ...), in
        # order, when some axis below its highest is indexed by no level
        # (qd.root.dense(qd.k, n) makes a 1-D field of axis k); else None.
        self._axes = None
        self._full_ndim = None
        self._layout = None        # axes from the outermost memory level in, or None
        if role == "primal" and dtype.is_float:
            self.grad = Field(dtype, shape, name + ".grad", primal=self, role="grad")
            self.dual = Field(dtype, shape, name + ".dual", primal=self, role="dual")
        elif role == "grad":
            # The adjoint's tangent (forward mode over the gradient: qd.ad.hvp).
            self.dual = Field(dtype, shape, name + ".dual", primal=self, role="dual")
        _registry[:] = [f for f in _registry if f._generation == runtime.state.generation]
        _registry.append(self)
        _placement_changes[0] += 1

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
        if self._retired is not None:
            raise QuadrantsRuntimeError(f"field '{self.name}' cannot be used: {self._retired}")
        return runtime.program()

    def _retire(self, reason):
        """Makes every later use of the field raise, saying `reason`."""
        self._retired = reason

    def _place_at(self, parent, shape, axes=None):
        """Places the field under SNode `parent`, whose levels index the
        layout axes `axes` (all of them when None) with extents `shape` (one
        per axis up to the highest)."""
        prog = self._check_alive()
        if self._place is not None:
            raise QuadrantsRuntimeError(f"field '{self.name}' is already placed")
        full = tuple(shape)
        axes = tuple(range(len(full))) if axes is None else tuple(sorted(axes))
        shape = tuple(full[a] for a in axes)
        if self._role != "primal" and self.primal.placed and \
                tuple(shape) != tuple(self.primal._shape):
            raise QuadrantsTypeError(f"'{self.name}' must have the shape of its primal "
                                     f"'{self.primal.name}' {self.primal._shape}, but it is "
                                     f"placed with shape {tuple(shape)}")
        self._place = prog.add_place(parent, self.dtype.name, self.name)
        _placement_changes[0] += 1
        self._shape = shape
        self._full_ndim = len(full)
        self._axes = None if axes == tuple(range(len(full))) else axes
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

    def _qd_snode_id_(self):
        """The SNode the sparse operations (quadrants.lang.sparse) act on for
        this field: its place."""
        return self.place_id()

    def place_id(self):
        """The place SNode, placing the field first if it never was."""
        self._check_alive()
        if self._place is None:
            _place_default(self)
        return self._place

    # ---- metadata ---------------------------------------------------------
    def parent(self, n=1):
        """The n-th ancestor of the field's place SNode: the level holding it
        for n=1."""
        return self.snode.parent(n)

    @property
    def snode(self):
        """The place SNode of this field (its parent() is the level holding
        it), placing the field first if it never was."""
        return SNode(self.place_id(), self.shape)

    @property
    def _snode(self):
        """The place SNode (upstream's private name, which its tests read)."""
        return self.snode

    @property
    def _qd_layout(self):
        """The layout (axes from the outermost memory level in) a field
        created with order= has, as a tuple; None for row-major."""
        f = self if self._role == "primal" or self._layout is not None else self.primal
        return None if f._layout is None else tuple(f._layout)

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

    def _origin(self):
        """The offset indices are taken from (a companion's is its primal's),
        or None."""
        return self._offset if self._role == "primal" else self.primal._offset

    @property
    def offset(self):
        """The index of the first element on each axis."""
        return self._origin() or (0,) * len(self.shape)

    @property
    def layout(self):
        """The axes in memory order, outermost first, for a field created
        with order=; None for the default (row-major) order."""
        return self._layout

    def __repr__(self):
        return f"<qd.field {self.name}: {self.dtype}{list(self.shape)}>"

    def _physical(self, indices, zero):
        """`indices` (one per dimension) as one per layout axis up to the
        highest: `zero` where no level indexes the axis."""
        axes = self._layout_axes()
        if axes is None:
            return list(indices)
        out = [zero] * self._layout_ndim()
        for a, i in zip(axes, indices):
            out[a] = i
        return out

    def _layout_axes(self):
        return self._axes if self._role == "primal" or self._axes is not None \
            else self.primal._axes

    def _layout_ndim(self):
        f = self if self._role == "primal" or self._axes is not None else self.primal
        return f._full_ndim

    def _full_shape(self):
        return tuple(self._physical(self.shape, 1))

    # ---- host access ------------------------------------------------------
    def _index(self, key):
        index = types.host_index(key, len(self.shape), f"field '{self.name}'")
        origin = self._origin()
        if origin is None:
            return index
        shape = self.shape
        for axis, (i, o, n) in enumerate(zip(index, origin, shape)):
            if not o <= i < o + n:
                raise QuadrantsAssertionError(
                    f"index {index} is out of bounds for field '{self.name}': axis {axis} "
                    f"takes indices in [{o}, {o + n}) (shape {shape}, offset {origin})")
        return [i - o for i, o in zip(index, origin)]

    def _sparse(self):
        """Whether the field lies under a pointer, bitmasked or dynamic level
        (the host then reaches it through kernels)."""
        return sparse.is_sparse_field(self.place_id())

    def __getitem__(self, key):
        place = self.place_id()
        if self._sparse():
            return sparse_host.read(self, self._index(key))
        prog = runtime.program()
        prog.sync()
        return prog.read_field(place, self._physical(self._index(key), 0))

    def __setitem__(self, key, value):
        place = self.place_id()
        if self._sparse():
            sparse_host.write(self, self._index(key), value)
            return
        prog = runtime.program()
        prog.sync()
        prog.write_field(place, self._physical(self._index(key), 0), value)

    def to_numpy(self, dtype=None, *, copy=True):
        """The field as a numpy array of its shape (element [0, ...] is the
        one at the field's offset): a new one (copy=True), a view sharing
        its memory (copy=False: on cpu, else ValueError), or that view
        where there is one and a copy otherwise (copy=None)."""
        return host_copy_or_view(copy, f"field '{self.name}'", lambda: self._view(dtype),
                                 lambda: self._copy(dtype))

    def _view(self, numpy_dtype=None, device=False, scalar=False):
        if self._sparse():
            return None, "it lies under a sparse SNode (its cells live in pools)"
        view, why = view_places([self.place_id()], self.dtype, (), numpy_dtype, device, scalar)
        if view is not None and self._layout_axes() is not None:
            view = view.reshape(self.shape)
        return view, why

    def _copy(self, dtype):
        place = self.place_id()
        if self._sparse():
            out = sparse_host.to_numpy(self)
            return out if dtype is None else out.astype(dtype)
        prog = runtime.program()
        prog.sync()
        out = prog.field_to_numpy([place]).reshape(self.shape)
        return out if dtype is None else out.astype(dtype)

    def from_numpy(self, array):
        place = self.place_id()
        array = np.asarray(array)
        if tuple(array.shape) != tuple(self.shape):
            raise ValueError(f"from_numpy: field '{self.name}' has shape {self.shape}, "
                             f"the array {tuple(array.shape)}")
        if self._sparse():
            sparse_host.from_numpy(self, array)
            return
        prog = runtime.program()
        prog.sync()
        prog.field_from_numpy([place], np.ascontiguousarray(array).reshape(self._full_shape()))

    def to_torch(self, device=None, *, copy=True):
        """What to_numpy() gives, as a torch tensor: a copy on `device`
        (default: the CPU) with copy=True; with copy=False a tensor sharing
        the field's memory (on cpu) or ValueError; with copy=None that
        tensor where there is one, else a copy."""
        return torch_interop.to_torch(self, device, copy, f"field '{self.name}'",
                                      torch_interop.numpy_view_tensor(
                                          lambda: self._view(device=True)))

    def to_dlpack(self, versioned=False):
        """A DLPack capsule viewing the field's memory (host memory on cpu,
        device memory on cuda), indexed as the field is (a layout shows as
        strides); the capsule keeps the memory alive."""
        return export_dlpack(f"field '{self.name}'", self._view, self.dtype, versioned)

    def from_torch(self, tensor):
        """from_numpy() of the tensor's values (on any device)."""
        torch_interop.from_torch(self, tensor)

    def fill(self, value):
        """Sets every element to value; in kernel code, as a loop of the
        kernel."""
        if context.current() is not None:
            fill_in_kernel([self], [value])
            return
        place = self.place_id()
        if self._sparse():
            sparse_host.fill(self, value)
            return
        prog = runtime.program()
        prog.sync()
        prog.field_fill([place], value)

    fill._qd_intrinsic = True  # called as it is from kernel code, not inlined


    def copy_from(self, other):
        """Copies every element of field `other` (of the same shape) here."""
        check_copy_source(self, other, Field)
        self.from_numpy(other.to_numpy())


# Upstream's name for a field of scalars.
ScalarField = Field


def check_copy_flag(copy, what):
    if copy not in (True, None, False):
        raise QuadrantsTypeError(f"{what}(copy=...) takes True, False or None, got {copy!r}")


class _MemoryInterface:  # pylint: disable=too-few-public-methods
    """numpy's array interface over field memory it keeps alive."""

    def __init__(self, memory, address, shape, strides, dtype):
        self._memory = memory
        self.__array_interface__ = {"version": 3, "shape": tuple(shape),
                                    "strides": tuple(strides), "typestr": dtype.str,
                                    "data": (address, False)}


class DeviceArray:
    """A strided array in CUDA memory (a field's), exported through
    __cuda_array_interface__; it keeps the memory alive. Its shape and
    strides live in a numpy array over the device address that is never
    read, so reshaping works as numpy's view reshaping does."""

    def __init__(self, memory, shadow):
        self._memory = memory
        self._shadow = shadow

    @property
    def shape(self):
        return self._shadow.shape

    def reshape(self, shape):
        view = self._shadow.view()
        view.shape = shape  # raises where numpy would have to copy
        return DeviceArray(self._memory, view)

    @property
    def __cuda_array_interface__(self):
        interface = self._shadow.__array_interface__
        return {"version": 3, "shape": self._shadow.shape, "typestr": interface["typestr"],
                "strides": self._shadow.strides, "data": (interface["data"][0], False)}


def export_dlpack(label, view_fn, dtype, versioned):
    """The DLPack capsule of a field's memory: its view (view_fn, on cpu or
    cuda) exported with the capsule keeping the view alive."""
    if not misc.session_supports("dlpack"):
        raise QuadrantsRuntimeError(f"to_dlpack: {label}: arch={runtime.state.arch.name} "
                                    f"fields live in memory DLPack consumers cannot "
                                    f"address; copy it with to_numpy() or to_torch()")
    view, why = view_fn(device=True, scalar=True)
    if view is None:
        raise QuadrantsRuntimeError(f"to_dlpack: {label} offers no view of its memory: "
                                    f"{why}; copy it with to_numpy() or to_torch() instead")
    runtime.program().sync()
    on_device = isinstance(view, DeviceArray)
    shadow = view._shadow if on_device else view  # pylint: disable=protected-access
    device = (misc.session_dlpack_device_type(), runtime.state.options.get("device_id", 0)) \
        if on_device else (1, 0)
    return core.strided_to_dlpack(view, shadow.__array_interface__["data"][0], dtype.name,
                                  list(shadow.shape), list(shadow.strides), device[0],
                                  device[1], versioned)


def view_places(places, dtype, element_shape, numpy_dtype=None, device=False, scalar=False):
    """(a writable numpy array sharing the memory of field places `places`
    (the components of one field, in row-major element order), None), or
    (None, why there is none). Views exist on cpu, and with device=True on
    cuda (a DeviceArray), whose field memory grows in place, for fields
    stored densely on their own; element axes come last, as to_numpy gives
    them. A 0-D field has one (of shape ()) only with scalar=True, as
    upstream exports it through DLPack but gives no numpy view."""
    np_dtype = np.dtype(types.to_numpy_dtype(dtype))
    if numpy_dtype is not None and np.dtype(numpy_dtype) != np_dtype:
        return None, f"dtype={np.dtype(numpy_dtype)} differs from the field's {dtype}"
    in_device_memory = not misc.session_supports("host_memory")
    if in_device_memory and not (device and misc.session_dlpack_device_type() == 2):
        where = "cpu and (torch tensors) cuda" if device else "cpu"
        return None, (f"arch={runtime.state.arch.name}: views of field memory exist on "
                      f"{where} only")
    if dtype == types.f16:
        return None, "f16 fields are not exported (as upstream)"
    prog = runtime.program()
    try:
        views = [prog.view_field(p) for p in places]
    except QuadrantsRuntimeError as e:
        return None, str(e)
    memory, base, shape, strides, _ = views[0]
    shape, strides = list(shape), list(strides)
    if not shape and not scalar:
        return None, "a 0-D field has no view (as upstream)"
    # One element (a 0-D field) has no stride, so neighbours do not matter.
    if shape and any(set(v[4]) - set(places) for v in views):
        return None, ("its elements interleave with other fields' (placed in the same cells, "
                      "as struct members in an AoS layout are)")
    steps = []
    for axis, size in enumerate(element_shape):
        inner = int(np.prod(element_shape[axis + 1:], dtype=np.int64))
        steps.append(views[inner][1] - base if size > 1 else 0)
    packed = np_dtype.itemsize
    for n, step in zip(reversed(element_shape), reversed(steps)):
        if n > 1 and step != packed:
            return None, ("its elements' components are not stored together (an SoA "
                          "layout)")
        packed *= n
    for k, (_, address, comp_shape, comp_strides, _) in enumerate(views):
        index = np.unravel_index(k, element_shape) if element_shape else ()
        if address != base + sum(int(i) * st for i, st in zip(index, steps)) or \
                list(comp_shape) != shape or list(comp_strides) != strides:
            return None, "its components do not form one strided array"
    array = np.asarray(_MemoryInterface(memory, base, shape + list(element_shape),
                                        strides + steps, np_dtype))
    return (DeviceArray(memory, array) if in_device_memory else array), None


def host_copy_or_view(copy, label, view_fn, copy_fn):
    """to_numpy(copy=...) of a field: copy_fn() for copy=True; the view
    view_fn() gives for copy=False (else ValueError) and copy=None (else a
    copy)."""
    check_copy_flag(copy, "to_numpy")
    if copy is not True:
        view, why = view_fn()
        if view is not None:
            return view
        if copy is False:
            raise ValueError(f"to_numpy(copy=False): Zero-copy not available for {label}: {why}")
    return copy_fn()


def check_copy_source(dst, src, cls):
    """copy_from needs a source of the destination's kind and shape."""
    if not isinstance(src, cls):
        raise QuadrantsTypeError(f"copy_from: {dst!r} copies from a {cls.__name__}, got "
                                 f"{type(src).__name__}")
    if tuple(dst.shape) != tuple(src.shape):
        raise ArgumentValueError(f"copy_from: the destination has shape "
                                 f"{tuple(dst.shape)}, the source {tuple(src.shape)}")


def fill_in_kernel(fields, values):
    """x.fill(v) in kernel code: a loop storing values[k] into fields[k]
    (components of one vector/matrix field) at every index."""
    b = context.builder()
    stored = []
    for f, value in zip(fields, values):
        value = ops.cast(value, f.dtype)
        stored.append(value.stmt if isinstance(value, Expr) else
                      context.constant(value, f.dtype).stmt)
    shape = fields[0].shape
    total = 1
    for extent in shape:
        total *= extent
    loop = b.range_for(context.constant(0, types.i32).stmt,
                       context.constant(total, types.i32).stmt)
    b.push_block(loop, 0)
    try:
        flat = Expr(b.loop_index(loop, 0))
        indices = [None] * len(shape)
        for axis in range(len(shape) - 1, -1, -1):
            indices[axis] = ops.binary("mod", flat, shape[axis], None) if axis else flat
            if axis:
                flat = ops.binary("floordiv", flat, shape[axis], None)
        stmts = _physical_stmts(fields[0], [context.to_expr(i).stmt for i in indices])
        for f, stmt in zip(fields, stored):
            b.global_store(b.field_ptr(f.place_id(), stmts, f"{f.name}.fill()"), stmt)
    finally:
        b.pop_block()


def _offset_tuple(offset, ndim, what):
    """offset= as a tuple of ndim ints, or None when it shifts nothing."""
    if offset is None:
        return None
    if not isinstance(offset, (tuple, list)):
        offset = (offset,)
    offset = tuple(offset)
    if not all(isinstance(o, numbers.Integral) for o in offset):
        raise QuadrantsTypeError(f"{what}: offset must be integers, got {offset}")
    if len(offset) != ndim:
        raise QuadrantsSyntaxError(f"{what}: The dimensionality of shape and offset must be "
                                   f"the same ({ndim} != {len(offset)})")
    offset = tuple(int(o) for o in offset)
    return offset if any(offset) else None


def _order_axes(order, ndim, what):
    """order= ("ji", ...) as the axes from the outermost memory level in, or
    None for the default order."""
    if order is None:
        return None
    if not isinstance(order, str):
        raise QuadrantsTypeError(f"{what}: order must be a string of axis letters such as "
                                 f"'ji', got {order!r}")
    if len(order) != ndim:
        raise QuadrantsSyntaxError(f"{what}: The dimensionality of shape and order must be "
                                   f"the same ({ndim} != {len(order)})")
    if len(set(order)) != ndim:
        raise QuadrantsSyntaxError(f"{what}: The axes in order must be different, got "
                                   f"'{order}'")
    axes = []
    for ch in order:
        axis = ord(ch) - ord("i")
        if not 0 <= axis < ndim:
            raise QuadrantsSyntaxError(f"{what}: Invalid axis {ch} in order '{order}' for a "
                                       f"{ndim}-D shape (axes are "
                                       f"{'ijklmnopqrst'[:ndim]!r})")
        axes.append(axis)
    return None if axes == list(range(ndim)) else tuple(axes)


def layout_options(shape, order, offset, what):
    """Checks a field factory's order= and offset= against its shape:
    (order as axes or None, offset as a tuple or None)."""
    if shape is None:
        for option, value in (("offset", offset), ("order", order)):
            if value is not None:
                raise QuadrantsSyntaxError(f"{what}: shape cannot be None when {option} is "
                                           f"set")
        return None, None
    return _order_axes(order, len(shape), what), _offset_tuple(offset, len(shape), what)


def field(dtype, shape=None, needs_grad=False, name=None, needs_dual=False, order=None,
          offset=None):
    """qd.field(dtype, shape=None, needs_grad=False, name=None, needs_dual=False,
    order=None, offset=None).

    With a shape the field is placed at once in its own dense level (and so
    are .grad with needs_grad and .dual with needs_dual); without one it
    waits for qd.root....place(x), or becomes a 0-D field at first use.
    order ("ji", ...) lays the axes out in memory in that order, outermost
    first; offset (an int per axis) is the index of the first element.
    """
    if python_backend.active():
        return python_backend.storage(dtype, shape)
    runtime.program()
    if hasattr(dtype, "field"):
        # qd.field(qd.math.vec3, ...) / qd.field(MyStruct, ...): a field of
        # vectors, matrices or structs.
        return dtype.field(shape=shape, needs_grad=needs_grad, needs_dual=needs_dual,
                           name=name, order=order, offset=offset)
    dtype = types.normalize(dtype)
    shape = _shape_tuple(shape)
    layout, offset = layout_options(shape, order, offset, "qd.field()")
    for flag, value in (("needs_grad", needs_grad), ("needs_dual", needs_dual)):
        if not isinstance(value, bool):
            raise QuadrantsTypeError(f"{flag} must be a bool, got {value!r}")
    if (needs_grad or needs_dual) and not dtype.is_float:
        flag = "needs_grad" if needs_grad else "needs_dual"
        # The first sentence is upstream's wording.
        raise QuadrantsGradientError(f"qd.field(): {dtype} is not supported for field with "
                                     f"`needs_grad=True` or `needs_dual=True`. {dtype} is not "
                                     f"differentiable, so a field of {dtype} cannot have "
                                     f"{flag}=True; use a floating-point dtype (qd.f32, "
                                     f"qd.f64)")
    if name is not None and not isinstance(name, str):
        raise QuadrantsTypeError(f"field name must be a str, got {name!r}")
    runtime.state.unnamed_fields += not name
    f = Field(dtype, shape, name or f"field{runtime.state.unnamed_fields}",
              needs_grad=needs_grad, needs_dual=needs_dual)
    if shape is not None:
        place_together([f], shape, layout, offset)
        for companion in _companions_to_place(f):
            place_together([companion], shape, layout, offset)
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


def place_together(fields, shape, layout=None, offset=None):
    """Places `fields` side by side under a new dense level of `shape` (one
    level per axis, outermost first, with a layout), or at the root when
    0-D."""
    prog = runtime.program()
    parent = 0
    if len(shape) and layout is None:
        parent = prog.add_dense(0, list(range(len(shape))), list(shape))
    elif len(shape):
        for axis in layout:
            parent = prog.add_dense(parent, [axis], [shape[axis]])
    for f in fields:
        f._place_at(parent, shape)
        f._layout, f._offset = layout, offset


def _place_with_shape(f, shape):
    """Places f alone; a companion is laid out like its primal (on the
    primal's layout axes, when they are not 0..n-1)."""
    like = f.primal if f._role != "primal" else f
    axes = like._axes if like is not f else None
    if axes is not None:
        parent = runtime.program().add_dense(0, list(axes), list(shape))
        full = [1] * like._full_ndim
        for a, n in zip(axes, shape):
            full[a] = n
        f._place_at(parent, full, axes)
        f._layout, f._offset = like._layout, like._offset
        return
    place_together([f], shape, like._layout, like._offset)


def placement_generation():
    """A number that changes whenever a field or companion is placed."""
    return _placement_changes[0]


def place_companion(f):
    """Places companion `f` (a .grad, a .dual, or an adjoint's .dual) alone,
    laid out like the field it belongs to."""
    _place_with_shape(f, f.primal.shape)


def element_indices(f, indices):
    """The IR indices of f's storage for a kernel's indices (statements):
    an offset field's are shifted to start at 0."""
    origin = f._origin()
    if origin is None:
        return _physical_stmts(f, indices)
    b = context.builder()
    # Kernel asserts run in debug mode only; check_out_of_bound alone still
    # checks the shifted index against the storage.
    checked = runtime.state.options.get("debug")
    out = []
    for axis, (stmt, o, n) in enumerate(zip(indices, origin, f.shape)):
        if checked:
            _assert_in_range(f, Expr(stmt), o, n, axis)
        if o:
            stmt = b.binary("sub", stmt, context.constant(o, Expr(stmt).dtype).stmt)
        out.append(stmt)
    return _physical_stmts(f, out)


def _physical_stmts(f, indices):
    """Kernel index statements, one per dimension, as one per layout axis."""
    if f._layout_axes() is None:
        return indices
    return f._physical(indices, context.constant(0, types.i32).stmt)


def _assert_in_range(f, index, begin, size, axis):
    """In debug mode an offset field's index is checked against its own
    range, so the error names the index as the kernel wrote it."""
    inside = ops.binary("bit_and", ops.binary("cmp_ge", index, begin, None),
                        ops.binary("cmp_lt", index, begin + size, None), None)
    context.builder().assert_(
        inside.stmt, f"Out of bound access to field '{f.name}': index %d is outside "
        f"[{begin}, {begin + size}) on axis {axis}", [index.stmt])


def loop_index(f, index, axis):
    """A struct-for's index on `axis` (an Expr from 0) as f's index."""
    origin = f._origin()
    if origin is None or not origin[axis]:
        return index
    b = context.builder()
    return Expr(b.binary("add", index.stmt, context.constant(origin[axis], index.dtype).stmt))


def index_bounds(f):
    """(begin, end) of each axis of field f (scalar, vector, matrix or
    struct), for qd.grouped(f)."""
    leaf = f._leaf_fields()[0] if hasattr(f, "_leaf_fields") else f
    return [(o, o + n) for o, n in zip(leaf.offset, leaf.shape)]


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
            f"'{f.name}' is not placed (it has no allocation): place it (e.g. "
            f"qd.root.dense(qd.i, n).place({primal.name}, {primal.name}.{f._role})), "
            f"create '{primal.name}' with needs_{f._role}=True, or call qd.root.{how}()")
    shape = primal.shape  # places the primal (and with it f) if needed
    if f._place is None:
        _place_with_shape(f, shape)


def _sparse_unsupported(kind):
    """The error for a sparse SNode on an arch whose backend does not lay
    them out (qd.is_extension_supported(arch, qd.extension.sparse) is
    False)."""
    arch = runtime.state.arch.name
    # The first sentence is upstream's.
    return QuadrantsRuntimeError(
        f"{kind.capitalize()} SNode is not supported on this backend. "
        f"{kind}() SNodes need qd.extension.sparse, which arch={arch} does not support: its "
        f"code generator has no pool allocator for the blocks of sparse cells (the LLVM "
        f"backends, cpu and cuda, have). Lay the field out with dense() here, or run on "
        f"qd.cpu or qd.cuda; qd.is_extension_supported(arch, qd.extension.sparse) tells "
        f"which arch can")


def _axes_list(axes):
    if isinstance(axes, Axes):
        return list(axes.axes)
    if isinstance(axes, int):
        return [axes]
    out = []
    for a in axes:
        out.extend(_axes_list(a))
    return out


def _broadcast_sizes(dimensions, axes):
    """One size given for several axes applies to each, as a bare int does
    (upstream accepts `dense(qd.ij, (n,))` as n x n)."""
    return dimensions * len(axes) if len(dimensions) == 1 else dimensions


def _grown_shape(shape, axes, dimensions):
    shape = list(shape)
    for axis, size in zip(axes, dimensions):
        while len(shape) <= axis:
            shape.append(1)
        # Levels that index the same axis block it: their sizes multiply.
        shape[axis] *= int(size)
    return tuple(shape)


class SNode:
    """A node of the layout tree being built: qd.root.dense(...).place(...)."""

    def __init__(self, snode_id, shape, axes=None):
        self._id = snode_id
        self._shape = shape  # the full shape of fields placed under it
        # The layout axes some level down to here indexes (None: all of
        # 0..len(shape)-1).
        self._axes = axes

    def dense(self, axes, dimensions):
        axes = _axes_list(axes)
        if isinstance(dimensions, numbers.Integral):
            dimensions = [dimensions] * len(axes)
        dimensions = _broadcast_sizes(list(dimensions), axes)
        if len(dimensions) != len(axes):
            raise QuadrantsTypeError(f"dense(): {len(axes)} axes but {len(dimensions)} sizes")
        prog = runtime.program()
        node = prog.add_dense(self._id, list(axes), [int(d) for d in dimensions])
        return SNode(node, _grown_shape(self._shape, axes, dimensions), self._grown_axes(axes))

    def pointer(self, axes, dimensions):
        """A pointer level: each cell holds its children in a block of the
        level's pool while active (a write activates it) and reads as zeros
        while not. Needs qd.extension.sparse."""
        return self._sparse_level("pointer", axes, dimensions)

    def bitmasked(self, axes, dimensions):
        """A bitmasked level: dense storage with an activity flag per cell;
        struct-for visits the active cells. Needs qd.extension.sparse."""
        return self._sparse_level("bitmasked", axes, dimensions)

    def dynamic(self, axis, dimension, chunk_size=None):
        """A dynamic level: per cell of its parent, a list of at most
        `dimension` elements along `axis` (qd.append, qd.length), stored in
        pool blocks of `chunk_size` elements (default: `dimension`). Needs
        qd.extension.sparse."""
        axes = _axes_list(axis)
        if len(axes) != 1:
            raise QuadrantsTypeError(f"dynamic(): takes exactly one axis, got {len(axes)}")
        if isinstance(dimension, (list, tuple)):
            if len(dimension) != 1:
                raise QuadrantsTypeError("dynamic(): takes one dimension")
            dimension = dimension[0]
        if not isinstance(dimension, numbers.Integral) or dimension <= 0:
            raise QuadrantsTypeError(f"dynamic(): dimension must be a positive int, got "
                                     f"{dimension!r}")
        if chunk_size is None:
            chunk_size = dimension
        if not isinstance(chunk_size, numbers.Integral) or chunk_size <= 0:
            raise QuadrantsTypeError(f"dynamic(): chunk_size must be a positive int, got "
                                     f"{chunk_size!r}")
        return self._sparse_level("dynamic", axes, [int(dimension)], int(chunk_size))

    def _sparse_level(self, kind, axes, dimensions, chunk_size=0):
        runtime.program()
        arch = runtime.state.arch
        if not is_extension_supported(arch, extension.sparse):
            raise _sparse_unsupported(kind)
        axes = _axes_list(axes)
        if isinstance(dimensions, numbers.Integral):
            dimensions = [dimensions] * len(axes)
        dimensions = _broadcast_sizes([int(d) for d in dimensions], axes)
        if len(dimensions) != len(axes):
            raise QuadrantsTypeError(f"{kind}(): {len(axes)} axes but {len(dimensions)} sizes")
        node = runtime.program().add_sparse(self._id, kind, list(axes), dimensions,
                                            chunk_size)
        return SNode(node, _grown_shape(self._shape, axes, dimensions), self._grown_axes(axes))

    def _qd_snode_id_(self):
        """This SNode's id, for the sparse operations (quadrants.lang.sparse)."""
        return self._id

    def _grown_axes(self, axes):
        used = set(range(len(self._shape))) if self._axes is None else set(self._axes)
        return tuple(sorted(used | set(axes)))

    def deactivate_all(self):
        """Deactivates every cell of this sparse SNode (and of the sparse
        levels under it); for another SNode, of the sparse levels under
        it."""
        sparse_host.deactivate_all(self._id)

    @property
    def snode(self):
        """This SNode (upstream's spelling for code that takes either)."""
        return self

    @property
    def ptr(self):
        """This SNode, for upstream code that reaches its core object."""
        return self

    def get_snode_grad_type(self):
        """The role of the field placed here (qd.types.enums.SNodeGradType):
        PRIMAL, ADJOINT for a .grad, DUAL for a .dual."""
        for f in live_fields():
            if f._place == self._id:
                return {"grad": SNodeGradType.ADJOINT,
                        "dual": SNodeGradType.DUAL}.get(f._role, SNodeGradType.PRIMAL)
        return SNodeGradType.PRIMAL

    def place(self, *fields, offset=None):
        """Places fields here; offset (an int per axis) is the index of
        their first element."""
        ndim = len(self._axes) if self._axes is not None else len(self._shape)
        offset = _offset_tuple(offset, ndim, "place()")
        for f in fields:
            # Vector, matrix and struct fields place all their components here.
            leaves = f._leaf_fields() if hasattr(f, "_leaf_fields") else [f]
            for leaf in leaves:
                if not isinstance(leaf, Field):
                    raise QuadrantsTypeError(f"place() takes fields, got {f!r}")
                if leaf._role != "primal" and offset not in (None, leaf.primal._offset):
                    raise QuadrantsSyntaxError(
                        f"place(): '{leaf.name}' is indexed like its primal "
                        f"'{leaf.primal.name}' (offset {leaf.primal._offset}), so it cannot "
                        f"be placed with offset {offset}; give the offset when placing "
                        f"'{leaf.primal.name}'")
                leaf._place_at(self._id, self._shape, self._axes)
                leaf._offset = offset
                # Under a sparse level the companions a field asked for
                # share its cells (as upstream places them).
                if leaf._role == "primal" and runtime.program().sparse_ancestors(self._id):
                    for companion in _companions_to_place(leaf):
                        companion._place_at(self._id, self._shape, self._axes)
                        companion._offset = offset
        return self

    @property
    def shape(self):
        """The number of cells along each axis from the root down to here."""
        return tuple(self._shape)

    def parent(self, n=1):
        """The n-th ancestor of this SNode: qd.root at the top, None above it."""
        prog = runtime.program()
        node = self._id
        for _ in range(n):
            if node == 0:
                return None
            node = prog.parent_of(node)
        if node == 0:
            return root
        return SNode(node, tuple(prog.snode_shape(node)))

    def __eq__(self, other):
        return isinstance(other, SNode) and other._id == self._id

    def __hash__(self):
        return hash(("SNode", self._id))

    def __repr__(self):
        return f"<qd SNode {self._id} shape={self.shape}>"

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
        for f in list(live_fields()):
            companion = getattr(f, role) if f._role == "primal" else None
            if companion is not None and f.placed and not companion.placed:
                _place_with_shape(companion, f.shape)


def rescale_index(a, b, I):
    """Index I of field or SNode `a` scaled to the cells of field or SNode
    `b`, axis by axis: divided by a.shape[k] // b.shape[k] where `b` is
    coarser, multiplied by b.shape[k] // a.shape[k] where it is finer, kept
    where they match (and past either one's axes). I is a list, tuple or
    qd.Vector of indices (a grouped loop index); the result is a qd.Vector.
    Works in kernels and in Python scope."""
    for arg, which in ((a, "first"), (b, "second")):
        if not isinstance(arg, (Field, SNode)) and not hasattr(arg, "_leaf_fields"):
            raise QuadrantsTypeError(f"qd.rescale_index(): the {which} argument must be a "
                                     f"field or an SNode, got {type(arg).__name__}")
    def load(v):
        return context.load(v) if context.current() is not None else v
    I = load(I)
    if isinstance(I, (list, tuple)):
        items = [load(v) for v in I]
    elif isinstance(I, Matrix):
        items = [I[k] for k in range(I.n)]
    else:
        raise QuadrantsTypeError(f"qd.rescale_index(): the index must be a list, tuple or "
                                 f"qd.Vector (a grouped loop index), got {type(I).__name__}")
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    result = list(items)
    for k in range(min(len(items), len(a_shape), len(b_shape))):
        if a_shape[k] > b_shape[k]:
            result[k] = ops.binary("floordiv", items[k], a_shape[k] // b_shape[k],
                                   lambda x, y: x // y)
        elif a_shape[k] < b_shape[k]:
            result[k] = ops.binary("mul", items[k], b_shape[k] // a_shape[k],
                                   lambda x, y: x * y)
    return Vector(result)


# Kernels call it as it is (its arguments are fields and index values), not
# inlined as Python source.
rescale_index._qd_intrinsic = True


def check_placements():
    """What a launch lays out must be complete, as upstream checks when it
    materializes the fields: a field declared without a shape must have been
    placed, and a placed field created with needs_grad / needs_dual must
    have its grad / dual placed too (place it beside the primal, or call
    qd.root.lazy_grad() / lazy_dual()). Raises QuadrantsRuntimeError (a
    RuntimeError) naming them; does nothing while no field was created or
    placed since the last check that passed."""
    if _placements_checked[0] == _placement_changes[0]:
        return
    unplaced, no_grad, no_dual = [], [], []
    for f in live_fields():
        if f._role != "primal":
            continue
        if not f.placed:
            if f._shape is None:
                unplaced.append(f.name)
            continue
        if f._needs_grad and f.grad is not None and not f.grad.placed:
            no_grad.append(f.name)
        if f._needs_dual and f.dual is not None and not f.dual.placed:
            no_dual.append(f.name)
    if unplaced:
        raise QuadrantsRuntimeError(
            f"These field(s) are not placed: {unplaced}. Place each (e.g. "
            f"qd.root.dense(qd.i, n).place(f)) or create it with a shape")
    for role, missing, lazy in (("grad", no_grad, "lazy_grad"),
                                ("dual", no_dual, "lazy_dual")):
        if missing:
            # "requrie" is upstream's spelling, which its users' tests match.
            raise QuadrantsRuntimeError(
                f"These field(s) requrie `needs_{role}=True`, however their {role} "
                f"field(s) are not placed: {missing}. Place each {role} beside its "
                f"primal (qd.root.dense(qd.i, n).place(f, f.{role})) or call "
                f"qd.root.{lazy}()")
    _placements_checked[0] = _placement_changes[0]


def live_fields():
    """The fields of the current session, but those retired."""
    for f in _registry:
        if f._generation == runtime.state.generation and f._retired is None:
            yield f


class _Root(SNode):
    """qd.root: the root of the layout tree; qd.root.dense(...),
    .pointer(...), ... add levels under it."""

    def __init__(self):
        super().__init__(0, ())

    def dense(self, axes, dimensions):
        runtime.program()
        return super().dense(axes, dimensions)


root = _Root()


ops.fields.register(Field=Field)
