"""Register tiles: an N x N matrix spread over N lanes of a subgroup, lane i
holding row i in N scalar registers (local variables). Rows move between
lanes by subgroup shuffles, so loads, stores, rank-1 updates, Cholesky
factorization and triangular solves need no shared memory.

Lane i of the subgroup holds row i (a loop with block_dim=N gives each
tile its own subgroup). Kernel code makes a tile with Tile16x16.zeros() / .eye() (or _make_tile(N,
dtype)()), loads and stores it by slice (t[:] = arr[r0:r1, c0:c1],
arr[r0:r1, c0:c1] = t) and updates it with t -= qd.outer(u, v). The
methods written in kernel language (_load, _store, _ger_sub, cholesky_,
solve_triangular_, ...) are compiled into the calling kernel; those marked
@intrinsic run while it compiles."""
from quadrants.lang import context, ops, runtime, types
from quadrants.lang.array_slice import _TileSliceProxy, _VecSliceProxy
from quadrants.lang.exception import QuadrantsSyntaxError
from quadrants.lang.expr import Var
from quadrants.lang.ops import intrinsic
from quadrants.lang.simt._subgroup_primitives import invocation_id, shuffle
from quadrants.lang.transformer import static

__all__ = ["Tile16x16", "Tile32x32", "outer", "_make_tile", "_TileSliceProxy",
           "_VecSliceProxy"]


class _OuterProduct:
    """qd.outer(u, v): the operand of t -= qd.outer(u, v) (u v^T, lane i
    holding u_i and v_i)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __add__(self, other):
        raise TypeError("qd.outer(a, b) does not support composition: use it only as the "
                        "right side of t -= qd.outer(a, b)")

    __radd__ = __add__
    __sub__ = __add__
    __rsub__ = __add__


@intrinsic
def outer(a, b):
    """qd.outer(a, b): the rank-1 product a b^T for a tile update."""
    return _OuterProduct(a, b)


def _compiled(method):
    """Marks a method written in kernel language: kernel code calling it
    compiles its body in place, whatever its arguments."""
    method._qd_kernel_language = True
    return method


@intrinsic
def _tile_lane(n):
    """The running lane's tile row: its subgroup lane (a tile takes the
    subgroup's first `n` lanes; later lanes fall outside every slice)."""
    return invocation_id()


@intrinsic
def _tile_base(n):
    """The subgroup lane holding tile row 0."""
    return context.constant(0, types.i32)


class _TileRef:
    """t[:], the target of a tile load: t[:] = arr[r0:r1, c0:c1] or t[:] = u."""

    def __init__(self, tile):
        self.tile = tile

    def _qd_assign(self, compiler, node, value):
        tile = self.tile
        if isinstance(value, _TileSliceProxy):
            if value.batch is None:
                compiler.inline_python(node, tile._load, [value.arr, value.row_start,
                                                          value.row_stop, value.col_start,
                                                          value.col_stop], {})
            else:
                compiler.inline_python(node, tile._load3d, [value.arr, value.batch,
                                                            value.row_start, value.row_stop,
                                                            value.col_start, value.col_stop],
                                       {})
            return
        if isinstance(value, _Tile) and value.SIZE == tile.SIZE:
            for mine, theirs in zip(tile._regs, value._regs):
                context.builder().local_store(
                    mine.alloca, ops.cast(context.load(theirs), tile.DTYPE).stmt)
            return
        raise compiler.error(node, f"t[:] takes an array slice (arr[r0:r1, c0:c1]) or a tile "
                             f"of {tile.SIZE}x{tile.SIZE}, got {value!r}", QuadrantsSyntaxError)


class _Tile:
    """An N x N register tile (see the module docstring); SIZE and DTYPE are
    its class's."""

    SIZE = 0
    DTYPE = None
    _qd_tile = True

    def __init__(self):
        ctx = context.current()
        if ctx is None:
            self._regs = None  # a host-side handle: only argument checks run on it
            return
        lanes = runtime.program().subgroup_size
        name = type(self).__name__
        if lanes == 0:
            raise QuadrantsSyntaxError(f"{name} requires a GPU backend: it moves rows between "
                                       f"subgroup lanes, which arch "
                                       f"{runtime.state.arch.name} does not have")
        if lanes < self.SIZE:
            raise QuadrantsSyntaxError(f"{name} needs subgroups of at least {self.SIZE} lanes; "
                                       f"this device's have {lanes}")
        region, which = ctx.region
        zero = context.constant(0, self.DTYPE)
        self._regs = []
        for k in range(self.SIZE):
            alloca = ctx.builder.alloca_at_start(region, which, self.DTYPE.name)
            ctx.builder.local_store(alloca, zero.stmt)
            self._regs.append(Var(alloca, self.DTYPE, f"{name}.r{k}"))

    @classmethod
    @intrinsic
    def zeros(cls):
        """A tile of zeros."""
        return cls()

    @classmethod
    @intrinsic
    def eye(cls):
        """The identity tile."""
        tile = cls()
        tile.eye_()
        return tile

    @intrinsic
    def eye_(self):
        """Sets the tile to the identity."""
        lane = _tile_lane(self.SIZE)
        for k, reg in enumerate(self._regs):
            one = ops.select(ops.binary("cmp_eq", lane, k, None), 1, 0)
            context.builder().local_store(reg.alloca, ops.cast(one, self.DTYPE).stmt)

    def __getitem__(self, key):
        if key != slice(None):
            raise QuadrantsSyntaxError(f"a tile is loaded as a whole: t[:] = arr[r0:r1, c0:c1] "
                                       f"(got t[{key!r}])")
        return _TileRef(self)

    def _qd_store_to(self, compiler, node, dest):
        """arr[r0:r1, c0:c1] = t."""
        if dest.batch is None:
            compiler.inline_python(node, self._store, [dest.arr, dest.row_start, dest.row_stop,
                                                       dest.col_start, dest.col_stop], {})
        else:
            compiler.inline_python(node, self._store3d, [dest.arr, dest.batch, dest.row_start,
                                                         dest.row_stop, dest.col_start,
                                                         dest.col_stop], {})

    def _qd_augassign(self, compiler, node, op, value):
        """t -= qd.outer(u, v)."""
        if not isinstance(value, _OuterProduct):
            raise TypeError(f"unsupported augmented assignment on a tile: only "
                            f"t -= qd.outer(u, v) is supported, got {value!r}")
        if op != "sub":
            raise TypeError(f"unsupported augmented assignment op '{op}' on a tile: only "
                            f"t -= qd.outer(u, v) is supported")
        a = self._operand(compiler, node, value.a)
        b = a if value.b is value.a else self._operand(compiler, node, value.b)
        compiler.inline_python(node, self._ger_sub, [a, b], {})

    def _operand(self, compiler, node, value):
        """A lane's element of an outer-product operand."""
        if isinstance(value, _VecSliceProxy):
            if value.batch is None:
                return compiler.inline_python(node, self._vec_load, [
                    value.arr, value.row_start, value.row_stop, value.col], {})
            return compiler.inline_python(node, self._vec_load3d, [
                value.arr, value.batch, value.row_start, value.row_stop, value.col], {})
        return ops.cast(context.to_expr(context.load(value)), self.DTYPE)

    # ---- compiled into the calling kernel ------------------------------------

    @_compiled
    def _load(self, arr, row_start, row_stop, col_start, col_stop):
        row = row_start + _tile_lane(self.SIZE)
        if row < row_stop and row < arr.shape[0]:
            for k in static(range(self.SIZE)):
                if col_start + k < col_stop and col_start + k < arr.shape[1]:
                    self._regs[k] = ops.cast(arr[row, col_start + k], self.DTYPE)

    @_compiled
    def _load3d(self, arr, batch, row_start, row_stop, col_start, col_stop):
        row = row_start + _tile_lane(self.SIZE)
        if row < row_stop and row < arr.shape[1]:
            for k in static(range(self.SIZE)):
                if col_start + k < col_stop and col_start + k < arr.shape[2]:
                    self._regs[k] = ops.cast(arr[batch, row, col_start + k], self.DTYPE)

    @_compiled
    def _store(self, arr, row_start, row_stop, col_start, col_stop):
        row = row_start + _tile_lane(self.SIZE)
        if row < row_stop and row < arr.shape[0]:
            for k in static(range(self.SIZE)):
                if col_start + k < col_stop and col_start + k < arr.shape[1]:
                    arr[row, col_start + k] = self._regs[k]

    @_compiled
    def _store3d(self, arr, batch, row_start, row_stop, col_start, col_stop):
        row = row_start + _tile_lane(self.SIZE)
        if row < row_stop and row < arr.shape[1]:
            for k in static(range(self.SIZE)):
                if col_start + k < col_stop and col_start + k < arr.shape[2]:
                    arr[batch, row, col_start + k] = self._regs[k]

    @_compiled
    def _vec_load(self, arr, row_start, row_stop, col):
        row = row_start + _tile_lane(self.SIZE)
        value = ops.cast(0, self.DTYPE)
        if row < row_stop and row < arr.shape[0]:
            value = ops.cast(arr[row, col], self.DTYPE)
        return value

    @_compiled
    def _vec_load3d(self, arr, batch, row_start, row_stop, col):
        row = row_start + _tile_lane(self.SIZE)
        value = ops.cast(0, self.DTYPE)
        if row < row_stop and row < arr.shape[1]:
            value = ops.cast(arr[batch, row, col], self.DTYPE)
        return value

    @_compiled
    def _ger_sub(self, a, b):
        """t -= a b^T: lane i subtracts a_i b_j from its row's entry j."""
        base = _tile_base(self.SIZE)
        for j in static(range(self.SIZE)):
            self._regs[j] = self._regs[j] - a * shuffle(b, base + j)

    @_compiled
    def cholesky_(self, eps):
        """Factorizes the tile in place (right-looking): its lower triangle
        becomes L with L L^T = the tile, its upper triangle zero. Each pivot
        is floored at `eps` as the pivot's own lane gives it."""
        lane = _tile_lane(self.SIZE)
        base = _tile_base(self.SIZE)
        floor = ops.cast(eps, self.DTYPE)
        for k in static(range(self.SIZE)):
            pivot = ops.sqrt(ops.max(shuffle(self._regs[k], base + k),
                                     shuffle(floor, base + k)))
            column = ops.select(lane > k, self._regs[k] / pivot,
                                ops.select(lane == k, pivot, ops.cast(0, self.DTYPE)))
            self._regs[k] = column
            below = ops.select(lane > k, column, ops.cast(0, self.DTYPE))
            for j in static(range(k + 1, self.SIZE)):
                self._regs[j] = self._regs[j] - below * shuffle(column, base + j)

    @_compiled
    def solve_triangular_(self, B, lower=True):
        """Solves X L^T = B for X in place of B, this tile being L (lower
        triangular with a nonzero diagonal, e.g. from cholesky_())."""
        if not lower:
            raise TypeError("solve_triangular_: only lower=True is supported")
        base = _tile_base(self.SIZE)
        for j in static(range(self.SIZE)):
            acc = B._regs[j]
            for m in static(range(j)):
                acc = acc - shuffle(self._regs[m], base + j) * B._regs[m]
            B._regs[j] = acc / shuffle(self._regs[j], base + j)


_tile_cache = {}


def _make_tile(n, dtype=None):
    """The tile class of n x n (a power of two up to 64) and `dtype` (the
    session's default float type when None), made once per (n, dtype)."""
    if n not in (2, 4, 8, 16, 32, 64):
        raise ValueError(f"tile size must be a power of two from 2 to 64, got {n}")
    if dtype is None:
        dtype = runtime.default_fp()
    if not isinstance(dtype, types.DataType) or not dtype.is_float:
        raise TypeError(f"a tile's dtype is qd.f32 or qd.f64, got {dtype!r}")
    key = (n, dtype)
    cls = _tile_cache.get(key)
    if cls is None:
        cls = _tile_cache[key] = type(f"Tile{n}x{n}", (_Tile,), {"SIZE": n, "DTYPE": dtype})
    return cls


class _TileProxy:
    """qd.simt.Tile16x16 / Tile32x32: SIZE, and zeros() / eye() of a dtype
    (the session's default float type when omitted)."""

    def __init__(self, n):
        self.SIZE = n

    @intrinsic
    def zeros(self, dtype=None):
        return _make_tile(self.SIZE, dtype)()

    @intrinsic
    def eye(self, dtype=None):
        return _make_tile(self.SIZE, dtype).eye()

    def __repr__(self):
        return f"qd.simt.Tile{self.SIZE}x{self.SIZE}"


Tile16x16 = _TileProxy(16)
Tile32x32 = _TileProxy(32)
