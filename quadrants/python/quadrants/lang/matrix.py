"""qd.Vector, qd.Matrix and their types (qd.types.vector / matrix).

A Matrix is scalarized in the front end: it is a row-major list of scalar
entries, each a Python number (host code, or constants in kernel code), an
Expr (a computed value), a Var (a component of a local variable) or a
GlobalRef (a component of a field or ndarray element). Every operation
builds scalar IR per component, so the C++ IR, the autodiff passes and the
adstack (one stack per carried component) see only scalars.
"""
import numbers
import operator

import numpy as np

from quadrants.lang import context, ops, python_backend, session, types
from quadrants.lang.exception import (ArgumentValueError, QuadrantsRuntimeError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.expr import Composite, Expr, GlobalRef, Var, is_runtime
from quadrants.lang.hooks import Hooks

# The storage constructors qd.Matrix.field / .ndarray / .tensor: vector and
# matrix fields, ndarrays and tensors build on Matrix, and each registers
# its constructor here when imported.
storage = Hooks("quadrants.lang.composite_field, quadrants.lang.ndarray and "
                "quadrants.lang.tensor", "matrix_field", "ndarray", "matrix_tensor",
                "vector_tensor")


def _in_kernel():
    return context.current() is not None


def _bin(name, python_fn):
    def op(a, b):
        return ops.binary(name, a, b, python_fn)
    return op


add = _bin("add", operator.add)
sub = _bin("sub", operator.sub)
mul = _bin("mul", operator.mul)
div = _bin("div", operator.truediv)
_max2 = _bin("max", max)
_min2 = _bin("min", min)


def _assert_index(index, extent, axis, what):
    """Debug mode: a run-time index of a local vector or matrix must be in
    range (upstream's "Out of bound access" wording)."""
    index = context.to_expr(index)
    ok = ops.bit_and(ops.cmp_ge(index, 0), ops.cmp_lt(index, extent))
    context.builder().assert_(context.to_expr(ok).stmt,
                              f"Out of bound access to a {what}: index %d is outside "
                              f"[0, {extent}) on axis {axis}", [index.stmt])


def ir_type_name(dtype, shape=()):
    """A scalar or vector/matrix type as the IR prints it: i32, [Tensor (3) f32],
    [Tensor (2, 2) f64] (upstream's messages quote it)."""
    if not shape:
        return str(dtype)
    return f"[Tensor ({', '.join(str(e) for e in shape)}) {dtype}]"


def _describe_shape(n, m, ndim):
    return f"vector of {n}" if ndim == 1 else f"{n}x{m} matrix"


_SWIZZLE_SETS = ("xyzw", "rgba", "stpq")


def _swizzle_indices(name):
    """The component indices of swizzle `name` (.x, .xy, .zyx, .rgb), or
    None when `name` is not one."""
    if not name or len(name) > 4:
        return None
    for letters in _SWIZZLE_SETS:
        if all(c in letters for c in name):
            return [letters.index(c) for c in name]
    return None


_NUMPY_OPERATORS = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.floor_divide: operator.floordiv,
    np.remainder: operator.mod, np.power: operator.pow, np.matmul: operator.matmul,
    np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt,
    np.less_equal: operator.le, np.greater: operator.gt, np.greater_equal: operator.ge,
    np.bitwise_and: operator.and_, np.bitwise_or: operator.or_,
    np.bitwise_xor: operator.xor, np.left_shift: operator.lshift,
    np.right_shift: operator.rshift,
}


class Matrix(Composite):
    """qd.Matrix(arr, dt=None): a matrix from nested lists (rows), or a vector
    from a flat list. Inside kernels the entries may be run-time values."""

    __slots__ = ("entries", "n", "m", "ndim")
    _qd_intrinsic = True  # constructing one in kernel code runs this class

    def __new__(cls, arr=None, dt=None, ndim=None):  # pylint: disable=unused-argument
        if arr is not None and python_backend.active():
            return python_backend.matrix(arr, dt)
        return super().__new__(cls)

    def __init__(self, arr=None, dt=None, ndim=None):
        if isinstance(arr, Matrix):
            entries, n, m, nd = list(arr.entries), arr.n, arr.m, arr.ndim
        elif isinstance(arr, np.ndarray):
            return Matrix.__init__(self, arr.tolist(), dt, ndim)
        elif isinstance(arr, (list, tuple)):
            if not arr:
                raise QuadrantsTypeError("qd.Matrix() needs a non-empty list")
            if all(isinstance(r, (list, tuple, np.ndarray)) or
                   (isinstance(r, Matrix) and r.ndim == 1) for r in arr):
                rows = [list(r.entries) if isinstance(r, Matrix) else list(r) for r in arr]
                m = len(rows[0])
                if any(len(r) != m for r in rows):
                    raise QuadrantsTypeError("qd.Matrix() rows must all have the same "
                                             "length")
                entries, n, nd = [e for r in rows for e in r], len(rows), 2
            else:
                entries, n, m, nd = list(arr), len(arr), 1, 1
        else:
            raise QuadrantsTypeError(f"qd.Matrix() needs a list, got {type(arr).__name__}")
        if ndim is not None and ndim != nd:
            if ndim == 1 and nd == 2 and m == 1:
                nd = 1
            else:
                raise QuadrantsTypeError(f"expected a {'vector' if ndim == 1 else 'matrix'}"
                                         f", got a {_describe_shape(n, m, nd)}")
        if _in_kernel():
            entries = [context.load(e) for e in entries]
        for e in entries:
            if isinstance(e, Composite):
                raise QuadrantsTypeError("matrix entries must be scalars")
        if dt is not None:
            dt = types.normalize(dt)
            entries = [ops.cast(e, dt) for e in entries]
        self.entries, self.n, self.m, self.ndim = entries, n, m, nd

    @classmethod
    def _make(cls, entries, n, m, ndim):
        self = Matrix.__new__(Matrix)
        self.entries, self.n, self.m, self.ndim = list(entries), n, m, ndim
        return self

    def _like(self, entries):
        return Matrix._make(entries, self.n, self.m, self.ndim)

    # ---- Composite -----------------------------------------------------------
    def _load(self):
        if not _in_kernel() or not any(isinstance(e, (Var, GlobalRef, Composite))
                                       for e in self.entries):
            return self
        return self._like([context.load(e) for e in self.entries])

    def _leaves(self):
        return list(self.entries)

    def _describe(self):
        return _describe_shape(self.n, self.m, self.ndim)

    @property
    def shape(self):
        return (self.n,) if self.ndim == 1 else (self.n, self.m)

    def get_shape(self):
        return self.shape

    def __repr__(self):
        if not any(is_runtime(e) for e in self.entries):
            return f"Matrix({self.to_list()})" if self.ndim == 2 else \
                f"Vector({self.to_list()})"
        return f"<qd {self._describe()}>"

    def _ir_type(self):
        """The type as the IR prints it: [Tensor (3) f32]."""
        return ir_type_name(self.dtype, self.shape)

    @property
    def dtype(self):
        dt = None
        for e in self.entries:
            e = context.load(e) if _in_kernel() else e
            d = e.dtype if isinstance(e, Expr) else context.literal_type(e)
            dt = d if dt is None else types.promote(dt, d)
        return dt

    # ---- indexing ------------------------------------------------------------
    def _check_index(self, k, extent, axis):
        if not -extent <= k < extent:
            raise QuadrantsTypeError(f"index {k} is out of range for axis {axis} of a "
                                     f"{self._describe()}")
        return k % extent

    def _key(self, key):
        """(row, col) of a static key, or None for run-time indices."""
        if not isinstance(key, tuple):
            key = (key,)
        if _in_kernel():
            key = tuple(context.load(k) for k in key)
        # An index vector (qd.grouped) stands for its components.
        key = tuple(e for k in key for e in (k.entries if isinstance(k, Matrix) else (k,)))
        if any(isinstance(k, Expr) for k in key):
            return None, key
        for k in key:
            if not isinstance(k, (numbers.Integral, np.integer)):
                raise QuadrantsTypeError(f"a {self._describe()} is indexed with integers, "
                                         f"got {k!r}")
        return tuple(int(k) for k in key), key

    def __call__(self, *indices):
        """v(i) and m(i, j): Taichi's older spelling of v[i] and m[i, j]."""
        return self[indices if len(indices) != 1 else indices[0]]

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, slice) for k in parts):
            return self._sliced(parts)
        static, key = self._key(key)
        if static is None:
            return self._dynamic(key)
        if self.ndim == 1:
            if len(static) != 1:
                raise QuadrantsTypeError(f"Expected 1 indices, got {len(static)}: a "
                                         f"{self._describe()} takes one index")
            return self.entries[self._check_index(static[0], self.n, 0)]
        if len(static) == 1:
            if _in_kernel():
                # Kernel code names an entry by both indices, as upstream;
                # host code may take a row.
                raise QuadrantsTypeError(f"Expected 2 indices, got 1: a {self._describe()} "
                                         f"takes two (m[i, j])")
            i = self._check_index(static[0], self.n, 0)
            return Matrix._make(self.entries[i * self.m:(i + 1) * self.m], self.m, 1, 1)
        if len(static) != 2:
            raise QuadrantsTypeError(f"Expected 2 indices, got {len(static)}: a "
                                     f"{self._describe()} takes two")
        i = self._check_index(static[0], self.n, 0)
        j = self._check_index(static[1], self.m, 1)
        return self.entries[i * self.m + j]

    def _axis_selection(self, k, extent):
        """A slice as the list of indices it takes (compile-time bounds), or
        an index as itself."""
        if not isinstance(k, slice):
            return context.load(k) if _in_kernel() else k
        bounds = [context.load(b) if _in_kernel() else b for b in (k.start, k.stop, k.step)]
        if any(is_runtime(b) for b in bounds):
            # The first sentence is upstream's wording.
            raise QuadrantsTypeError("Quadrants does not support variables in slice now: "
                                     "slice bounds must be compile-time ints (an index "
                                     "may be a run-time value)")
        return list(range(*slice(*bounds).indices(extent)))

    def _sliced(self, parts):
        """v[a:b], m[:, j], m[i, a:b], m[a:b, c:d]: a vector or matrix of the
        selected components (references, so a slice can be assigned)."""
        if len(parts) != self.ndim:
            raise QuadrantsTypeError(f"Expected {self.ndim} indices, got {len(parts)}: a "
                                     f"{self._describe()} takes {self.ndim}")
        picks = [self._axis_selection(k, extent) for k, extent in zip(parts, self.shape)]
        if self.ndim == 1:
            return Matrix._make([self.entries[i] for i in picks[0]], len(picks[0]), 1, 1)
        rows, cols = picks

        def entry(r, c):
            if isinstance(r, Expr) or isinstance(c, Expr):
                row_entries = self.entries[r * self.m:(r + 1) * self.m] \
                    if not isinstance(r, Expr) else None
                if row_entries is not None:
                    return DynamicElement(row_entries, c)
                column = [self.entries[i * self.m + c] for i in range(self.n)]
                return DynamicElement(column, r)
            return self.entries[self._check_index(r, self.n, 0) * self.m +
                                self._check_index(c, self.m, 1)]
        if isinstance(rows, list) and isinstance(cols, list):
            return Matrix._make([entry(r, c) for r in rows for c in cols], len(rows),
                                len(cols), 2)
        if isinstance(rows, list):
            return Matrix._make([entry(r, cols) for r in rows], len(rows), 1, 1)
        return Matrix._make([entry(rows, c) for c in cols], len(cols), 1, 1)

    def _dynamic(self, key):
        for k in key:
            if isinstance(k, Expr) and k.dtype.is_float:
                raise QuadrantsTypeError(f"indices must be integers: an index is {k.dtype}")
        if len(key) != self.ndim:
            raise QuadrantsTypeError(f"Expected {self.ndim} indices, got {len(key)}: "
                                     f"a {self._describe()} takes {self.ndim}")
        if session.option("debug", False):
            for axis, (k, extent) in enumerate(zip(key, self.shape)):
                _assert_index(k, extent, axis, self._describe())
        flat = key[0] if self.ndim == 1 else add(mul(key[0], self.m), key[1])
        return DynamicElement(self.entries, flat)

    def __setitem__(self, key, value):
        if _in_kernel():
            raise QuadrantsSyntaxError("internal: kernel stores go through the compiler")
        static, _ = self._key(key)
        if self.ndim == 1:
            self.entries[self._check_index(static[0], self.n, 0)] = value
        elif len(static) == 2:
            self.entries[self._check_index(static[0], self.n, 0) * self.m +
                         self._check_index(static[1], self.m, 1)] = value
        else:
            i = self._check_index(static[0], self.n, 0)
            self.entries[i * self.m:(i + 1) * self.m] = list(value)

    def __len__(self):
        return self.n

    def __iter__(self):
        if self.ndim == 1:
            return iter(self.entries)
        return iter(self[i] for i in range(self.n))

    def __getattr__(self, name):
        idx = _swizzle_indices(name)
        if idx is None or self.ndim != 1:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        self._check_swizzle(name, idx)
        if len(idx) == 1:
            return self.entries[idx[0]]
        return Matrix._make([self.entries[i] for i in idx], len(idx), 1, 1)

    def __setattr__(self, name, value):
        if name in Matrix.__slots__:
            object.__setattr__(self, name, value)
            return
        idx = _swizzle_indices(name)
        if idx is None or self.ndim != 1 or _in_kernel():
            raise AttributeError(f"cannot set attribute '{name}' of a matrix")
        self._check_swizzle(name, idx)
        values = list(value) if len(idx) > 1 else [value]
        if len(values) != len(idx):
            raise QuadrantsRuntimeError(f"value len does not match the swizzle pattern={name}: "
                                        f"it takes {len(idx)} values, got {len(values)}")
        for i, v in zip(idx, values):
            self.entries[i] = v

    def _check_swizzle(self, name, idx):
        """A swizzle names components the vector has (upstream's words)."""
        if max(idx) >= self.n:
            letters = next(ls for ls in _SWIZZLE_SETS if all(c in ls for c in name))
            raise QuadrantsSyntaxError(f"vec{self.n} only has attributes="
                                       f"{tuple(letters[:self.n])}, got={tuple(name)}")

    # ---- element-wise arithmetic ---------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy operators with numpy scalars stay matrices (np.float64(1) + v
        is a Matrix, as v + np.float64(1) is); with arrays they act on the
        matrix's values."""
        op = _NUMPY_OPERATORS.get(ufunc)
        if op is not None and method == "__call__" and not kwargs and all(
                isinstance(x, (Matrix, numbers.Number, np.generic)) for x in inputs):
            return op(*[x.item() if isinstance(x, np.generic) else x for x in inputs])
        arrays = [x.to_numpy() if isinstance(x, Matrix) else x for x in inputs]
        return getattr(ufunc, method)(*arrays, **kwargs)

    def _elementwise(self, name, other, python_fn, reverse=False):
        return elementwise(name, other, self, python_fn) if reverse else \
            elementwise(name, self, other, python_fn)

    def __add__(self, o): return self._elementwise("add", o, operator.add)
    def __radd__(self, o): return self._elementwise("add", o, operator.add, True)
    def __sub__(self, o): return self._elementwise("sub", o, operator.sub)
    def __rsub__(self, o): return self._elementwise("sub", o, operator.sub, True)
    def __mul__(self, o): return self._elementwise("mul", o, operator.mul)
    def __rmul__(self, o): return self._elementwise("mul", o, operator.mul, True)
    def __truediv__(self, o): return self._elementwise("div", o, operator.truediv)
    def __rtruediv__(self, o): return self._elementwise("div", o, operator.truediv, True)
    def __floordiv__(self, o): return self._elementwise("floordiv", o, operator.floordiv)
    def __rfloordiv__(self, o): return self._elementwise("floordiv", o, operator.floordiv, True)
    def __mod__(self, o): return self._elementwise("mod", o, operator.mod)
    def __rmod__(self, o): return self._elementwise("mod", o, operator.mod, True)
    def __and__(self, o): return self._elementwise("bit_and", o, operator.and_)
    def __rand__(self, o): return self._elementwise("bit_and", o, operator.and_, True)
    def __or__(self, o): return self._elementwise("bit_or", o, operator.or_)
    def __ror__(self, o): return self._elementwise("bit_or", o, operator.or_, True)
    def __xor__(self, o): return self._elementwise("bit_xor", o, operator.xor)
    def __rxor__(self, o): return self._elementwise("bit_xor", o, operator.xor, True)
    def __lshift__(self, o): return self._elementwise("shl", o, operator.lshift)
    def __rlshift__(self, o): return self._elementwise("shl", o, operator.lshift, True)
    def __rshift__(self, o): return self._elementwise("shr", o, operator.rshift)
    def __rrshift__(self, o): return self._elementwise("shr", o, operator.rshift, True)
    def __pow__(self, o): return self._elementwise("pow", o, operator.pow)
    def __rpow__(self, o): return self._elementwise("pow", o, operator.pow, True)
    def __lt__(self, o): return self._elementwise("cmp_lt", o, operator.lt)
    def __le__(self, o): return self._elementwise("cmp_le", o, operator.le)
    def __gt__(self, o): return self._elementwise("cmp_gt", o, operator.gt)
    def __ge__(self, o): return self._elementwise("cmp_ge", o, operator.ge)
    def __eq__(self, o): return self._elementwise("cmp_eq", o, operator.eq)
    def __ne__(self, o): return self._elementwise("cmp_ne", o, operator.ne)
    __hash__ = object.__hash__

    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)

    def __neg__(self):
        return self._like([_neg(e) for e in self._load().entries])

    def __pos__(self):
        return self

    def __invert__(self):
        return ops.bit_not(self)

    def __abs__(self):
        return self._like([ops.abs(e) for e in self._load().entries])

    def __bool__(self):
        """Host code: whether every entry is true, so `assert u == v` checks
        each component (upstream's tests write it so). Kernel code has no
        truth value for a vector: .any() or .all() says which is meant."""
        if _in_kernel():
            raise QuadrantsTypeError("a vector or matrix has no truth value in kernel code; "
                                     "use .any() or .all()")
        return all(bool(e) for e in self.entries)

    def __array__(self, dtype=None):
        return np.array(self.to_list(), dtype=dtype)

    # ---- methods -------------------------------------------------------------
    def _need_vector(self, what):
        if self.ndim != 1:
            raise QuadrantsTypeError(f"{what} needs a vector, got a {self._describe()}")

    def _need_square(self, what, sizes=None):
        if self.ndim != 2 or self.n != self.m:
            raise QuadrantsTypeError(f"{what} needs a square matrix, got a "
                                     f"{self._describe()} (expected a square matrix, "
                                     f"got shape {self.shape})")
        if sizes is not None and self.n not in sizes:
            raise QuadrantsTypeError(f"{what} is implemented for {', '.join(f'{s}x{s}' for s in sizes)} "
                                     f"matrices, got a {self._describe()}")

    def dot(self, other):
        a, b = self._load(), _as_matrix(other)._load()
        if a.ndim != 1 or b.ndim != 1 or a.n != b.n:
            raise QuadrantsTypeError(f"dot() needs two vectors of one length, got a "
                                     f"{a._describe()} and a {b._describe()}")
        return _sum([mul(x, y) for x, y in zip(a.entries, b.entries)])

    def cross(self, other):
        a, b = self._load(), _as_matrix(other)._load()
        if a.ndim != 1 or b.ndim != 1 or a.n != b.n or a.n not in (2, 3):
            raise QuadrantsTypeError(f"cross() needs two vectors of length 2 or 3, got a "
                                     f"{a._describe()} and a {b._describe()}")
        x, y = a.entries, b.entries
        if a.n == 2:
            return sub(mul(x[0], y[1]), mul(x[1], y[0]))
        return Matrix._make([sub(mul(x[1], y[2]), mul(x[2], y[1])),
                             sub(mul(x[2], y[0]), mul(x[0], y[2])),
                             sub(mul(x[0], y[1]), mul(x[1], y[0]))], 3, 1, 1)

    def outer_product(self, other):
        a, b = self._load(), _as_matrix(other)._load()
        if a.ndim != 1 or b.ndim != 1:
            raise QuadrantsTypeError(f"outer_product() needs two vectors, got a "
                                     f"{a._describe()} and a {b._describe()}")
        return Matrix._make([mul(x, y) for x in a.entries for y in b.entries], a.n, b.n, 2)

    def norm_sqr(self):
        a = self._load()
        return _sum([mul(x, x) for x in a.entries])

    def frobenius_inner(self, other):
        """The sum of the products of corresponding entries (a vector's dot
        product, a matrix's Frobenius inner product)."""
        a, b = self._load(), _as_matrix(other)._load()
        if (a.n, a.m, a.ndim) != (b.n, b.m, b.ndim):
            raise QuadrantsTypeError(f"frobenius_inner() needs two operands of one shape, got "
                                     f"a {a._describe()} and a {b._describe()}")
        return _sum([mul(x, y) for x, y in zip(a.entries, b.entries)])

    def norm(self, eps=0):
        s = self.norm_sqr()
        return ops.sqrt(add(s, eps) if not _is_zero(eps) else s)

    def norm_inv(self, eps=0):
        s = self.norm_sqr()
        return ops.rsqrt(add(s, eps) if not _is_zero(eps) else s)

    def normalized(self, eps=0):
        a = self._load()
        n = a.norm()
        inv = div(1, add(n, eps) if not _is_zero(eps) else n)
        return a._like([mul(x, inv) for x in a.entries])

    def transpose(self):
        a = self._load()
        if a.ndim == 1:
            # A vector is neither a row nor a column; upstream's wording.
            raise QuadrantsTypeError("`transpose()` cannot apply to a vector. If you want "
                                     "something like `a @ b.transpose()`, write "
                                     "`a.outer_product(b)` instead.")
        return Matrix._make([a.entries[i * a.m + j] for j in range(a.m) for i in range(a.n)],
                            a.m, a.n, 2)

    @property
    def T(self):  # pylint: disable=invalid-name
        return self.transpose()

    def trace(self):
        self._need_square("trace()")
        a = self._load()
        return _sum([a.entries[i * a.n + i] for i in range(a.n)])

    def determinant(self):
        self._need_square("determinant()", (1, 2, 3, 4))
        a = self._load()
        return _det([a.entries[i * a.n:(i + 1) * a.n] for i in range(a.n)])

    def inverse(self):
        """The inverse: closed forms up to 4x4, Gauss-Jordan elimination
        with partial pivoting above (unrolled; pivots chosen at run time)."""
        self._need_square("inverse()")
        a = self._load()
        n = a.n
        rows = [a.entries[i * n:(i + 1) * n] for i in range(n)]
        if n > 4:
            return Matrix._make(_pivoted_inverse(rows), n, n, 2)
        inv_det = div(1, _det(rows))
        if n == 1:
            return Matrix._make([inv_det], 1, 1, 2)
        out = []
        for i in range(n):
            for j in range(n):
                # The adjugate: entry (i, j) is the (j, i) cofactor.
                minor = [[rows[r][c] for c in range(n) if c != i] for r in range(n) if r != j]
                cof = _det(minor)
                if (i + j) % 2:
                    cof = _neg(cof)
                out.append(mul(cof, inv_det))
        return Matrix._make(out, n, n, 2)

    def sum(self):
        return _sum(list(self._load().entries))

    def max(self):
        return _fold(_max2, self._load().entries)

    def min(self):
        return _fold(_min2, self._load().entries)

    def any(self):
        a = self._load()
        return _fold(lambda x, y: ops.binary("logical_or", x, y, lambda p, q: p or q),
                     [ops.binary("cmp_ne", e, 0, operator.ne) for e in a.entries])

    def all(self):
        a = self._load()
        return _fold(lambda x, y: ops.binary("logical_and", x, y, lambda p, q: p and q),
                     [ops.binary("cmp_ne", e, 0, operator.ne) for e in a.entries])

    def cast(self, dtype):
        return self._like([ops.cast(e, dtype) for e in self._load().entries])

    def to_list(self):
        a = self._load()
        if a.ndim == 1:
            return list(a.entries)
        return [list(a.entries[i * a.m:(i + 1) * a.m]) for i in range(a.n)]

    def tolist(self):
        return self.to_list()

    def to_numpy(self, dtype=None):
        if _in_kernel():
            raise QuadrantsSyntaxError("to_numpy() is host-only")
        return np.array(self.to_list(), dtype=dtype)

    def fill(self, value):
        """Sets every component to `value` (in kernels, of a local variable
        or a field/ndarray element)."""
        if _in_kernel():
            store(self, value, "fill()")
            return
        self.entries = [value] * len(self.entries)

    # ---- constructors ----------------------------------------------------------
    @staticmethod
    def zero(dt, n, m=None):
        if m is None:
            return Matrix._make([ops.cast(0, dt)] * n, n, 1, 1)
        return Matrix._make([ops.cast(0, dt)] * (n * m), n, m, 2)

    @staticmethod
    def one(dt, n, m=None):
        if m is None:
            return Matrix._make([ops.cast(1, dt)] * n, n, 1, 1)
        return Matrix._make([ops.cast(1, dt)] * (n * m), n, m, 2)

    @staticmethod
    def identity(dt, n):
        return Matrix._make([ops.cast(1 if i == j else 0, dt) for i in range(n)
                             for j in range(n)], n, n, 2)

    @staticmethod
    def unit(n, i, dt=None):
        dt = int if dt is None else dt
        return Matrix._make([ops.cast(1 if k == i else 0, dt) for k in range(n)], n, 1, 1)

    @staticmethod
    def rows(rows):
        rows = [_as_matrix(r) for r in rows]
        return Matrix([r.entries for r in rows])

    @staticmethod
    def cols(cols):
        return Matrix.rows(cols).transpose()

    @staticmethod
    def diag(dim, val):
        return Matrix._make([val if i == j else 0 for i in range(dim) for j in range(dim)],
                            dim, dim, 2)

    @staticmethod
    def field(n, m, dtype, shape=None, needs_grad=False, needs_dual=False, name=None,
              order=None, offset=None, layout=None):
        """qd.Matrix.field(n, m, dtype, shape=None, needs_grad=False, ...)."""
        return storage.matrix_field(n, m, 2, dtype, shape, needs_grad, needs_dual,
                                            name, order, offset, layout)

    @staticmethod
    def ndarray(n, m, dtype, shape, needs_grad=False):
        return storage.ndarray(matrix(n, m, dtype), shape, needs_grad)

    @staticmethod
    def tensor(n, m, dtype, shape, **kwargs):
        """qd.Matrix.tensor(n, m, dtype, shape, backend=qd.Backend.NDARRAY,
        needs_grad=False): a qd.MatrixTensor on the chosen backend."""
        return storage.matrix_tensor(n, m, dtype, shape, **kwargs)


class Vector(Matrix):
    """qd.Vector(arr, dt=None): a vector (a Matrix with ndim 1)."""

    __slots__ = ()

    def __new__(cls, arr=None, dt=None):
        if arr is not None and python_backend.active():
            return python_backend.matrix(arr, dt)
        self = Matrix.__new__(Matrix)
        Matrix.__init__(self, arr, dt, ndim=1)
        return self

    @staticmethod
    def field(n, dtype, shape=None, needs_grad=False, needs_dual=False, name=None,
              order=None, offset=None, layout=None):
        """qd.Vector.field(n, dtype, shape=None, needs_grad=False, ...)."""
        return storage.matrix_field(n, 1, 1, dtype, shape, needs_grad, needs_dual,
                                            name, order, offset, layout)

    @staticmethod
    def ndarray(n, dtype, shape, needs_grad=False):  # pylint: disable=arguments-differ
        return storage.ndarray(vector(n, dtype), shape, needs_grad)

    @staticmethod
    def tensor(n, dtype, shape, **kwargs):  # pylint: disable=arguments-differ
        """qd.Vector.tensor(n, dtype, shape, backend=qd.Backend.NDARRAY,
        needs_grad=False): a qd.VectorTensor on the chosen backend."""
        return storage.vector_tensor(n, dtype, shape, **kwargs)

    @staticmethod
    def zero(dt, n):  # pylint: disable=arguments-differ
        return Matrix.zero(dt, n)

    @staticmethod
    def one(dt, n):  # pylint: disable=arguments-differ
        return Matrix.one(dt, n)


class DynamicElement(Composite):
    """entries[index] for a run-time index: read as a select chain, written
    as an if chain (the components stay separate scalars)."""

    __slots__ = ("entries", "index")

    def __init__(self, entries, index):
        self.entries, self.index = entries, index

    def _load(self):
        # index <= k (not ==) makes an index out of range read the nearest
        # end, as a clamp-boundary ndarray's element is read.
        values = [context.load(e) for e in self.entries]
        result = values[-1]
        for k in range(len(values) - 2, -1, -1):
            cond = ops.binary("cmp_le", self.index, k, None)
            result = ops.select(cond, values[k], result)
        return result

    def _leaves(self):
        return [self]

    def _describe(self):
        return "a dynamically indexed component"

    def store(self, store_one):
        """Calls store_one(entry) under `if index == k` for each k."""
        b = context.builder()
        for k, e in enumerate(self.entries):
            cond = ops.binary("cmp_eq", self.index, k, None)
            branch = b.if_(context.to_expr(cond).stmt)
            b.push_block(branch, 0)
            try:
                store_one(e)
            finally:
                b.pop_block()


def _is_zero(x):
    return isinstance(x, numbers.Number) and x == 0


def _neg(e):
    e = context.load(e) if _in_kernel() else e
    if isinstance(e, Expr):
        return Expr(context.builder().unary("neg", e.stmt))
    return -e


def _sum(values):
    return _fold(add, values)


def _fold(fn, values):
    result = values[0]
    for v in values[1:]:
        result = fn(result, v)
    return result


def _pivoted_inverse(rows):
    """The entries of the inverse of the square matrix `rows` (lists of
    scalars), row after row: Gauss-Jordan elimination of [A | I], each
    column's pivot the largest remaining entry in magnitude. Row swaps are
    selects, so the code is straight-line and the pivots run-time values."""
    n = len(rows)
    left = [list(r) for r in rows]
    right = [[1 if i == j else 0 for j in range(n)] for i in range(n)]
    for k in range(n):
        best, pivot = ops.abs(left[k][k]), k
        for r in range(k + 1, n):
            size = ops.abs(left[r][k])
            better = ops.binary("cmp_gt", size, best, operator.gt)
            best = ops.select(better, size, best)
            pivot = ops.select(better, r, pivot)
        for r in range(k + 1, n):
            swap = ops.binary("cmp_eq", pivot, r, operator.eq)
            for side, first in ((left, k), (right, 0)):
                for c in range(first, n):
                    top, other = side[k][c], side[r][c]
                    side[k][c] = ops.select(swap, other, top)
                    side[r][c] = ops.select(swap, top, other)
        inv_pivot = div(1, left[k][k])
        left[k] = [0] * k + [mul(v, inv_pivot) for v in left[k][k:]]
        right[k] = [mul(v, inv_pivot) for v in right[k]]
        for r in range(n):
            if r == k:
                continue
            factor = left[r][k]
            left[r] = left[r][:k] + [0] + [sub(left[r][c], mul(factor, left[k][c]))
                                           for c in range(k + 1, n)]
            right[r] = [sub(right[r][c], mul(factor, right[k][c])) for c in range(n)]
    return [v for row in right for v in row]


def _det(rows):
    n = len(rows)
    if n == 1:
        return rows[0][0]
    if n == 2:
        return sub(mul(rows[0][0], rows[1][1]), mul(rows[0][1], rows[1][0]))
    terms = []
    for j in range(n):
        minor = [r[:j] + r[j + 1:] for r in rows[1:]]
        t = mul(rows[0][j], _det(minor))
        terms.append(_neg(t) if j % 2 else t)
    return _sum(terms)


def _as_matrix(x):
    if isinstance(x, Matrix):
        return x
    if isinstance(x, (list, tuple, np.ndarray)):
        return Matrix(x)
    raise QuadrantsTypeError(f"expected a vector or matrix, got {type(x).__name__}")


def elementwise(name, a, b, python_fn):
    """a `name` b component by component, a scalar operand broadcast."""
    if _in_kernel():
        a, b = context.load(a), context.load(b)
    if isinstance(a, (list, tuple)):
        a = Matrix(a)
    if isinstance(b, (list, tuple)):
        b = Matrix(b)
    if name == "matmul":
        return matmul(a, b)
    if isinstance(a, Matrix) and isinstance(b, Matrix):
        if (a.n, a.m, a.ndim) != (b.n, b.m, b.ndim):
            raise QuadrantsTypeError(f"operator {_OP_SYMBOL.get(name, name)}: shapes do not "
                                     f"match: {a._describe()} and {b._describe()}")
        return a._like([ops.binary(name, x, y, python_fn)
                        for x, y in zip(a.entries, b.entries)])
    if isinstance(a, Matrix):
        if isinstance(b, Composite):
            raise QuadrantsTypeError(f"cannot combine a {a._describe()} with {b._describe()}")
        return a._like([ops.binary(name, x, b, python_fn) for x in a.entries])
    if isinstance(a, Composite):
        raise QuadrantsTypeError(f"cannot combine {a._describe()} with a {b._describe()}")
    return b._like([ops.binary(name, a, y, python_fn) for y in b.entries])


_OP_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//",
              "mod": "%", "pow": "**", "cmp_lt": "<", "cmp_le": "<=", "cmp_gt": ">",
              "cmp_ge": ">=", "cmp_eq": "==", "cmp_ne": "!=", "max": "max", "min": "min"}


def matmul(a, b):
    """a @ b: matrix-matrix, matrix-vector (a column), vector-matrix (a row)
    or vector-vector (the dot product)."""
    if _in_kernel():
        a, b = context.load(a), context.load(b)
    a, b = _as_matrix(a), _as_matrix(b)
    if a.ndim == 1 and b.ndim == 1:
        if a.n != b.n:
            raise QuadrantsTypeError(f"operator @: shapes do not match: {a._describe()} "
                                     f"@ {b._describe()}")
        return a.dot(b)
    a_cols = a.m if a.ndim == 2 else a.n
    b_rows = b.n
    if a_cols != b_rows:
        raise QuadrantsTypeError(f"operator @: shapes do not match: {a._describe()} @ "
                                 f"{b._describe()} ({a_cols} columns against {b_rows} rows)")
    if a.ndim == 1:  # row vector times matrix
        return Matrix._make([_sum([mul(a.entries[k], b.entries[k * b.m + j])
                                   for k in range(a.n)]) for j in range(b.m)], b.m, 1, 1)
    if b.ndim == 1:
        return Matrix._make([_sum([mul(a.entries[i * a.m + k], b.entries[k])
                                   for k in range(a.m)]) for i in range(a.n)], a.n, 1, 1)
    return Matrix._make([_sum([mul(a.entries[i * a.m + k], b.entries[k * b.m + j])
                               for k in range(a.m)])
                         for i in range(a.n) for j in range(b.m)], a.n, b.m, 2)


# ---- types ------------------------------------------------------------------------

class MatrixType:
    """qd.types.vector(n, dtype) / qd.types.matrix(n, m, dtype): a type that
    annotates locals, parameters and ndarray elements, and constructs
    values: vec3(1, 2, 3), vec3(0) (every component), mat2([[1, 0], [0, 1]])."""

    _qd_intrinsic = True

    def __init__(self, n, m, ndim, dtype):
        # qd.types.vector() / qd.types.matrix() leave the sizes open: as an
        # ndarray annotation it takes vectors (matrices) of any size.
        open_sizes = n is None and (m is None or ndim == 1)
        for extent in (n, m):
            if not open_sizes and (not isinstance(extent, numbers.Integral) or extent <= 0):
                raise QuadrantsTypeError(f"vector and matrix sizes must be positive ints, "
                                         f"got {extent!r}")
        self.n, self.m = (None, None) if open_sizes else (int(n), int(m))
        self.ndim = ndim
        self._dtype = dtype
        self.unpacked = False  # see vector()

    @property
    def is_open(self):
        """Whether the sizes are left open (an ndarray annotation only)."""
        return self.n is None

    def accepts(self, other):
        """Whether an ndarray of `other` elements matches this annotation:
        the same type, or for open sizes any vector (matrix) of the dtype."""
        if not self.is_open:
            return self == other
        return isinstance(other, MatrixType) and other.ndim == self.ndim and (
            self._dtype is None or other.dtype == self.dtype)

    def _need_sizes(self, what):
        if self.unpacked:
            raise QuadrantsSyntaxError(f"{what}: a vector type with unpacked=True describes a "
                                       f"@qd.dataclass member's layout; it makes no values, "
                                       f"fields or ndarrays of its own")
        if self.is_open:
            raise QuadrantsTypeError(f"{what}: {self!r} leaves its sizes open, which only "
                                     f"an ndarray annotation may do")

    @property
    def dtype(self):
        return types.normalize(self._dtype if self._dtype is not None else float)

    @property
    def shape(self):
        return (self.n,) if self.ndim == 1 else (self.n, self.m)

    def get_shape(self):
        return self.shape

    @property
    def size(self):
        return self.n * self.m

    def _key(self):
        return (self.n, self.m, self.ndim, self.dtype)

    def __eq__(self, other):
        return isinstance(other, MatrixType) and self._key() == other._key()

    def __hash__(self):
        return hash((self.n, self.m, self.ndim))

    def __repr__(self):
        if self.is_open:
            return f"{'vector' if self.ndim == 1 else 'matrix'}(any size, " \
                   f"{self._dtype if self._dtype is not None else 'any dtype'})"
        name = f"vector({self.n}" if self.ndim == 1 else f"matrix({self.n}, {self.m}"
        return f"{name}, {self._dtype if self._dtype is not None else 'float'})"

    def _describe(self):
        return _describe_shape(self.n, self.m, self.ndim)

    def __call__(self, *args):
        self._need_sizes("constructing a value")
        flat = []
        for a in args:
            a = context.load(a) if _in_kernel() else a
            if isinstance(a, Matrix):
                flat.extend(a.entries)
            elif isinstance(a, (list, tuple, np.ndarray)):
                flat.extend(_flatten(a))
            else:
                flat.append(a)
        if len(flat) == 1:
            flat = flat * (self.n * self.m)
        if len(flat) != self.n * self.m:
            raise QuadrantsTypeError(f"{self!r} takes {self.n * self.m} values, got "
                                     f"{len(flat)}")
        return self.cast(Matrix._make(flat, self.n, self.m, self.ndim))

    def cast(self, value):
        """value as this type (a shape mismatch is an error)."""
        self._need_sizes("a value of this type")
        value = context.load(value) if _in_kernel() else value
        if isinstance(value, (list, tuple, np.ndarray)):
            value = Matrix(value, ndim=self.ndim)
        if not isinstance(value, Matrix):
            if isinstance(value, Composite):
                raise QuadrantsTypeError(f"expected a {self._describe()}, got "
                                         f"{value._describe()}")
            value = Matrix._make([value] * (self.n * self.m), self.n, self.m, self.ndim)
        if (value.n, value.m) != (self.n, self.m) and not (
                value.ndim == 1 and self.ndim == 1 and value.n == self.n):
            raise QuadrantsTypeError(f"expected a {self._describe()}, got a "
                                     f"{value._describe()}")
        dt = self.dtype
        return Matrix._make([ops.cast(e, dt) for e in value.entries], self.n, self.m,
                            self.ndim)

    def field(self, shape=None, needs_grad=False, needs_dual=False, name=None, order=None,
              offset=None, layout=None):
        self._need_sizes("field()")
        return storage.matrix_field(self.n, self.m, self.ndim, self.dtype, shape,
                                            needs_grad, needs_dual, name, order, offset,
                                            layout)

    def ndarray(self, shape, needs_grad=False):
        self._need_sizes("ndarray()")
        return storage.ndarray(self, shape, needs_grad)

    def zero(self):
        return self(0)

    def _flat_dtypes(self):
        return [self.dtype] * (self.n * self.m)

    def _from_flat(self, values):
        return Matrix._make(values, self.n, self.m, self.ndim)

    def _flatten_host(self, value, what):
        arr = np.asarray(value.to_list() if isinstance(value, Matrix) else value)
        if arr.shape != self.shape:
            raise ArgumentValueError(f"{what} expects a {self._describe()} (shape "
                                     f"{self.shape}), got shape {arr.shape}")
        return arr.reshape(-1).tolist()


def _flatten(a):
    if isinstance(a, np.ndarray):
        return a.reshape(-1).tolist()
    out = []
    for x in a:
        if isinstance(x, (list, tuple, np.ndarray)):
            out.extend(_flatten(x))
        elif isinstance(x, Matrix):
            out.extend(x.entries)
        else:
            out.append(x)
    return out


def vector(n=None, dtype=None, unpacked=False):
    """qd.types.vector(n, dtype, unpacked=False). As a struct member,
    unpacked=True stores the vector as n scalar members _<name>0 ... (its
    components are separate scalars anyway; upstream's layout flag), read and
    written as s.<name>[i] with compile-time i."""
    vtype = MatrixType(n, 1, 1, dtype)
    if not isinstance(unpacked, bool):
        raise QuadrantsTypeError(f"qd.types.vector(unpacked=...) must be a bool, got "
                                 f"{unpacked!r}")
    vtype.unpacked = unpacked
    return vtype


def matrix(n=None, m=None, dtype=None):
    """qd.types.matrix(n, m, dtype)."""
    return MatrixType(n, m, 2, dtype)


def make_local(compiler, name, value, vtype=None):
    """A local variable holding a copy of composite `value`: one Var per
    scalar component (a Matrix or Struct of Vars)."""
    value = context.load(value)
    if vtype is not None:
        value = vtype.cast(value)
    if isinstance(value, Matrix):
        exprs = [context.to_expr(e) for e in value.entries]
        dt = exprs[0].dtype
        for e in exprs[1:]:
            dt = types.promote(dt, e.dtype)
        out = []
        for k, e in enumerate(exprs):
            var = compiler.new_scalar_var(f"{name}[{k}]", dt)
            compiler.ctx.builder.local_store(var.alloca, ops.cast(e, dt).stmt)
            out.append(var)
        return value._like(out)
    if not isinstance(value, Composite):  # a dynamically indexed component, loaded
        expr = context.to_expr(value)
        var = compiler.new_scalar_var(name, expr.dtype)
        compiler.ctx.builder.local_store(var.alloca, expr.stmt)
        return var
    return value._make_local(compiler, name)


def unpacked(value):
    """What `a, b = value` binds: a vector's components, a matrix's rows."""
    if value.ndim == 1:
        return list(value.entries)
    m = value.m
    return [Matrix._make(value.entries[i * m:(i + 1) * m], m, 1, 1) for i in range(value.n)]


def is_local(value):
    """Whether composite `value` is a local variable (all Var components)."""
    return isinstance(value, Composite) and all(isinstance(e, Var) for e in value._leaves())


def store(value_ref, value, what="assignment"):
    """Stores `value` into the components of `value_ref` (a Matrix/Struct of
    Vars or GlobalRefs, or a scalar Var/GlobalRef/DynamicElement)."""
    b = context.builder()
    if isinstance(value_ref, DynamicElement):
        value_ref.store(lambda e: store(e, value, what))
        return
    if isinstance(value_ref, Var):
        e = context.to_expr(value, like=value_ref.dtype)
        b.local_store(value_ref.alloca, ops.cast(e, value_ref.dtype).stmt)
        return
    if isinstance(value_ref, GlobalRef):
        e = context.to_expr(value, like=value_ref.dtype)
        b.global_store(value_ref.ptr, ops.cast(e, value_ref.dtype).stmt)
        return
    if isinstance(value_ref, Matrix):
        value = context.load(value)
        if isinstance(value, (list, tuple)):
            value = Matrix(value, ndim=value_ref.ndim)
        if isinstance(value, Matrix):
            if (value.n, value.m) != (value_ref.n, value_ref.m):
                # The parenthesis is upstream's wording.
                raise QuadrantsTypeError(f"{what}: shapes do not match: a "
                                         f"{value_ref._describe()} is assigned a "
                                         f"{value._describe()} (cannot assign "
                                         f"'{value._ir_type()}' to '{value_ref._ir_type()}')")
            for r, v in zip(value_ref.entries, value.entries):
                store(r, v, what)
            return
        if isinstance(value, Composite):
            raise QuadrantsTypeError(f"{what}: a {value_ref._describe()} is assigned "
                                     f"{value._describe()}")
        # A scalar is broadcast to every component (like numpy assignment).
        for r in value_ref.entries:
            store(r, value, what)
        return
    if isinstance(value_ref, Composite):
        value_ref._store(value, what)
        return
    raise QuadrantsSyntaxError(f"{what}: this value cannot be assigned to")


def atomic(name, ref, value):
    """An atomic update of every component of `ref` (a Matrix of refs) by
    `value` (a matrix of the same shape, or a scalar for all), returning
    the old values."""
    if not isinstance(ref, Matrix):
        raise QuadrantsTypeError(f"qd.{name}() on {ref._describe()}: index the component "
                                 f"with a compile-time index, or use an augmented "
                                 f"assignment (+=), which is atomic per component")
    value = context.load(value)
    if isinstance(value, (list, tuple)):
        value = Matrix(value, ndim=ref.ndim)
    if isinstance(value, Matrix):
        if (value.n, value.m) != (ref.n, ref.m):
            raise QuadrantsTypeError(f"qd.{name}: shapes do not match: a {ref._describe()} "
                                     f"updated by a {value._describe()}")
        values = value.entries
    else:
        values = [value] * len(ref.entries)
    fn = getattr(ops, name)
    return ref._like([fn(r, v) for r, v in zip(ref.entries, values)])


# Every Matrix method works both in kernels and on the host, so the
# transformer calls them directly instead of inlining their Python source.
for _name, _fn in list(vars(Matrix).items()):
    if callable(_fn) and not _name.startswith("__"):
        try:
            _fn._qd_intrinsic = True
        except AttributeError:
            pass
for _fn in (Matrix.zero, Matrix.one, Matrix.identity, Matrix.unit, Matrix.rows,
            Matrix.cols, Matrix.diag, Vector.zero, Vector.one):
    _fn._qd_intrinsic = True


ops.composites.register(Matrix=Matrix, elementwise=elementwise, atomic=atomic)
