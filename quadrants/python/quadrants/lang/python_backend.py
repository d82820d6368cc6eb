"""qd.init(arch=qd.python): kernels and qd.funcs run as the plain Python
functions they are, so a debugger steps through them; fields and ndarrays
are PyTensors (torch tensors). Nothing is compiled and nothing runs in
parallel: loops run in order and the atomics are ordinary updates.

The language's entry points that behave differently in this mode (storage
constructors, qd.Vector / qd.Matrix, the atomics, qd.cast, qd.grouped,
qd.loop_config, qd.sync, kernel and qd.func calls) ask `active()` and hand
the work to this module.
"""
import numbers
import sys

import numpy as np

from quadrants.lang import _py_tensor, session, types, util
from quadrants.lang.exception import QuadrantsTypeError


def active():
    """Whether the session runs kernels as plain Python."""
    return session.state.interpreted


def is_tensor(value):
    """Whether `value` is a torch tensor (torch is imported once a session
    of this mode starts)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def torch_dtype(dtype, what="dtype"):
    """The torch dtype of a Quadrants scalar type."""
    return util.to_pytorch_type(types.normalize(dtype, what))


def _shape(shape):
    if shape is None:
        return ()
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(e) for e in shape)


def storage(dtype, shape):
    """A zeroed field or ndarray of element type `dtype` (a scalar type, a
    vector or matrix type, or a struct type) and batch shape `shape`."""
    shape = _shape(shape)
    if hasattr(dtype, "members"):
        return StructStorage(dtype, shape)
    if hasattr(dtype, "_flat_dtypes") and hasattr(dtype, "shape"):
        element, scalar = tuple(dtype.shape), dtype.dtype
    else:
        element, scalar = (), dtype
    return _py_tensor.create_tensor(shape + element, torch_dtype(scalar),
                                    batch_ndim=len(shape))


class StructStorage:
    """A struct field or ndarray: one storage per member, in field_dict;
    `s.member` is the member's storage and `s[i].member` its element."""

    def __init__(self, stype, shape):
        self.field_dict = {name: storage(t, shape) for name, t in stype.members.items()}
        self.shape = shape

    def __getattr__(self, name):
        try:
            return self.__dict__["field_dict"][name]
        except KeyError:
            raise AttributeError(f"the struct has no member '{name}'") from None

    def __getitem__(self, index):
        return _StructElement(self, index)

    def fill(self, value):
        for member in self.field_dict.values():
            member.fill(value)


class _StructElement:
    """s[i] of a StructStorage: reads and writes its members at index i."""

    def __init__(self, owner, index):
        object.__setattr__(self, "_owner", owner)
        object.__setattr__(self, "_index", index)

    def __getattr__(self, name):
        return getattr(self._owner, name)[self._index]

    def __setattr__(self, name, value):
        getattr(self._owner, name)[self._index] = value


def matrix(arr, dtype=None):
    """qd.Vector / qd.Matrix: a PyTensor of the entries (rows for a matrix)."""
    out = _py_tensor.tensor_class()(arr)
    return out if dtype is None else out.to(torch_dtype(dtype))


_UPDATES = {
    "add": lambda old, v: old + v,
    "sub": lambda old, v: old - v,
    "mul": lambda old, v: old * v,
    "min": lambda old, v: old.minimum(old.new_tensor(v)),
    "max": lambda old, v: old.maximum(old.new_tensor(v)),
    "bit_and": lambda old, v: old & v,
    "bit_or": lambda old, v: old | v,
    "bit_xor": lambda old, v: old ^ v,
    "exchange": lambda old, v: old.new_tensor(v).expand_as(old),
}


def atomic(name, op, target, value):
    """qd.atomic_<op>(target, value) run in order: updates the element
    `target` (a view into a field or ndarray) in place and returns the value
    it held."""
    torch = _py_tensor._torch()  # pylint: disable=protected-access
    if not isinstance(target, torch.Tensor):
        raise QuadrantsTypeError(f"qd.{name}() needs a field or ndarray element as its first "
                                 f"argument, got {type(target).__name__} (qd.python updates "
                                 f"storage in place, so a local number cannot be its target)")
    old = target.clone()
    if isinstance(value, torch.Tensor):
        value = value.as_subclass(torch.Tensor)
    target.copy_(_UPDATES[op](old.as_subclass(torch.Tensor), value))
    return old.item() if old.ndim == 0 else old


def cast(x, dtype):
    """qd.cast / qd.f32(x) on a tensor: its values converted (floats to
    integers toward zero)."""
    return x.to(torch_dtype(dtype))


def grouped(x):
    """qd.grouped(x): the index vectors of x's batch shape, or of a
    qd.ndrange, in order."""
    torch = _py_tensor._torch()  # pylint: disable=protected-access
    cls = _py_tensor.tensor_class()
    if hasattr(x, "bounds"):
        indices = iter(x)
    else:
        indices = np.ndindex(*tuple(x.shape))
    for index in indices:
        yield cls(torch.tensor(list(index), dtype=torch.int64))
