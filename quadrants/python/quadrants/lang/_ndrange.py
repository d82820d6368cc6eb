"""qd.ndrange(a, (b, c), ..., axes=None): a multi-dimensional iteration
space, in kernels (one flat parallel loop) and in Python scope.

`axes` permutes the visit order only: physical nesting level p (0 the
outermost) walks canonical axis axes[p], while the loop variables stay
bound to the canonical axes. The identity permutation is the default
(the last axis innermost) and reads back as `axes is None`."""
import itertools

import numpy as np

from quadrants.lang import matrix
from quadrants.lang.exception import (QuadrantsArgumentError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)


def _check_axes(axes, ndim):
    """`axes` as a tuple, or None for the identity; raises on anything that
    is not a permutation of range(ndim)."""
    if axes is None:
        return None
    if not isinstance(axes, (tuple, list)):
        raise QuadrantsTypeError(
            f"qd.ndrange(axes={axes!r}): axes must be a tuple of Python ints")
    axes = tuple(axes)
    if any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
        raise QuadrantsTypeError(
            f"qd.ndrange(axes={axes!r}): its entries must be Python ints (a "
            f"permutation of 0..{ndim - 1})")
    if len(axes) != ndim:
        raise QuadrantsSyntaxError(
            f"qd.ndrange(axes={axes!r}) has {len(axes)} entries but ndrange has "
            f"{ndim} dimensions")
    if sorted(axes) != list(range(ndim)):
        raise QuadrantsSyntaxError(
            f"qd.ndrange(axes={axes!r}) is not a permutation of 0..{ndim - 1}")
    return None if axes == tuple(range(ndim)) else axes


class _Ndrange:
    """qd.ndrange(a, (b, c), ..., axes=None)."""

    def __init__(self, *dims, axes=None):
        self.bounds = []
        for d in dims:
            if isinstance(d, (tuple, list)):
                if len(d) != 2:
                    raise QuadrantsArgumentError(
                        f"Every argument of ndrange should be a scalar or a tuple/list like "
                        f"(begin, end), got {tuple(d)!r}")
                self.bounds.append((d[0], d[1]))
            else:
                self.bounds.append((0, d))
        for bound in (b for pair in self.bounds for b in pair):
            dtype = getattr(bound, "dtype", None)
            if isinstance(bound, (float, np.floating)) or getattr(dtype, "is_float", False):
                raise QuadrantsTypeError(
                    f"Every argument of ndrange should be an integer scalar or a tuple/list "
                    f"of (int, int), got the bound {bound!r}")
        self.axes = _check_axes(axes, len(self.bounds))

    def order(self):
        """The canonical axes from the outermost nesting level inwards."""
        return self.axes if self.axes is not None else tuple(range(len(self.bounds)))

    def __iter__(self):
        """The canonical index tuples in visit order (Python scope: the
        bounds must be Python ints)."""
        order = self.order()
        try:
            ranges = [range(self.bounds[axis][0], self.bounds[axis][1]) for axis in order]
        except TypeError:
            raise QuadrantsTypeError(
                "Every argument of ndrange should be an integer scalar or a tuple/list of "
                "(int, int): iterating qd.ndrange() at compile time needs Python int "
                "bounds") from None
        for physical in itertools.product(*ranges):
            canonical = [0] * len(order)
            for level, axis in enumerate(order):
                canonical[axis] = physical[level]
            yield tuple(canonical)

    def grouped(self):
        """The index vectors in visit order (Python scope)."""
        for index in self:
            yield matrix.Vector(list(index))
