"""Fields of vectors, matrices and structs.

A MatrixField is n*m scalar fields (its components, row-major) placed side
by side under one dense SNode; a StructField is one field (scalar, matrix
or struct) per member, placed together. Kernels index them into a Matrix or
Struct of GlobalRefs, so every access and every gradient is per component.
Host access gathers and scatters the components as numpy arrays of shape
`shape + (n,)` or `shape + (n, m)`.
"""
import numpy as np

from quadrants.lang import (context, matrix, python_backend, runtime, sparse, torch_interop,
                            types)
from quadrants.lang import field as field_module
from quadrants.lang.exception import (ArgumentValueError, QuadrantsGradientError,
                                      QuadrantsIndexError, QuadrantsTypeError)
from quadrants.lang.expr import GlobalRef
from quadrants.lang.field import Layout


class HostVector(np.ndarray):
    """A host copy of one vector/matrix element: a numpy array that also has
    the .x/.y/.z/.w components and to_numpy() of upstream's host values.
    Writing a component (v[0] = 1, v.x = 1) also writes the element it was
    read from, as upstream's host element proxies do."""

    _qd_store = None  # writes the whole element back, when read from one

    def to_numpy(self):
        return np.asarray(self).copy()

    def __bool__(self):
        # Whether every component is true: `assert v == [1, 2]` checks each
        # one, as it does on upstream's host values.
        return bool(np.asarray(self).all())

    def to_list(self):
        return np.asarray(self).tolist()

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if self._qd_store is not None:
            self._qd_store(np.asarray(self))

    def _comp(self, k):
        return np.asarray(self)[k]

    def _set_comp(self, k, value):
        self[k] = value

    x = property(lambda self: self._comp(0), lambda self, v: self._set_comp(0, v))
    y = property(lambda self: self._comp(1), lambda self, v: self._set_comp(1, v))
    z = property(lambda self: self._comp(2), lambda self, v: self._set_comp(2, v))
    w = property(lambda self: self._comp(3), lambda self, v: self._set_comp(3, v))

    @property
    def n(self):
        return self.shape[0]

    @property
    def m(self):
        return self.shape[1] if self.ndim == 2 else 1

    # The math of upstream's host vectors and matrices, on the copy.
    def norm_sqr(self):
        return np.asarray(self, dtype=np.float64).__pow__(2).sum().item()

    def norm(self, eps=0):
        return float(np.sqrt(self.norm_sqr() + eps))

    def norm_inv(self, eps=0):
        return 1.0 / self.norm(eps)

    def normalized(self, eps=0):
        return host_value(np.asarray(self) / self.norm(eps))

    def cross(self, other):
        result = np.cross(np.asarray(self), np.asarray(other))
        return result.item() if np.ndim(result) == 0 else host_value(result)

    def outer_product(self, other):
        return host_value(np.outer(np.asarray(self), np.asarray(other)))

    def determinant(self):
        return float(np.linalg.det(np.asarray(self, dtype=np.float64)))

    def inverse(self):
        return host_value(np.linalg.inv(np.asarray(self)))


def host_value(array, store=None):
    out = np.asarray(array).view(HostVector)
    out._qd_store = store
    return out


def _check_layout(layout, what):
    if layout not in (None, Layout.AOS, Layout.SOA):
        raise QuadrantsTypeError(f"{what}: layout must be qd.Layout.AOS or qd.Layout.SOA, "
                                 f"got {layout!r}")


def element_array(value, element_shape, what):
    """A host value for one vector/matrix element as a numpy array of
    element_shape (a scalar fills every component)."""
    value = np.asarray(value.to_list() if hasattr(value, "to_list") else value)
    if value.shape == ():
        value = np.full(element_shape, value)
    if value.shape != tuple(element_shape):
        raise ArgumentValueError(f"{what} has elements of shape {tuple(element_shape)}; "
                                 f"the value has shape {value.shape}")
    return value


def _place_group(fields, shape, order=None, offset=None, layout=None):
    """Places `fields` side by side in one new dense node of `shape` (one
    each with the SOA layout), or at the root when 0-D."""
    groups = [[f] for f in fields] if layout == Layout.SOA else [fields]
    for group in groups:
        field_module.place_together(group, shape, order, offset)


class MatrixField(sparse.ListMethods):
    """qd.Vector.field / qd.Matrix.field: a field whose elements are
    vectors or matrices."""

    __iter__ = field_module.no_host_iteration

    def __init__(self, comps, n, m, ndim, name):
        self._comps = comps
        self.n, self.m, self.ndim_element = n, m, ndim
        self.name = name
        self._grad = self._dual = None

    # ---- structure ---------------------------------------------------------
    @property
    def dtype(self):
        return self._comps[0].dtype

    @property
    def element_type(self):
        return matrix.MatrixType(self.n, self.m, self.ndim_element, self.dtype)

    @property
    def element_shape(self):
        return (self.n,) if self.ndim_element == 1 else (self.n, self.m)

    def get_shape(self):
        return self.shape

    @property
    def shape(self):
        return self._comps[0].shape

    @property
    def ndim(self):
        return len(self.shape)

    def _leaf_fields(self):
        return list(self._comps)

    def get_scalar_field(self, *indices):
        """The scalar field of one member: get_scalar_field(i) of a vector
        field, get_scalar_field(i, j) of a matrix field. Members may be
        placed one by one (qd.root.dense(qd.i, n).place(v.get_scalar_field(0)))."""
        want = 1 if self.ndim_element == 1 else 2
        if len(indices) != want or not all(isinstance(k, int) for k in indices):
            raise QuadrantsTypeError(
                f"get_scalar_field of '{self.name}' takes {want} int index(es) "
                f"for its {self.element_shape} elements, got {indices}")
        i, j = indices[0], indices[1] if want == 2 else 0
        if not (0 <= i < self.n and 0 <= j < (self.m if want == 2 else 1)):
            raise QuadrantsIndexError(
                f"get_scalar_field{indices} is outside the {self.element_shape} "
                f"elements of '{self.name}'")
        return self._comps[i * self.m + j]

    def _companion(self, role):
        comps = [getattr(c, role) for c in self._comps]
        if comps[0] is None:
            return None
        return MatrixField(comps, self.n, self.m, self.ndim_element, f"{self.name}.{role}")

    @property
    def grad(self):
        if self._grad is None:
            self._grad = self._companion("grad")
        return self._grad

    @property
    def dual(self):
        if self._dual is None:
            self._dual = self._companion("dual")
        return self._dual

    def has_grad(self):
        return self._comps[0].has_grad()

    def has_dual(self):
        return self._comps[0].has_dual()

    @property
    def placed(self):
        return self._comps[0].placed

    def __repr__(self):
        return f"<qd.{'Vector' if self.ndim_element == 1 else 'Matrix'}.field {self.name}: " \
               f"{self.dtype}{list(self.element_shape)}{list(self.shape)}>"

    # ---- kernel access -------------------------------------------------------
    def _element(self, make_ptr):
        """The element at the indices make_ptr applies (a Matrix of refs)."""
        refs = [GlobalRef(make_ptr(c), c.dtype, c.place_id()) for c in self._comps]
        return matrix.Matrix._make(refs, self.n, self.m, self.ndim_element)

    @property
    def offset(self):
        """The index of the first element on each axis."""
        return self._comps[0].offset

    @property
    def layout(self):
        """The axes in memory order, outermost first, for a field created
        with order=; None for the default order."""
        return self._comps[0].layout

    # ---- host access ---------------------------------------------------------
    def _check_array(self, array, what):
        want = tuple(self.shape) + self.element_shape
        if tuple(array.shape) != want:
            raise ArgumentValueError(f"{what}: field '{self.name}' of shape "
                                     f"{tuple(self.shape)} with {self._describe()} elements "
                                     f"needs an array of shape {want}, got "
                                     f"{tuple(array.shape)}")

    def _describe(self):
        return f"vector({self.n})" if self.ndim_element == 1 else \
            f"matrix({self.n}, {self.m})"

    def __getitem__(self, key):
        values = [c[key] for c in self._comps]
        return host_value(np.array(values, dtype=types.to_numpy_dtype(self.dtype))
                          .reshape(self.element_shape),
                          store=lambda value: self.__setitem__(key, value))

    def __setitem__(self, key, value):
        value = element_array(value, self.element_shape, f"field '{self.name}'")
        for c, v in zip(self._comps, value.reshape(-1).tolist()):
            c[key] = v

    def to_numpy(self, dtype=None, keep_dims=False, *, copy=True):
        """The field as a numpy array of shape + element shape (a vector's
        element shape is (n, 1) with keep_dims): a new one (copy=True), a
        view sharing its memory (copy=False: on cpu, for a field whose
        components are stored densely together, else ValueError), or that
        view where there is one and a copy otherwise (copy=None)."""
        shape = tuple(self.shape) + self._numpy_element_shape(keep_dims)

        def view():
            array, why = self._view(dtype)
            return (None, why) if array is None else (array.reshape(shape), None)

        def copied():
            if self._comps[0]._sparse():
                parts = [c.to_numpy() for c in self._comps]
                out = np.stack(parts, axis=-1).reshape(shape)
            else:
                # Every component in one pass, interleaved as numpy wants.
                prog = runtime.program()
                prog.sync()
                out = prog.field_to_numpy(self._places()).reshape(shape)
            return out if dtype is None else out.astype(dtype)
        return field_module.host_copy_or_view(copy, f"field '{self.name}'", view, copied)

    def _numpy_element_shape(self, keep_dims):
        return (self.n, 1) if keep_dims and self.ndim_element == 1 else self.element_shape

    def _view(self, numpy_dtype=None, device=False, scalar=False):
        return field_module.view_places([c.place_id() for c in self._comps], self.dtype,
                                        self.element_shape, numpy_dtype, device, scalar)

    def to_dlpack(self, versioned=False):
        """A DLPack capsule viewing the field's memory (host memory on cpu,
        device memory on cuda), shaped as to_numpy() gives it (element axes
        last); the capsule keeps the memory alive."""
        return field_module.export_dlpack(f"field '{self.name}'", self._view, self.dtype,
                                          versioned)

    def from_numpy(self, array):
        array = np.asarray(array)
        self._check_array(array, "from_numpy")
        flat = array.reshape(tuple(self.shape) + (self.n * self.m,))
        if self._comps[0]._sparse():
            for k, c in enumerate(self._comps):
                c.from_numpy(flat[..., k].copy())
            return
        prog = runtime.program()
        prog.sync()
        # One place (a 1x1 matrix) takes no component axis.
        components = (len(self._comps),) if len(self._comps) > 1 else ()
        prog.field_from_numpy(self._places(), np.ascontiguousarray(flat).reshape(
            self._comps[0]._full_shape() + components))

    def _places(self):
        return [c.place_id() for c in self._comps]


    def to_torch(self, device=None, keep_dims=False, *, copy=True):
        """What to_numpy(keep_dims=...) gives, as a torch tensor: a copy on
        `device` (default: the CPU) with copy=True; with copy=False a
        tensor sharing the field's memory (as to_numpy's view) or
        ValueError; with copy=None that tensor where there is one, else a
        copy."""
        shape = tuple(self.shape) + self._numpy_element_shape(keep_dims)

        def view():
            array, why = self._view(device=True)
            return (None, why) if array is None else (array.reshape(shape), None)
        tensor = torch_interop.to_torch(self, device, copy, f"field '{self.name}'",
                                        torch_interop.numpy_view_tensor(view))
        return tensor.reshape(shape)

    def from_torch(self, tensor):
        """from_numpy() of the tensor's values (on any device)."""
        torch_interop.from_torch(self, tensor)
    def copy_from(self, other):
        """Copies every element of `other` (a field of the same shape and
        element shape) here."""
        field_module.check_copy_source(self, other, MatrixField)
        if other.element_shape != self.element_shape:
            raise ArgumentValueError(f"copy_from: field '{self.name}' has "
                                     f"{self._describe()} elements, the source "
                                     f"{other._describe()} ones")
        self.from_numpy(other.to_numpy())

    def fill(self, value):
        """Sets every element to value (a scalar fills every component);
        in kernel code, as a loop of the kernel."""
        if context.current() is not None:
            self._fill_in_kernel(value)
            return
        value = np.asarray(value.to_list() if hasattr(value, "to_list") else value)
        if value.shape == () and not self._comps[0]._sparse():
            prog = runtime.program()
            prog.sync()
            prog.field_fill(self._places(), value.item())
            return
        if value.shape == ():
            for c in self._comps:
                c.fill(value.item())
            return
        if value.shape != self.element_shape:
            raise ArgumentValueError(f"fill: field '{self.name}' has {self._describe()} "
                                     f"elements; the value has shape {value.shape}")
        for c, v in zip(self._comps, value.reshape(-1).tolist()):
            c.fill(v)

    fill._qd_intrinsic = True  # called as it is from kernel code, not inlined

    def _fill_in_kernel(self, value):
        value = context.load(value)
        if isinstance(value, matrix.Matrix):
            if (value.n, value.m) != (self.n, self.m):
                raise QuadrantsTypeError(f"fill: field '{self.name}' has {self._describe()} "
                                         f"elements; the value is a {value._describe()}")
            values = [context.load(e) for e in value.entries]
        else:
            values = [value] * len(self._comps)
        field_module.fill_in_kernel(self._comps, values)


def _check_flags(dtype, needs_grad, needs_dual, what):
    for flag, value in (("needs_grad", needs_grad), ("needs_dual", needs_dual)):
        if not isinstance(value, bool):
            raise QuadrantsTypeError(f"{flag} must be a bool, got {value!r}")
    if (needs_grad or needs_dual) and not dtype.is_float:
        flag = "needs_grad" if needs_grad else "needs_dual"
        raise QuadrantsGradientError(f"{what}: {dtype} is not supported for field with "
                                     f"`needs_grad=True` or `needs_dual=True`. {dtype} is not "
                                     f"differentiable, so it cannot have {flag}=True; use a "
                                     f"floating-point dtype")


def _new_name(name):
    if name is not None and not isinstance(name, str):
        raise QuadrantsTypeError(f"field name must be a str, got {name!r}")
    runtime.state.unnamed_fields += not name
    return name or f"field{runtime.state.unnamed_fields}"


def _place_new(leaves, shape, order=None, offset=None, layout=None):
    """Places freshly made leaf fields and the companions they asked for
    (order and offset as field_module.layout_options gives them)."""
    if shape is None:
        return
    _place_group(leaves, shape, order, offset, layout)
    for role in ("grad", "dual"):
        wanted = [getattr(f, role) for f in leaves
                  if getattr(f, f"_needs_{role}") and not getattr(f, role).placed]
        if wanted:
            _place_group(wanted, shape, order, offset, layout)


def _matrix_components(n, m, dtype, shape, needs_grad, needs_dual, name):
    return [field_module.Field(dtype, shape, f"{name}[{k}]", needs_grad=needs_grad,
                               needs_dual=needs_dual) for k in range(n * m)]


def matrix_field(n, m, ndim, dtype, shape, needs_grad, needs_dual, name, order=None,
                 offset=None, layout=None):
    if python_backend.active():
        return python_backend.storage(matrix.MatrixType(n, m, ndim, types.normalize(dtype)),
                                      shape)
    runtime.program()
    what = "qd.Vector.field()" if ndim == 1 else "qd.Matrix.field()"
    dtype = types.normalize(dtype)
    shape = field_module._shape_tuple(shape)  # pylint: disable=protected-access
    order, offset = field_module.layout_options(shape, order, offset, what)
    _check_layout(layout, what)
    _check_flags(dtype, needs_grad, needs_dual, what)
    name = _new_name(name)
    comps = _matrix_components(n, m, dtype, shape, needs_grad, needs_dual, name)
    f = MatrixField(comps, n, m, ndim, name)
    _place_new(comps, shape, order, offset, layout)
    return f


matrix.storage.register(matrix_field=matrix_field)
