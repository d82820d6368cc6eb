"""Slices of arrays in kernel code (arr[r0:r1, c0:c1], arr[b, r0:r1, c],
...): not values but the operands of tile loads, stores and rank-1
updates (qd.simt.Tile16x16), which consume them."""
from quadrants.lang.exception import QuadrantsSyntaxError


class _DeferredSlice:
    """A slice operand: any use other than a tile operation is an error."""

    def _misuse(self, what="used"):
        raise TypeError(f"{type(self).__name__} cannot be {what}: array slices are only valid "
                        f"in tile operations (t[:] = arr[r0:r1, c0:c1], arr[...] = t, "
                        f"t -= qd.outer(u, v))")

    def __add__(self, other):
        self._misuse("added")

    __radd__ = __add__

    def __sub__(self, other):
        self._misuse("subtracted")

    __rsub__ = __sub__

    def __mul__(self, other):
        self._misuse("multiplied")

    __rmul__ = __mul__

    def __getitem__(self, key):
        self._misuse("indexed")

    def __bool__(self):
        self._misuse("tested")

    def __repr__(self):
        return (f"<{type(self).__name__}: an array slice for a tile operation, not a "
                f"value>")


class _TileSliceProxy(_DeferredSlice):
    """arr[row_start:row_stop, col_start:col_stop] (or with a leading batch
    index): the block a tile loads from or stores to."""

    def __init__(self, arr, row_start, row_stop, col_start, col_stop, batch=None):
        self.arr, self.batch = arr, batch
        self.row_start, self.row_stop = row_start, row_stop
        self.col_start, self.col_stop = col_start, col_stop

    def _qd_assign(self, compiler, node, value):
        """arr[r0:r1, c0:c1] = tile."""
        store = getattr(value, "_qd_store_to", None)
        if store is None:
            raise compiler.error(node, "only a tile (qd.simt.Tile16x16, Tile32x32) can be "
                                 "assigned to an array slice", QuadrantsSyntaxError)
        store(compiler, node, self)


class _VecSliceProxy(_DeferredSlice):
    """arr[row_start:row_stop, col] (or with a leading batch index): one
    element per tile row, an operand of qd.outer."""

    def __init__(self, arr, row_start, row_stop, col, batch=None):
        self.arr, self.batch = arr, batch
        self.row_start, self.row_stop, self.col = row_start, row_stop, col


def _bounds(s, what):
    if s.start is None or s.stop is None:
        raise QuadrantsSyntaxError(f"Tile {what} slice: both start and stop indices are "
                                   f"required (write arr[0:N, ...], not arr[:N, ...])")
    if s.step is not None:
        raise QuadrantsSyntaxError(f"Tile {what} slice: a step is not supported")
    if any(isinstance(b, int) and b < 0 for b in (s.start, s.stop)):
        raise QuadrantsSyntaxError("Negative indices are not supported in Quadrants kernels.")
    return s.start, s.stop


def from_subscript(arr, index):
    """The slice operand `arr[index]` names, when `index` holds a slice."""
    index = index if isinstance(index, tuple) else (index,)
    pattern = [isinstance(i, slice) for i in index]
    if pattern == [True, True]:
        return _TileSliceProxy(arr, *_bounds(index[0], "row"), *_bounds(index[1], "col"))
    if pattern == [False, True, True]:
        return _TileSliceProxy(arr, *_bounds(index[1], "row"), *_bounds(index[2], "col"),
                               batch=index[0])
    if pattern == [True, False]:
        return _VecSliceProxy(arr, *_bounds(index[0], "row"), index[1])
    if pattern == [False, True, False]:
        return _VecSliceProxy(arr, *_bounds(index[1], "row"), index[2], batch=index[0])
    raise QuadrantsSyntaxError("an array slice in kernel code is a tile operand: "
                               "arr[r0:r1, c0:c1], arr[b, r0:r1, c0:c1], arr[r0:r1, c] or "
                               "arr[b, r0:r1, c]")
