"""PyTensor: the storage of fields, ndarrays, vectors and matrices under
qd.init(arch=qd.python), where kernels run as plain Python.

A PyTensor is a torch.Tensor whose .shape is its batch shape, the indices a
kernel sees (a vec3 field of shape (N,) has .shape (N,)), while .size() is
the whole tensor's, element axes included ((N, 3)). Indexing an element
gives a view, so `a[i] += 1` and the atomics update the storage in place.

torch is imported when the class is first needed: importing quadrants does
not import it.
"""
import importlib

import numpy as np

_built = {}


def _torch():
    return importlib.import_module("torch")


def _plain(value):
    """Nested lists of Python numbers from numbers, 0-d tensors, tensors and
    lists of them (a qd.Matrix's rows may be vectors)."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value.item() if value.ndim == 0 else value.tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _index(key):
    """A key torch and numpy accept: an index vector (a 1-D PyTensor from
    qd.grouped) becomes a tuple of ints, 0-d tensors become ints."""
    torch = _torch()
    if isinstance(key, torch.Tensor):
        if key.ndim == 1 and not key.is_floating_point():
            return tuple(int(k) for k in key.tolist())
        if key.ndim == 0:
            return int(key)
        return key
    if isinstance(key, list) and len(key) == 1:
        return _index(key[0])
    if isinstance(key, tuple):
        flat = []
        for k in key:
            k = _index(k)
            flat.extend(k if isinstance(k, tuple) else (k,))
        return tuple(flat)
    return key


def _build():
    torch = _torch()

    class PyTensor(torch.Tensor):
        """A torch.Tensor with Quadrants' batch shape (see the module)."""

        def __new__(cls, data=()):
            base = data if isinstance(data, torch.Tensor) else torch.tensor(_plain(data))
            return torch.Tensor._make_subclass(cls, base)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            # Another tensor subclass in the call: ours steps aside, so the
            # result is plain torch (or theirs), never a mix.
            if any(not issubclass(t, cls) and t is not torch.Tensor for t in types):
                def unwrap(o):
                    return o.as_subclass(torch.Tensor) if isinstance(o, cls) else o
                args = torch.utils._pytree.tree_map(unwrap, args)  # pylint: disable=protected-access
                kwargs = torch.utils._pytree.tree_map(unwrap, kwargs)  # pylint: disable=protected-access
                return func(*args, **kwargs)
            return super().__torch_function__(func, types, args, kwargs)

        @property
        def shape(self):
            batch = self.__dict__.get("_batch_shape")
            return batch if batch is not None else self.size()

        @classmethod
        def zeros(cls, *args, **kwargs):
            return cls(torch.zeros(*args, **kwargs))

        def _setup_views(self, batch_ndim):
            """The views Quadrants' fields and ndarrays carry: _tc (torch),
            _T_tc (the second-to-last batch axis first, as upstream's
            transposed view), _np and _T_np (numpy)."""
            self._batch_shape = self.size()[:batch_ndim]
            self._tc = self
            self._T_tc = self.movedim(batch_ndim - 1, 0) if batch_ndim > 1 else self
            self._np = self.numpy()
            self._T_np = self._T_tc.numpy()
            self.grad = None
            self.dual = None

        # The host API of fields and ndarrays.
        def fill(self, value):
            self.fill_(value)

        def from_numpy(self, array):
            self.copy_(torch.from_numpy(np.ascontiguousarray(array)))

        def to_numpy(self):
            return self.as_subclass(torch.Tensor).numpy().copy()

        def to_torch(self, device=None):
            out = self.as_subclass(torch.Tensor).clone()
            return out if device is None else out.to(device)

        def get_shape(self):
            return self.size()

        # Vector components and the matrix methods torch lacks.
        x = property(lambda self: self[0])
        y = property(lambda self: self[1])
        z = property(lambda self: self[2])
        w = property(lambda self: self[3])

        def norm_sqr(self):
            return (self * self).sum()

        def normalized(self, eps=0):
            return self / (self.norm() + eps)

        def outer_product(self, other):
            return torch.outer(self, other)

        def determinant(self):
            return torch.linalg.det(self.to(torch.float64)).to(self.dtype)

        def transpose(self, *dims):
            if not dims:
                if self.ndim != 2:
                    raise ValueError(f"transpose() with no axes needs a matrix (2-D), "
                                     f"got {self.ndim}-D")
                return super().transpose(0, 1)
            return super().transpose(*dims)

        def __iter__(self):
            for i in range(self.size()[0]):
                value = super().__getitem__(i)
                yield value.item() if value.ndim == 0 else value

        def __getitem__(self, key):
            key = _index(key)
            # A 0-D field is indexed with [0] (or [()]) in kernels: its value.
            if self.ndim == 0 and (key == 0 or key == ()):
                return self.item()
            return super().__getitem__(key)

        def __setitem__(self, key, value):
            key = _index(key)
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(value)
            elif isinstance(value, np.generic):
                value = value.item()
            elif isinstance(value, (list, tuple)):
                value = torch.tensor(_plain(value))
            if self.ndim == 0 and key == 0:
                key = ()
            super().__setitem__(key, value)

    return PyTensor


def tensor_class():
    """The PyTensor class (built, and torch imported, on first use)."""
    if "PyTensor" not in _built:
        _built["PyTensor"] = _build()
    return _built["PyTensor"]


def create_tensor(shape, dtype, batch_ndim=None):
    """A zeroed PyTensor of torch dtype `dtype` and whole shape `shape`, whose
    first `batch_ndim` axes (all by default) are its batch shape."""
    cls = tensor_class()
    out = cls.zeros(tuple(shape), dtype=dtype)
    out._setup_views(len(shape) if batch_ndim is None else batch_ndim)  # pylint: disable=protected-access
    return out


def __getattr__(name):
    if name == "PyTensor":
        return tensor_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
