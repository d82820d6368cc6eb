"""qd.ndarray: arrays passed to kernels as arguments."""
import numbers
import weakref

import numpy as np

from quadrants.lang import (buffer_view, matrix, misc, python_backend, runtime, torch_interop,
                            types)
from quadrants.lang.composite_field import element_array, host_value
from quadrants.lang.exception import (ArgumentValueError, QuadrantsGradientError,
                                      QuadrantsRuntimeError, QuadrantsTypeError)
from quadrants.lang.field import check_copy_source
from quadrants.lang.struct import HostStruct


# Ndarrays that have adjoints, so qd.ad.Tape can clear them.
_with_grad = weakref.WeakSet()


class _WritableView:
    """A writable numpy view of the memory a read-only one shows (which it
    keeps, and with it the ndarray)."""

    def __init__(self, view):
        self._view = view
        interface = dict(view.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


class Ndarray:
    """A dense array owned by Quadrants, passed to kernels by reference.

    With a layout (_qd_layout, a permutation of the axes listing them from
    the outermost memory level in) the memory holds the axes in that order:
    _physical_shape[p] is shape[_qd_layout[p]]. Everything users see (shape,
    indices in kernels and on the host, to_numpy, from_numpy, DLPack's
    shape) stays in the given axis order."""

    _qd_layout = None

    def __init__(self, dtype, shape, needs_grad=False, layout=None):
        prog = runtime.program()
        # Vector/matrix elements are stored as their components along
        # trailing axes of the underlying array (shape + element shape).
        # Struct elements are their scalar leaves along one trailing axis, so
        # every member must have the same scalar type.
        self._struct = None
        if hasattr(dtype, "_flat_dtypes") and not hasattr(dtype, "shape"):
            leaves = dtype._flat_dtypes()
            if len(set(leaves)) != 1:
                raise QuadrantsTypeError(
                    f"qd.ndarray() of struct {dtype!r}: its members have the scalar types "
                    f"{sorted({t.name for t in leaves})}; an ndarray of structs needs one "
                    f"scalar type for all members (use a struct field otherwise)")
            self.element_type, self._struct = dtype, dtype
            scalar, self._element_shape = leaves[0], (len(leaves),)
            self.dtype = dtype
        elif hasattr(dtype, "_flat_dtypes"):
            self.element_type = dtype
            scalar, self._element_shape = dtype.dtype, tuple(dtype.shape)
            # As upstream: the components' scalar type (element_type is the
            # vector or matrix type).
            self.dtype = scalar
        else:
            self.element_type = self.dtype = types.normalize(dtype)
            scalar, self._element_shape = self.dtype, ()
        shape = _valid_shape(shape)
        if not isinstance(needs_grad, bool):
            raise QuadrantsTypeError(f"needs_grad must be a bool, got {needs_grad!r}")
        if needs_grad and not scalar.is_float:
            # The wording keeps upstream's "<dtype> is not supported for ndarray".
            raise QuadrantsGradientError(f"qd.ndarray(): {self.element_type} is not supported "
                                         f"for ndarray gradients: {scalar} is not "
                                         f"differentiable, so an ndarray of {self.element_type} "
                                         f"cannot have needs_grad=True; use a floating-point "
                                         f"dtype (qd.f32, qd.f64)")
        if layout is not None:
            if self._element_shape:
                raise QuadrantsTypeError("layout= is not supported with compound dtypes "
                                         "(vector/matrix/struct elements)")
            layout = check_layout(layout, len(shape))
            self._qd_layout = layout
        self._physical_shape = physical_shape(shape, layout)
        self._generation = runtime.state.generation
        self._scalar = scalar
        self._core_shape = self._physical_shape + self._element_shape
        self._core = prog.create_ndarray(scalar.name, list(self._core_shape))
        self.grad = type(self)(self.element_type, shape, layout=layout) if needs_grad \
            else None
        if self.grad is not None:
            _with_grad.add(self)

    def has_grad(self):
        """Whether this ndarray has a gradient companion (.grad): True iff it
        was created with needs_grad=True."""
        return self.grad is not None

    def has_dual(self):
        """Whether this ndarray has a dual (forward-mode) companion: ndarrays
        have none, so always False."""
        return False

    @property
    def shape(self):
        """The extents in the axis order users index (whatever the layout)."""
        return canonical_shape(self._physical_shape, self._qd_layout)

    @property
    def ndim(self):
        return len(self._physical_shape)

    def _physical_index(self, index):
        """A host index (in the users' axis order) in the memory's order."""
        layout = self._qd_layout
        return index if layout is None else [index[a] for a in layout]

    def _to_canonical(self, array):
        """A numpy array in the memory's axis order, in the users' order."""
        layout = self._qd_layout
        if layout is None:
            return array
        return np.ascontiguousarray(np.transpose(array, inverse_layout(layout)))

    @property
    def size(self):
        """The number of elements."""
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def arr(self):
        """The core array (upstream's name): its device_allocation_ptr() is
        the address of the memory kernels address."""
        return self._core

    def _check_alive(self):
        if self._generation != runtime.state.generation:
            raise QuadrantsRuntimeError("this ndarray belongs to a Quadrants session that "
                                        "was reset; create it again after qd.init()")
        return runtime.program()

    def _index(self, key):
        return self._physical_index(types.host_index(key, self.ndim, "ndarray"))

    @property
    def element_shape(self):
        return self._element_shape

    def _components(self):
        return [list(c) for c in np.ndindex(*self._element_shape)]

    def _read_flat(self, index):
        return [self._core.read(index + c) for c in self._components()]

    def __getitem__(self, key):
        if isinstance(key, slice):
            # data[a:b] of a 1-D ndarray: a view of that range (no copy).
            if self.ndim != 1:
                raise TypeError(f"slicing an ndarray makes a BufferView, which views 1D "
                                f"ndarrays only; this one has shape {self.shape}")
            start, size = buffer_view.slice_bounds(key, self.shape[0], "ndarray slice")
            return buffer_view.BufferView(self, start, size)
        self._check_alive().sync()
        index = self._index(key)
        if not self._element_shape:
            return self._core.read(index)
        if self._struct is not None:
            value = self._struct._from_flat(self._read_flat(index))

            def write_member(name, member):
                current = self._struct._from_flat(self._read_flat(index))
                members = dict(current.items())
                members[name] = member
                self[key] = members
            return HostStruct(self._struct, dict(value.items()), write_member)
        values = [self._core.read(index + c) for c in self._components()]
        return host_value(np.array(values, dtype=types.to_numpy_dtype(self._scalar))
                          .reshape(self._element_shape),
                          store=lambda value: self.__setitem__(key, value))

    def __setitem__(self, key, value):
        self._check_alive().sync()
        index = self._index(key)
        if not self._element_shape:
            self._core.write(index, value)
            return
        if self._struct is not None:
            flat = self._struct._flatten_host(value, "this ndarray's element")
            for c, v in zip(self._components(), flat):
                self._core.write(index + c, v.item() if isinstance(v, np.generic) else v)
            return
        value = element_array(value, self._element_shape, "this ndarray")
        for c, v in zip(self._components(), value.reshape(-1).tolist()):
            self._core.write(index + c, v)

    @property
    def layout(self):
        """The memory order of the axes (outermost first) when it is not
        the default row-major one, else None."""
        layout = self._qd_layout
        return None if layout is None or layout == tuple(range(len(layout))) else layout

    def to_numpy(self, dtype=None, *, copy=True):
        """The contents (shape + element shape) as a numpy array: a new one
        (copy=True), a view of the ndarray's memory (copy=False: on cpu,
        else ValueError), or a view where there is one and a copy otherwise
        (copy=None)."""
        if copy not in (True, None, False):
            raise QuadrantsTypeError(f"to_numpy(copy=...) takes True, False or None, got "
                                     f"{copy!r}")
        if copy is not True:
            view, why = self._numpy_view(dtype)
            if view is not None:
                return view
            if copy is False:
                raise ValueError(f"to_numpy(copy=False): Zero-copy not available for this "
                                 f"ndarray: {why}")
        self._check_alive().sync()
        if self._struct is not None:
            if dtype is not None:
                raise QuadrantsTypeError("to_numpy(dtype=...) does not apply to an ndarray "
                                         "of structs (it gives a dict of arrays)")
            return _struct_split(self._struct, self._core.to_numpy(), self.shape)
        out = self._to_canonical(self._core.to_numpy())
        return out if dtype is None else out.astype(dtype)

    def _view_refused(self):
        """Why this ndarray offers no view of its memory, or None."""
        if self._struct is not None:
            return "an ndarray of structs gives a dict of arrays"
        if not misc.session_supports("dlpack"):
            return f"arch={runtime.state.arch.name} exports no memory"
        return None

    def _numpy_view(self, dtype):
        why = self._view_refused()
        if why is None and not misc.session_supports("host_memory"):
            why = "numpy arrays cannot reference GPU memory"
        if why is None and dtype is not None and np.dtype(dtype) != \
                types.to_numpy_dtype(self.dtype):
            why = f"dtype={np.dtype(dtype)} differs from the ndarray's {self.dtype}"
        if why is not None:
            return None, why
        view = np.from_dlpack(self)
        # numpy before 2.1 marks DLPack imports read-only; the memory is not.
        return (view if view.flags.writeable else np.asarray(_WritableView(view))), None

    def _torch_view(self, torch):
        why = self._view_refused()
        if why is not None:
            return None, why
        return torch_interop.dlpack_tensor(torch, self), None

    def __deepcopy__(self, memo):
        """copy.deepcopy(a): a new ndarray of the same element type and
        shape holding a's values (and, when a has one, a copy of its grad)."""
        copied = type(self)(self.element_type, self.shape, needs_grad=self.grad is not None,
                            layout=self._qd_layout)
        memo[id(self)] = copied
        copied.copy_from(self)
        if self.grad is not None:
            copied.grad.copy_from(self.grad)
        return copied

    def copy_from(self, other):
        """Copies every element of ndarray `other` (of the same shape and
        element type) here."""
        check_copy_source(self, other, Ndarray)
        if other.element_type != self.element_type:
            raise QuadrantsTypeError(f"copy_from: the destination holds {self.element_type}, "
                                     f"the source {other.element_type}")
        other._check_alive().sync()
        self._check_alive()
        if other._physical_shape == self._physical_shape and \
                other._qd_layout == self._qd_layout:
            self._core.from_numpy(other._core.to_numpy())
        else:
            self.from_numpy(other.to_numpy())

    def from_numpy(self, array):
        self._check_alive().sync()
        if self._struct is not None:
            full = self._core.to_numpy()
            _struct_merge(self._struct, full, array, self.shape)
            self._core.from_numpy(full)
            return
        array = np.asarray(array)
        wanted = self.shape + self._element_shape
        if tuple(array.shape) != wanted:
            what = f"shape {self.shape}" if not self._element_shape else \
                f"shape {self.shape} with elements of shape {self._element_shape}"
            raise ArgumentValueError(f"from_numpy: ndarray has {what}, so it needs an array "
                                     f"of shape {wanted}, got {tuple(array.shape)}")
        if self._qd_layout is not None:
            array = np.ascontiguousarray(np.transpose(array, self._qd_layout))
        self._core.from_numpy(array)


    def to_dlpack(self, versioned=False):
        """A DLPack capsule viewing this ndarray's memory, dense and
        row-major with the element shape as trailing axes (no copy; the
        capsule keeps the memory alive): "dltensor" for
        torch.utils.dlpack.from_dlpack, or with versioned=True a DLPack 1.0
        "dltensor_versioned" capsule. Launched kernels have finished
        writing it when this returns."""
        if not misc.session_supports("dlpack"):
            raise QuadrantsRuntimeError(
                f"to_dlpack: arch={runtime.state.arch.name} ndarrays live in device-local "
                f"buffers that other libraries cannot address; copy instead with to_numpy() or "
                f"to_torch()")
        self._check_alive().sync()
        device_type, device_id = self.__dlpack_device__()
        layout = self._qd_layout
        # A layout exports the users' axis order as permuted strides.
        axes = [] if layout is None else list(inverse_layout(layout))
        return self._core.to_dlpack(device_type=device_type, device_id=device_id,
                                    versioned=bool(versioned), axes=axes)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack protocol (np.from_dlpack, torch.from_dlpack, CuPy,
        JAX): a view, never a copy. Kernels run on the legacy default
        stream and have finished when this returns, so any consumer stream
        may read it."""
        del stream  # the export waits for the kernels: no stream to order after
        if copy is True:
            raise BufferError("a Quadrants ndarray exports a view of its memory, not a copy "
                              "(copy=True)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the ndarray is on DLPack device {self.__dlpack_device__()}, "
                              f"not {tuple(dl_device)}")
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return self.to_dlpack(versioned=versioned)

    def __dlpack_device__(self):
        """(DLPack device type, device id): (1, 0) for host memory (cpu; vulkan
        reports it too, though it exports nothing), (2, id) for CUDA, (10, id)
        for ROCm."""
        return _session_dlpack_device()

    def to_torch(self, device=None, *, copy=True):
        """What to_numpy() gives, as a torch tensor: a copy on `device`
        (default: the CPU) with copy=True; with copy=False a tensor sharing
        the ndarray's memory (cpu and cuda; through DLPack) or ValueError;
        with copy=None that tensor where there is one, else a copy."""
        return torch_interop.to_torch(self, device, copy, "this ndarray", self._torch_view)

    def from_torch(self, tensor):
        """from_numpy() of the tensor's values (on any device)."""
        torch_interop.from_torch(self, tensor)
    def fill(self, value):
        self._check_alive().sync()
        if self._element_shape and np.ndim(value.to_list() if hasattr(value, "to_list")
                                           else value) != 0:
            value = np.asarray(value.to_list() if hasattr(value, "to_list") else value)
            if value.shape != self._element_shape:
                raise ArgumentValueError(f"fill: elements have shape {self._element_shape}; "
                                         f"the value has shape {value.shape}")
            full = np.broadcast_to(value, self._core_shape)
            self._core.from_numpy(np.ascontiguousarray(full, dtype=types.to_numpy_dtype(
                self._scalar)))
            return
        self._core.fill(value)

    @property
    def data_generation(self):
        return self._core.data_generation

    def __repr__(self):
        layout = "" if self.layout is None else f" layout={self.layout}"
        return f"<qd.ndarray {self.element_type}{list(self.shape)}{layout}>"


class ScalarNdarray(Ndarray):
    """An ndarray of scalars."""


class VectorNdarray(Ndarray):
    """An ndarray of vectors (qd.Vector.ndarray)."""

    @property
    def n(self):
        return self._element_shape[0]


class MatrixNdarray(Ndarray):
    """An ndarray of matrices (qd.Matrix.ndarray)."""

    @property
    def n(self):
        return self._element_shape[0]

    @property
    def m(self):
        return self._element_shape[1]


def from_dlpack(source):
    """qd.from_dlpack(source): a scalar ndarray over another library's
    memory, no copy: `source` is an object with __dlpack__ (a torch tensor,
    a CuPy or numpy array, ...) or a DLPack capsule. The memory must be on
    the device the kernels run on (host memory on cpu, this session's GPU on
    cuda) and dense: row-major, or with its axes permuted (a transposed
    tensor), which gives an ndarray with that layout. Kernel writes are seen
    by the owner, which keeps the memory until the ndarray is gone."""
    prog = runtime.program()
    if not misc.session_supports("dlpack"):
        raise QuadrantsRuntimeError(f"qd.from_dlpack(): {runtime.state.arch.name} kernels "
                                    f"address only the buffers Quadrants allocates; copy "
                                    f"instead (qd.ndarray(...).from_numpy / from_torch)")
    device_type, device_id = _session_dlpack_device()
    source, layout = _memory_order(source)
    if hasattr(source, "__dlpack__"):
        # Kernels run on the legacy default stream (DLPack's stream 1 on
        # CUDA); a host producer takes no stream.
        capsule = source.__dlpack__(stream=1) if device_type in (2, 10) else \
            source.__dlpack__()
    else:
        capsule = source
    core_array = prog.ndarray_from_dlpack(capsule, device_type, device_id)
    array = ScalarNdarray.__new__(ScalarNdarray)
    dtype = types.by_name(core_array.dtype)
    array._struct, array.dtype, array._scalar, array._element_shape = None, dtype, dtype, ()
    array.element_type = dtype
    array._physical_shape = tuple(core_array.shape)
    array._core_shape = array._physical_shape
    array._generation = runtime.state.generation
    array._core = core_array
    array.grad = None
    if layout is not None:
        array._qd_layout = layout
    return array


def with_element_type(array, element_type):
    """A view of the scalar ndarray `array` (the same memory) whose trailing
    axes hold the components of `element_type`, a vector or matrix type
    with that shape: how an imported buffer reaches a parameter of vector
    or matrix elements."""
    elem = tuple(element_type.shape)
    if array._element_shape or array._physical_shape[len(array._physical_shape) - len(elem):] \
            != elem or len(array._physical_shape) <= len(elem):
        raise QuadrantsTypeError(f"an array of shape {array.shape} does not hold "
                                 f"{element_type} elements along its trailing axes")
    view = (VectorNdarray if element_type.ndim == 1 else MatrixNdarray).__new__(
        VectorNdarray if element_type.ndim == 1 else MatrixNdarray)
    view.__dict__.update(array.__dict__)
    view.element_type, view.dtype, view._element_shape = element_type, array._scalar, elem
    view._physical_shape = array._physical_shape[:len(array._physical_shape) - len(elem)]
    view.grad = None
    return view


def _memory_order(source):
    """(source with its axes in memory order, the layout that restores its
    own order, or None) for a numpy array, torch tensor or CuPy array whose
    strides are a permutation of a dense row-major layout (a transposed
    array): it then imports without a copy as an ndarray with that layout.
    Anything else is returned as it is."""
    try:
        shape = tuple(int(n) for n in source.shape)
        if hasattr(source, "stride") and callable(source.stride):  # torch: elements
            strides, permute = tuple(source.stride()), source.permute
        else:  # numpy, CuPy: bytes
            strides, permute = tuple(source.strides), source.transpose
        # Each takes the new axis order as one tuple.
    except (AttributeError, TypeError):
        return source, None
    if len(shape) < 2:
        return source, None
    # Outermost memory level first; extent-1 axes keep their place.
    order = tuple(sorted(range(len(shape)), key=lambda a: (-strides[a], a)))
    if order == tuple(range(len(shape))):
        return source, None
    return permute(order), order


def _session_dlpack_device():
    """(device type, id) of this session's arrays; host memory where other
    libraries cannot address them (what Vulkan reports, exporting nothing)."""
    device_type = misc.session_dlpack_device_type()
    if device_type in (0, 1):
        return (1, 0)
    return (device_type, runtime.state.options.get("device_id", 0))


def check_layout(layout, ndim):
    """`layout` as a tuple of ints, a permutation of range(ndim); else
    ValueError saying what is wrong."""
    try:
        layout = tuple(int(a) for a in layout)
    except TypeError:
        raise ValueError(f"layout={layout!r} must be a tuple of axes") from None
    if len(layout) != ndim:
        raise ValueError(f"layout has {len(layout)} entries but shape has {ndim} dimensions; "
                         f"they must match")
    if sorted(layout) != list(range(ndim)):
        raise ValueError(f"layout={layout!r} is not a permutation of range({ndim})")
    return layout


def inverse_layout(layout):
    """inv with inv[layout[p]] = p: the memory level of each user axis."""
    inverse = [0] * len(layout)
    for level, axis in enumerate(layout):
        inverse[axis] = level
    return tuple(inverse)


def physical_shape(shape, layout):
    return tuple(shape) if layout is None else tuple(shape[a] for a in layout)


def canonical_shape(physical, layout):
    if layout is None:
        return tuple(physical)
    return tuple(physical[level] for level in inverse_layout(layout))


def _valid_shape(shape):
    """`shape` (an int or a sequence of ints) as a tuple of Python ints, each
    in [1, 2**31), as upstream requires; else QuadrantsRuntimeError."""
    extents = (shape,) if isinstance(shape, numbers.Integral) else shape
    try:
        extents = tuple(extents)
    except TypeError:
        extents = None
    if extents is None or not all(
            isinstance(e, numbers.Integral) and not isinstance(e, bool) and 1 <= e < 2**31
            for e in extents):
        raise QuadrantsRuntimeError(
            f"{shape!r} is not a valid shape for ndarray: each extent must be an int in "
            f"[1, 2**31)")
    return tuple(int(e) for e in extents)


def ndarray(dtype, shape, needs_grad=False):
    """qd.ndarray(dtype, shape, needs_grad=False), zero-initialized: a
    ScalarNdarray, VectorNdarray or MatrixNdarray (an Ndarray for structs)."""
    if python_backend.active():
        return python_backend.storage(dtype, shape)
    cls = ScalarNdarray
    if hasattr(dtype, "_flat_dtypes"):
        ndim = len(dtype.shape) if hasattr(dtype, "shape") else 0
        cls = {1: VectorNdarray, 2: MatrixNdarray}.get(ndim, Ndarray)
    return cls(dtype, shape, needs_grad)


def _struct_layout(stype):
    """(member, type, offset, count) of each member along the leaf axis."""
    out, offset = [], 0
    for name, t in stype.members.items():
        count = len(t._flat_dtypes()) if hasattr(t, "_flat_dtypes") else 1
        out.append((name, t, offset, count))
        offset += count
    return out


def _member_shape(t):
    return tuple(t.shape) if hasattr(t, "shape") and hasattr(t, "_flat_dtypes") else ()


def _struct_split(stype, flat, shape):
    """The struct array `flat` (shape + (leaves,)) as a dict of member arrays."""
    out = {}
    for name, t, offset, count in _struct_layout(stype):
        part = flat[..., offset:offset + count]
        if hasattr(t, "_flat_dtypes") and not hasattr(t, "shape"):
            out[name] = _struct_split(t, part, shape)
        else:
            out[name] = part.reshape(tuple(shape) + _member_shape(t)).copy()
    return out


def _struct_merge(stype, flat, arrays, shape):
    """Writes the member arrays of dict `arrays` into `flat`."""
    if not isinstance(arrays, dict):
        raise ArgumentValueError(f"from_numpy: an ndarray of struct {stype!r} takes a dict of "
                                 f"arrays, one per member")
    layout = {name: (t, offset, count) for name, t, offset, count in _struct_layout(stype)}
    for name, value in arrays.items():
        if name not in layout:
            raise ArgumentValueError(f"from_numpy: struct {stype!r} has no member '{name}'")
        t, offset, count = layout[name]
        if hasattr(t, "_flat_dtypes") and not hasattr(t, "shape"):
            part = flat[..., offset:offset + count]
            _struct_merge(t, part, value, shape)
            continue
        value = np.asarray(value)
        want = tuple(shape) + _member_shape(t)
        if value.shape != want:
            raise ArgumentValueError(f"from_numpy: member '{name}' needs an array of shape "
                                     f"{want}, got {value.shape}")
        flat[..., offset:offset + count] = value.reshape(tuple(shape) + (count,))


matrix.storage.register(ndarray=ndarray)
