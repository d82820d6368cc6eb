"""qd.ndarray: arrays passed to kernels as arguments."""
import numbers
import weakref

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import (ArgumentValueError, QuadrantsGradientError,
                                      QuadrantsRuntimeError, QuadrantsTypeError)


# Ndarrays that have adjoints, so qd.ad.Tape can clear them.
_with_grad = weakref.WeakSet()


class Ndarray:
    """A dense array owned by Quadrants, passed to kernels by reference."""

    def __init__(self, dtype, shape, needs_grad=False):
        prog = runtime.program()
        # Vector/matrix elements are stored as their components along
        # trailing axes of the underlying array (shape + element shape).
        if hasattr(dtype, "_flat_dtypes"):
            if not hasattr(dtype, "shape"):
                raise QuadrantsTypeError("qd.ndarray() of structs is not supported; use a "
                                         "struct field, or one ndarray per member")
            self.dtype = dtype
            scalar, self._element_shape = dtype.dtype, tuple(dtype.shape)
        else:
            self.dtype = types.normalize(dtype)
            scalar, self._element_shape = self.dtype, ()
        if isinstance(shape, numbers.Integral):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise QuadrantsTypeError(f"ndarray shape must be non-negative, got {shape}")
        if not isinstance(needs_grad, bool):
            raise QuadrantsTypeError(f"needs_grad must be a bool, got {needs_grad!r}")
        if needs_grad and not scalar.is_float:
            # The wording keeps upstream's "<dtype> is not supported for ndarray".
            raise QuadrantsGradientError(f"qd.ndarray(): {self.dtype} is not supported for "
                                         f"ndarray gradients: {scalar} is not "
                                         f"differentiable, so an ndarray of {self.dtype} "
                                         f"cannot have needs_grad=True; use a floating-point "
                                         f"dtype (qd.f32, qd.f64)")
        self.shape = shape
        self._generation = runtime.state.generation
        self._scalar = scalar
        self._core_shape = shape + self._element_shape
        self._core = prog.create_ndarray(scalar.name, list(self._core_shape))
        self.grad = Ndarray(self.dtype, shape) if needs_grad else None
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
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        """The number of elements."""
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    def _check_alive(self):
        if self._generation != runtime.state.generation:
            raise QuadrantsRuntimeError("this ndarray belongs to a Quadrants session that "
                                        "was reset; create it again after qd.init()")
        return runtime.program()

    def _index(self, key):
        return types.host_index(key, len(self.shape), "ndarray")

    @property
    def element_shape(self):
        return self._element_shape

    def _components(self):
        return [list(c) for c in np.ndindex(*self._element_shape)]

    def __getitem__(self, key):
        self._check_alive().sync()
        index = self._index(key)
        if not self._element_shape:
            return self._core.read(index)
        from quadrants.lang.composite_field import host_value  # pylint: disable=import-outside-toplevel
        values = [self._core.read(index + c) for c in self._components()]
        return host_value(np.array(values, dtype=types.to_numpy_dtype(self._scalar))
                          .reshape(self._element_shape))

    def __setitem__(self, key, value):
        self._check_alive().sync()
        index = self._index(key)
        if not self._element_shape:
            self._core.write(index, value)
            return
        from quadrants.lang.composite_field import element_array  # pylint: disable=import-outside-toplevel
        value = element_array(value, self._element_shape, "this ndarray")
        for c, v in zip(self._components(), value.reshape(-1).tolist()):
            self._core.write(index + c, v)

    def to_numpy(self):
        self._check_alive().sync()
        return self._core.to_numpy()

    def from_numpy(self, array):
        self._check_alive().sync()
        array = np.asarray(array)
        if tuple(array.shape) != self._core_shape:
            what = f"shape {self.shape}" if not self._element_shape else \
                f"shape {self.shape} with elements of shape {self._element_shape}"
            raise ArgumentValueError(f"from_numpy: ndarray has {what}, so it needs an array "
                                     f"of shape {self._core_shape}, got "
                                     f"{tuple(array.shape)}")
        self._core.from_numpy(array)

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
        return f"<qd.ndarray {self.dtype}{list(self.shape)}>"


def ndarray(dtype, shape, needs_grad=False):
    """qd.ndarray(dtype, shape, needs_grad=False), zero-initialized."""
    return Ndarray(dtype, shape, needs_grad)
