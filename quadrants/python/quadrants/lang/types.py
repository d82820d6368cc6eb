"""Data types and parameter annotations."""
import numbers
import operator

import numpy as np

from quadrants.lang import session
from quadrants.lang.exception import QuadrantsIndexError, QuadrantsTypeError
from quadrants.lang.hooks import Hooks

# qd.f32(x) casts with quadrants.lang.ops.cast; ops builds on these types.
casting = Hooks("quadrants.lang.ops", "cast")


class Named:
    """A value identified by its name (types, archs): equal names of the same
    class are equal."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        return type(other) is type(self) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class DataType(Named):
    """A scalar element type such as qd.f32."""

    __slots__ = ()

    # One object per type: copies are the type itself, so identity checks
    # (`dtype is qd.f32`) hold for options that were copied.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def is_float(self):
        return self.name[0] == "f"

    @property
    def is_integral(self):
        return not self.is_float

    @property
    def is_signed(self):
        return self.name[0] in "if"

    @property
    def bits(self):
        return 1 if self.name == "u1" else int(self.name[1:])

    def __call__(self, value):
        """qd.f32(x) inside a kernel casts; outside it converts a number."""
        return casting.cast(value, self)


u1 = DataType("u1")
i8, i16, i32, i64 = (DataType(n) for n in ("i8", "i16", "i32", "i64"))
u8, u16, u32, u64 = (DataType(n) for n in ("u8", "u16", "u32", "u64"))
f16, f32, f64 = (DataType(n) for n in ("f16", "f32", "f64"))

ALL = [u1, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64]
_BY_NAME = {t.name: t for t in ALL}

_NUMPY = {
    "u1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


def by_name(name):
    return _BY_NAME[name]


def to_numpy_dtype(dtype):
    return np.dtype(_NUMPY[dtype.name])


_FROM_NUMPY = {np.dtype(t): _BY_NAME[name] for name, t in _NUMPY.items()}


def from_numpy_dtype(np_dtype):
    found = _FROM_NUMPY.get(np_dtype)  # the launch path: a dict hit
    if found is not None:
        return found
    try:
        found = _FROM_NUMPY.get(np.dtype(np_dtype))
    except TypeError:
        found = None
    if found is None:
        raise QuadrantsTypeError(f"numpy dtype {np_dtype} has no Quadrants equivalent")
    return found


def normalize(dtype, what="dtype"):
    """Accepts qd types, numpy dtypes and Python int/float/bool."""
    if isinstance(dtype, DataType):
        return dtype
    if dtype is float:
        return session.option("default_fp", f32)
    if dtype is int:
        return session.option("default_ip", i32)
    if dtype is bool:
        return u1
    try:
        return from_numpy_dtype(dtype)
    except (TypeError, QuadrantsTypeError):
        raise QuadrantsTypeError(f"{what} must be a Quadrants type such as qd.f32, "
                                 f"got {dtype!r}") from None


def promote(a, b):
    """The binary-arithmetic result type (same rule as the C++ type checker)."""
    if a == b:
        return a
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return b if a.is_signed else a


class NdarrayType:
    """Annotation of an ndarray parameter: qd.types.ndarray(dtype, ndim,
    needs_grad=None).

    A missing dtype or ndim is taken from each call's argument (the kernel
    is compiled once per distinct combination). needs_grad=False makes the
    parameter a constant to reverse mode: kernel.grad accumulates nothing
    into the argument's .grad. None or True (the default) differentiates it
    when the argument has a .grad. boundary="clamp" clamps every index into
    the array (an out-of-range read gives the nearest element); "unsafe"
    (the default) leaves indices as they are.
    """

    def __init__(self, dtype=None, ndim=None, needs_grad=None, boundary="unsafe"):
        # A vector/matrix dtype (qd.math.vec3) stays a type: each element is
        # stored as its components along extra trailing axes.
        self.dtype = None if dtype is None else \
            dtype if hasattr(dtype, "_flat_dtypes") else normalize(dtype)
        if ndim is not None and (not isinstance(ndim, int) or not 0 <= ndim <= 12):
            raise QuadrantsTypeError(f"ndarray ndim must be an int in [0, 12], got {ndim!r}")
        self.ndim = ndim
        if needs_grad is not None and not isinstance(needs_grad, bool):
            raise QuadrantsTypeError(f"qd.types.ndarray(needs_grad=...) must be a bool or "
                                     f"None, got {needs_grad!r}")
        self.needs_grad = needs_grad
        if boundary not in ("unsafe", "clamp"):
            # Upstream's wording.
            raise ValueError(f"Invalid boundary argument: {boundary}. Valid options: "
                             f"'unsafe', 'clamp'")
        self.boundary = boundary
        # vector()/matrix() without sizes: elements of any size (read per launch).
        self.open_elements = getattr(self.dtype, "is_open", False)

    def __repr__(self):
        return f"ndarray(dtype={self.dtype}, ndim={self.ndim})"


class Template:
    """Annotation of a compile-time parameter (fields, Python values)."""

    def __repr__(self):
        return "template()"


def host_index(key, ndim, what):
    """x[key] from the host as a list of ints: None for 0-D, a scalar or a
    tuple; a count or type mismatch is an error naming `what`."""
    if key is None:
        key = ()
    elif not isinstance(key, tuple):
        key = (key,)
    for v in key:
        if not isinstance(v, numbers.Integral) and not hasattr(v, "__index__"):
            # The second sentence is upstream's wording.
            raise QuadrantsTypeError(f"{what}: Detected illegal element of type: "
                                     f"{type(v).__name__}. Please be aware that slicing a "
                                     f"qd.field is not supported so far. Index it with ints, "
                                     f"or use to_numpy()")
    if len(key) != ndim:
        # "2d ndarray indexed with 1d indices" is upstream's wording.
        raise QuadrantsIndexError(f"{what} has {ndim} dimensions, indexed with {len(key)} "
                                  f"indices ({ndim}d {what.split()[0]} indexed with "
                                  f"{len(key)}d indices)")
    return [operator.index(v) for v in key]


class _NDArrayAnnotation(NdarrayType):
    """qd.types.NDArray: as an annotation, an ndarray of any dtype and ndim;
    subscripted, NDArray[dtype, ndim] (or NDArray[dtype]) fixes them, like
    qd.types.ndarray(dtype, ndim)."""

    def __init__(self):
        super().__init__()

    def __getitem__(self, params):
        if not isinstance(params, tuple):
            params = (params,)
        if not 1 <= len(params) <= 2:
            raise QuadrantsTypeError(f"qd.types.NDArray[dtype, ndim] takes a dtype and an "
                                     f"optional ndim, got {len(params)} parameters")
        return NdarrayType(*params)

    def __repr__(self):
        return "NDArray"


NDArray = _NDArrayAnnotation()


class _NdarrayAnnotationFactory(_NDArrayAnnotation):
    """qd.types.ndarray: called, qd.types.ndarray(dtype=None, ndim=None,
    needs_grad=None) (see NdarrayType); subscripted, ndarray[dtype, ndim];
    bare, an ndarray of any dtype and ndim (as qd.types.NDArray)."""

    def __call__(self, dtype=None, ndim=None, needs_grad=None, boundary="unsafe"):
        return NdarrayType(dtype, ndim, needs_grad, boundary)

    def __repr__(self):
        return "ndarray"


ndarray = _NdarrayAnnotationFactory()


def template():
    """qd.template(): annotates a kernel parameter passed at compile time
    (a field, an SNode, a Python value or object); each distinct value gets
    its own compiled kernel."""
    return Template()


class RefType:
    """Annotation of a qd.real_func parameter passed by reference: the
    caller's local variable, which the function reads and writes."""

    def __init__(self, dtype):
        self._dtype = dtype
        self.tp = dtype  # upstream's attribute name

    @property
    def dtype(self):
        return normalize(self._dtype)  # float/int follow qd.init's defaults

    def __repr__(self):
        return f"ref({self._dtype})"


def sparse_matrix_builder():
    """qd.types.sparse_matrix_builder(): the annotation of a kernel parameter
    taking a qd.linalg.SparseMatrixBuilder, compiled in like a template."""
    return template()


def ref(dtype):
    """qd.ref(dtype): see RefType."""
    return RefType(dtype)
