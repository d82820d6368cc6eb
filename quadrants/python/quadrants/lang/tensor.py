"""qd.tensor: one allocation API over fields and ndarrays.

qd.tensor(dtype, shape, backend=qd.Backend.NDARRAY) allocates a qd.ndarray
or a qd.field and returns it wrapped in a qd.Tensor, which offers the same
host surface on both (shape, dtype, layout, indexing, to_numpy/from_numpy,
fill, copy_from, grad). qd.Vector.tensor / qd.Matrix.tensor do the same for
vector and matrix elements (VectorTensor / MatrixTensor).

qd.Tensor is also a kernel parameter annotation: the parameter takes a
Tensor, a bare field or ndarray, or None. A field is bound like a
qd.template() argument (the kernel is compiled per field); an ndarray is
passed like a qd.types.ndarray() argument (compiled per dtype and number of
dimensions). Kernel code sees the bare field or ndarray, never the wrapper.
"""
import functools
import numbers
from enum import IntEnum

from quadrants.lang import matrix, types
from quadrants.lang import field as field_module
from quadrants.lang import ndarray as ndarray_module
from quadrants.lang.composite_field import MatrixField
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.matrix import Matrix, Vector
from quadrants.lang.struct import StructField


class Backend(IntEnum):
    """Where a qd.tensor lives: FIELD (a qd.field, compiled into kernels per
    field) or NDARRAY (a qd.ndarray, a kernel argument compiled once per
    dtype and number of dimensions)."""

    FIELD = 0
    NDARRAY = 1


_FIELD_TYPES = (field_module.Field, MatrixField, StructField)
_IMPL_TYPES = _FIELD_TYPES + (ndarray_module.Ndarray,)


def _is_field(impl):
    return isinstance(impl, _FIELD_TYPES)


class Tensor:
    """A field or ndarray behind one surface; see the module docstring.

    qd.Tensor(impl) wraps a bare field or ndarray (qd.wrap picks the vector
    or matrix subclass); t._unwrap() gives the impl back.
    """

    def __init__(self, impl):
        if isinstance(impl, Tensor):
            raise TypeError("qd.Tensor(impl) requires a bare field or ndarray, got a "
                            "qd.Tensor; use the tensor itself (or t._unwrap() for its impl)")
        if not isinstance(impl, _IMPL_TYPES):
            raise TypeError(f"qd.Tensor(impl) requires a field or an ndarray, got "
                            f"{type(impl).__name__}")
        self._impl = impl

    def _unwrap(self):
        return self._impl

    def _backend(self):
        return Backend.FIELD if _is_field(self._impl) else Backend.NDARRAY

    def __repr__(self):
        layout = "" if self.layout is None else f", layout={self.layout!r}"
        return (f"Tensor(shape={self.shape!r}, dtype={self.dtype!r}, "
                f"backend={self._backend().name}{layout})")

    # ---- description ---------------------------------------------------------
    @property
    def shape(self):
        return tuple(self._impl.shape)

    @property
    def dtype(self):
        return self._impl.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def layout(self):
        """The axes in memory order, outermost first, or None for the
        default order."""
        return getattr(self._impl, "layout", None)

    # ---- host access ---------------------------------------------------------
    def __getitem__(self, key):
        return self._impl[key]

    def __setitem__(self, key, value):
        self._impl[key] = value

    def to_numpy(self, dtype=None, *, copy=True):
        if dtype is None and copy is True:
            return self._impl.to_numpy()  # struct fields take no options
        return self._impl.to_numpy(dtype=dtype, copy=copy)

    def from_numpy(self, array):
        self._impl.from_numpy(array)

    def to_torch(self, device=None, *, copy=True):
        return self._interop("to_torch")(device=device, copy=copy)

    def from_torch(self, tensor):
        self._interop("from_torch")(tensor)

    def to_dlpack(self, versioned=False):
        return self._interop("to_dlpack")(versioned=versioned)

    def _interop(self, name):
        method = getattr(self._impl, name, None)
        if method is None:
            raise QuadrantsTypeError(f"{name}() is not available for a "
                                     f"{type(self._impl).__name__} here")
        return method

    def fill(self, value):
        self._impl.fill(value)

    def copy_from(self, other):
        """Copies the elements of `other` (a Tensor or a bare impl of the same
        backend and shape) here."""
        other = unwrap(other)
        if isinstance(other, _IMPL_TYPES) and _is_field(other) != _is_field(self._impl):
            raise QuadrantsTypeError(
                f"copy_from: cannot copy between backends (a {self._backend().name} "
                f"tensor from a {type(other).__name__}); copy through numpy: "
                f"dst.from_numpy(src.to_numpy())")
        self._impl.copy_from(other)

    # ---- gradients -------------------------------------------------------------
    @functools.cached_property
    def grad(self):
        """The adjoint as a Tensor (the same object at every access), or None
        when the impl has none."""
        grad = getattr(self._impl, "grad", None)
        return None if grad is None else wrap(grad)

    def has_grad(self):
        return self._impl.has_grad()

    def has_dual(self):
        return self._impl.has_dual()

    # ---- pickling --------------------------------------------------------------
    def __reduce__(self):
        """Pickles the contents with the backend, dtype, shape and layout; the
        copy is allocated in the session that unpickles it."""
        if isinstance(self._impl, StructField) or getattr(self._impl, "_struct", None):
            raise QuadrantsTypeError("a qd.Tensor of structs cannot be pickled")
        element = tuple(getattr(self, "element_shape", ()))
        return (_rebuild, (int(self._backend()), self.dtype.name, self.shape, element,
                           self.layout, self._impl.to_numpy()))


class _CompositeTensor(Tensor):
    """A Tensor of vectors or matrices: dtype is the scalar type of the
    components on both backends."""

    _elem_ndim = None
    _kind = None

    def __init__(self, impl):
        super().__init__(impl)
        if _element_ndim(impl) != self._elem_ndim:
            raise TypeError(f"{type(self).__name__} takes a field or ndarray of "
                            f"{self._kind}, got {impl!r}")

    @property
    def dtype(self):
        dtype = self._impl.dtype
        return getattr(dtype, "dtype", dtype)  # an ndarray's is the element type

    @property
    def element_shape(self):
        return tuple(self._impl.element_shape)

    @property
    def n(self):
        return self.element_shape[0]


class VectorTensor(_CompositeTensor):
    """A Tensor of vectors (qd.Vector.tensor)."""

    _elem_ndim, _kind = 1, "vectors"


class MatrixTensor(_CompositeTensor):
    """A Tensor of matrices (qd.Matrix.tensor)."""

    _elem_ndim, _kind = 2, "matrices"

    @property
    def m(self):
        return self.element_shape[1]


def _element_ndim(impl):
    if isinstance(impl, MatrixField):
        return impl.ndim_element
    if isinstance(impl, ndarray_module.Ndarray) and impl._struct is None:
        return len(impl.element_shape)
    return 0


def wrap(impl):
    """qd.wrap(impl): a bare field or ndarray as a Tensor, VectorTensor or
    MatrixTensor (a Tensor is returned as it is)."""
    if isinstance(impl, Tensor):
        return impl
    cls = {1: VectorTensor, 2: MatrixTensor}.get(_element_ndim(impl), Tensor) \
        if isinstance(impl, _IMPL_TYPES) else Tensor
    return cls(impl)


def unwrap(value):
    """The impl of a Tensor; any other value as it is."""
    return value._impl if isinstance(value, Tensor) else value


def _rebuild(backend, scalar, shape, element, layout, data):
    dtype = types.by_name(scalar)
    backend = Backend(backend)
    if len(element) == 1:
        t = vector_tensor(element[0], dtype, shape, backend=backend)
    elif len(element) == 2:
        t = matrix_tensor(element[0], element[1], dtype, shape, backend=backend)
    else:
        t = tensor(dtype, shape, backend=backend, layout=layout)
    t.from_numpy(data)
    return t


# ---- factories ---------------------------------------------------------------------

def _backend(value):
    if isinstance(value, Backend):
        return value
    try:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(value)
        return Backend(value)
    except ValueError:
        valid = ", ".join(f"qd.Backend.{b.name}" for b in Backend)
        raise ValueError(f"backend={value!r} is not a qd.Backend; use one of {valid}") \
            from None


def _check_kwargs(kwargs, factory, accepted):
    if "order" in kwargs:
        if "layout" in accepted:
            raise TypeError(f"{factory}() does not accept order=; pass layout=(...) with "
                            f"the memory order of the axes instead")
        raise TypeError(f"{factory}() does not accept order= (nor layout=); use "
                        f"qd.Vector.field / qd.Matrix.field with order= for another "
                        f"memory order")
    extra = sorted(set(kwargs) - accepted)
    if extra:
        names = ", ".join(sorted(accepted | {"dtype", "shape", "backend"}))
        raise TypeError(f"{factory}() got unexpected keyword argument(s) {extra}; it "
                        f"takes {names}")


def _shape(shape):
    return (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)


def _layout_order(layout):
    """A non-identity layout as qd.field's order= string."""
    return "".join("ijklmnopqrst"[axis] for axis in layout)


def tensor(dtype, shape, *, backend=Backend.NDARRAY, layout=None, **kwargs):
    """qd.tensor(dtype, shape, backend=qd.Backend.NDARRAY, layout=None,
    needs_grad=False): a new zero-filled Tensor.

    layout lists the axes from the outermost memory level in (a permutation
    of range(len(shape))); shape and indices stay as given, on either
    backend.
    """
    if isinstance(dtype, _IMPL_TYPES + (Tensor,)):
        raise TypeError(f"qd.tensor() allocates a new tensor; wrap an existing "
                        f"{type(dtype).__name__} with qd.wrap(impl)")
    if layout is not None and hasattr(dtype, "_flat_dtypes"):
        raise TypeError("qd.tensor(): layout= is not supported with compound dtypes "
                        "(vector/matrix/struct elements); use qd.Vector.tensor / "
                        "qd.Matrix.tensor without layout=")
    _check_kwargs(kwargs, "qd.tensor", {"needs_grad", "layout"})
    backend = _backend(backend)
    shape = _shape(shape)
    if layout is not None:
        layout = ndarray_module.check_layout(layout, len(shape))
        if layout == tuple(range(len(shape))):
            layout = None
    if backend is Backend.FIELD:
        order = None if layout is None else _layout_order(layout)
        return wrap(field_module.field(dtype, shape, order=order, **kwargs))
    if layout is None:
        return wrap(ndarray_module.ndarray(dtype, shape, **kwargs))
    return wrap(ndarray_module.ScalarNdarray(dtype, shape, layout=layout, **kwargs))


def vector_tensor(n, dtype, shape, *, backend=Backend.NDARRAY, **kwargs):
    """qd.Vector.tensor(n, dtype, shape, backend=..., needs_grad=False)."""
    _check_kwargs(kwargs, "qd.Vector.tensor", {"needs_grad"})
    if _backend(backend) is Backend.FIELD:
        return VectorTensor(Vector.field(n, dtype, shape, **kwargs))
    return VectorTensor(Vector.ndarray(n, dtype, shape, **kwargs))


def matrix_tensor(n, m, dtype, shape, *, backend=Backend.NDARRAY, **kwargs):
    """qd.Matrix.tensor(n, m, dtype, shape, backend=..., needs_grad=False)."""
    _check_kwargs(kwargs, "qd.Matrix.tensor", {"needs_grad"})
    if _backend(backend) is Backend.FIELD:
        return MatrixTensor(Matrix.field(n, m, dtype, shape, **kwargs))
    return MatrixTensor(Matrix.ndarray(n, m, dtype, shape, **kwargs))


# ---- kernel parameters annotated qd.Tensor -------------------------------------------

def is_annotation(annotation):
    return annotation is Tensor


def kernel_key(kernel_name, param, value):
    """The compilation key of a (bare) value passed for a qd.Tensor
    parameter: a field by identity (it is compiled in), an ndarray by dtype
    and dimensions, None as itself."""
    if value is None:
        return ("tensor", None)
    if _is_field(value):
        return ("tensor-field", id(value))
    if isinstance(value, ndarray_module.Ndarray):
        return ("tensor-ndarray", value.element_type, value.ndim, value._qd_layout)
    raise QuadrantsTypeError(f"kernel '{kernel_name}' argument '{param}' is annotated "
                             f"qd.Tensor and takes a qd.Tensor, a field, an ndarray or "
                             f"None, got {type(value).__name__}")


matrix.storage.register(matrix_tensor=matrix_tensor, vector_tensor=vector_tensor)
