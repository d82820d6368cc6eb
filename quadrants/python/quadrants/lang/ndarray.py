"""qd.ndarray: arrays passed to kernels as arguments."""
import numbers
import weakref

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsTypeError)


# Ndarrays that have adjoints, so qd.ad.Tape can clear them.
_with_grad = weakref.WeakSet()


class Ndarray:
    """A dense array owned by Quadrants, passed to kernels by reference."""

    def __init__(self, dtype, shape, needs_grad=False):
        prog = runtime.program()
        self.dtype = types.normalize(dtype)
        if isinstance(shape, numbers.Integral):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise QuadrantsTypeError(f"ndarray shape must be non-negative, got {shape}")
        if not isinstance(needs_grad, bool):
            raise QuadrantsTypeError(f"needs_grad must be a bool, got {needs_grad!r}")
        if needs_grad and not self.dtype.is_float:
            # The wording keeps upstream's "<dtype> is not supported for ndarray".
            raise QuadrantsGradientError(f"qd.ndarray(): {self.dtype} is not supported for "
                                         f"ndarray gradients: {self.dtype} is not "
                                         f"differentiable, so an ndarray of {self.dtype} "
                                         f"cannot have needs_grad=True; use a floating-point "
                                         f"dtype (qd.f32, qd.f64)")
        self.shape = shape
        self._generation = runtime.state.generation
        self._core = prog.create_ndarray(self.dtype.name, list(shape))
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

    def __getitem__(self, key):
        self._check_alive().sync()
        return self._core.read(self._index(key))

    def __setitem__(self, key, value):
        self._check_alive().sync()
        self._core.write(self._index(key), value)

    def to_numpy(self):
        self._check_alive().sync()
        return self._core.to_numpy()

    def from_numpy(self, array):
        self._check_alive().sync()
        array = np.asarray(array)
        if tuple(array.shape) != self.shape:
            raise ValueError(f"from_numpy: ndarray has shape {self.shape}, the array "
                             f"{tuple(array.shape)}")
        self._core.from_numpy(array)

    def fill(self, value):
        self._check_alive().sync()
        self._core.fill(value)

    @property
    def data_generation(self):
        return self._core.data_generation

    def __repr__(self):
        return f"<qd.ndarray {self.dtype}{list(self.shape)}>"


def ndarray(dtype, shape, needs_grad=False):
    """qd.ndarray(dtype, shape, needs_grad=False), zero-initialized."""
    return Ndarray(dtype, shape, needs_grad)
