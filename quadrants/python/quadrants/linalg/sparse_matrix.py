"""Sparse matrices built by kernels: SparseMatrixBuilder collects (row,
column, value) triplets that kernels append with `builder[i, j] += v`
(an atomic append into the builder's ndarrays), and build() sums them
into a SparseMatrix, kept on the host in compressed sparse row form.

    builder = qd.linalg.SparseMatrixBuilder(n, n, max_num_triplets=4 * n)

    @qd.kernel
    def fill(b: qd.types.sparse_matrix_builder()):
        for i in range(n):
            b[i, i] += 2.0

    fill(builder)
    A = builder.build()
    y = A @ x     # x: a numpy array or a qd.ndarray
"""
import numpy as np

from quadrants.lang import context, ops, types
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from quadrants.lang.ndarray import Ndarray, ndarray
from quadrants.lang.simt._tile import _compiled

_STORAGE_FORMATS = ("col_major", "row_major")


def _check_format(storage_format):
    if storage_format not in _STORAGE_FORMATS:
        raise QuadrantsTypeError(f"storage_format must be one of {_STORAGE_FORMATS}, got "
                                 f"{storage_format!r}")


def _check_dtype(dtype):
    dtype = types.normalize(dtype)
    if dtype not in (types.f32, types.f64):
        raise QuadrantsTypeError(f"a sparse matrix holds f32 or f64 values, got {dtype}")
    return dtype


class SparseMatrix:
    """An n x m sparse matrix of f32 or f64 values, kept in CSR on the host
    (storage_format, upstream's Eigen layout, is recorded; no result depends
    on it): element access and assignment, +, -, scalar and elementwise *,
    @ with a sparse matrix or a vector (numpy array, field or qd.ndarray),
    transpose()."""

    def __init__(self, n=None, m=None, sm=None, dtype=types.f32, storage_format="col_major"):
        _check_format(storage_format)
        self.dtype = _check_dtype(dtype)
        self.storage_format = storage_format
        if sm is not None:
            sm = np.asarray(sm)
            if sm.ndim != 2:
                raise QuadrantsTypeError(f"SparseMatrix(sm=...) takes a 2-D array, got "
                                         f"{sm.ndim}-D")
            n, m = sm.shape
            rows, cols = np.nonzero(sm)
            values = sm[rows, cols]
        else:
            rows = cols = np.zeros(0, np.int64)
            values = np.zeros(0)
        if n is None or m is None or n <= 0 or m <= 0:
            raise QuadrantsTypeError(f"a sparse matrix needs positive n and m, got n={n}, m={m}")
        self.n, self.m = int(n), int(m)
        self._set_triplets(rows, cols, values)

    # ---- storage -----------------------------------------------------------

    def _np_dtype(self):
        return np.float32 if self.dtype == types.f32 else np.float64

    def _set_triplets(self, rows, cols, values):
        """Stores the triplets, summing duplicates, sorted by (row, column)."""
        rows = np.asarray(rows, np.int64)
        cols = np.asarray(cols, np.int64)
        values = np.asarray(values, self._np_dtype())
        if rows.size and (rows.min() < 0 or rows.max() >= self.n or cols.min() < 0 or
                          cols.max() >= self.m):
            raise QuadrantsRuntimeError(f"a triplet lies outside the {self.n} x {self.m} matrix")
        key = rows * self.m + cols
        unique, inverse = np.unique(key, return_inverse=True)
        summed = np.zeros(unique.size, self._np_dtype())
        np.add.at(summed, inverse, values)
        self._rows = unique // self.m
        self._cols = unique % self.m
        self._data = summed
        self._indptr = np.searchsorted(self._rows, np.arange(self.n + 1))

    def _like(self, rows, cols, values, n=None, m=None):
        out = SparseMatrix.__new__(SparseMatrix)
        out.dtype, out.storage_format = self.dtype, self.storage_format
        out.n = self.n if n is None else n
        out.m = self.m if m is None else m
        out._set_triplets(rows, cols, values)
        return out

    def _find(self, i, j):
        start, stop = self._indptr[i], self._indptr[i + 1]
        k = start + np.searchsorted(self._cols[start:stop], j)
        return k if k < stop and self._cols[k] == j else -1

    def _check_index(self, key):
        if not isinstance(key, tuple) or len(key) != 2:
            raise QuadrantsTypeError("a sparse matrix is indexed by [i, j]")
        i, j = (int(k) for k in key)
        if not (0 <= i < self.n and 0 <= j < self.m):
            raise IndexError(f"[{i}, {j}] is outside the {self.n} x {self.m} matrix")
        return i, j

    # ---- elements ----------------------------------------------------------

    @property
    def shape(self):
        return (self.n, self.m)

    def __getitem__(self, key):
        i, j = self._check_index(key)
        k = self._find(i, j)
        return self._data[k].item() if k >= 0 else 0.0

    def __setitem__(self, key, value):
        i, j = self._check_index(key)
        k = self._find(i, j)
        if k >= 0:
            self._data[k] = value
        else:
            self._set_triplets(np.append(self._rows, i), np.append(self._cols, j),
                               np.append(self._data, value))

    def to_numpy(self):
        """The matrix as a dense numpy array."""
        dense = np.zeros((self.n, self.m), self._np_dtype())
        dense[self._rows, self._cols] = self._data
        return dense

    def __str__(self):
        return "\n".join("[" + ", ".join(f"{v:g}" for v in row) + "]"
                         for row in self.to_numpy())

    def __repr__(self):
        return (f"<SparseMatrix {self.n}x{self.m} {self.dtype} with {self._data.size} stored "
                f"values>")

    def build_from_ndarray(self, triplets):
        """Fills the matrix from an ndarray of (row, column, value) rows
        (a (k, 3) array or k vectors of 3), replacing what it held."""
        array = triplets.to_numpy() if isinstance(triplets, Ndarray) else np.asarray(triplets)
        array = array.reshape(-1, 3)
        self._set_triplets(array[:, 0].astype(np.int64), array[:, 1].astype(np.int64),
                           array[:, 2])

    # ---- arithmetic --------------------------------------------------------

    def _same_shape(self, other, op):
        if not isinstance(other, SparseMatrix):
            raise QuadrantsTypeError(f"a sparse matrix {op} takes a sparse matrix, got "
                                     f"{type(other).__name__}")
        if other.shape != self.shape:
            raise QuadrantsTypeError(f"sparse matrix {op}: shapes {self.shape} and "
                                     f"{other.shape} differ")

    def __add__(self, other):
        self._same_shape(other, "addition")
        return self._like(np.concatenate([self._rows, other._rows]),
                          np.concatenate([self._cols, other._cols]),
                          np.concatenate([self._data, other._data]))

    def __sub__(self, other):
        self._same_shape(other, "subtraction")
        return self._like(np.concatenate([self._rows, other._rows]),
                          np.concatenate([self._cols, other._cols]),
                          np.concatenate([self._data, -other._data]))

    def __mul__(self, other):
        if isinstance(other, SparseMatrix):
            self._same_shape(other, "elementwise product")
            key = self._rows * self.m + self._cols
            other_key = other._rows * other.m + other._cols
            common, mine, theirs = np.intersect1d(key, other_key, return_indices=True)
            return self._like(common // self.m, common % self.m,
                              self._data[mine] * other._data[theirs])
        if isinstance(other, (int, float, np.number)):
            return self._like(self._rows, self._cols, self._data * other)
        return NotImplemented

    __rmul__ = __mul__

    def transpose(self):
        return self._like(self._cols, self._rows, self._data, n=self.m, m=self.n)

    def __matmul__(self, other):
        if isinstance(other, SparseMatrix):
            if self.m != other.n:
                raise QuadrantsTypeError(f"sparse matrix product: shapes {self.shape} and "
                                         f"{other.shape} do not chain")
            # Each stored a_ik meets the stored b_kj of row k of `other`.
            counts = other._indptr[self._cols + 1] - other._indptr[self._cols]
            left = np.repeat(np.arange(self._data.size), counts)
            starts = np.repeat(other._indptr[self._cols], counts)
            within = np.arange(left.size) - np.repeat(np.cumsum(counts) - counts, counts)
            right = starts + within
            return self._like(self._rows[left], other._cols[right],
                              self._data[left] * other._data[right], m=other.m)
        as_ndarray = isinstance(other, Ndarray)
        # Fields and ndarrays are read back; the result is an ndarray for an
        # ndarray, else a numpy array.
        x = other.to_numpy() if hasattr(other, "to_numpy") else np.asarray(other)
        if x.shape != (self.m,):
            raise QuadrantsTypeError(f"sparse matrix times vector: a vector of {self.m} values "
                                     f"is expected, got shape {x.shape}")
        y = np.bincount(self._rows, weights=self._data * x[self._cols],
                        minlength=self.n).astype(self._np_dtype())
        if not as_ndarray:
            return y
        out = ndarray(self.dtype, (self.n,))
        out.from_numpy(y)
        return out


class SparseMatrixBuilder:
    """Collects (row, column, value) triplets for an n x m sparse matrix.
    Kernels take it as a qd.types.sparse_matrix_builder() argument and add
    entries with `builder[i, j] += v` (or -=); an entry added twice sums. At
    most `max_num_triplets` additions are kept: build() raises when more
    were made, and nothing is written past the storage."""

    def __init__(self, num_rows=None, num_cols=None, max_num_triplets=0, dtype=types.f32,
                 storage_format="col_major"):
        _check_format(storage_format)
        if num_rows is None or num_cols is None or num_rows <= 0 or num_cols <= 0:
            raise QuadrantsTypeError(f"SparseMatrixBuilder needs positive num_rows and "
                                     f"num_cols, got {num_rows} and {num_cols}")
        if max_num_triplets <= 0:
            raise QuadrantsTypeError(f"SparseMatrixBuilder needs max_num_triplets > 0, got "
                                     f"{max_num_triplets}")
        self.num_rows, self.num_cols = int(num_rows), int(num_cols)
        self.max_num_triplets = int(max_num_triplets)
        self.dtype = _check_dtype(dtype)
        self.storage_format = storage_format
        self._rows = ndarray(types.i32, (self.max_num_triplets,))
        self._cols = ndarray(types.i32, (self.max_num_triplets,))
        self._vals = ndarray(self.dtype, (self.max_num_triplets,))
        self._count = ndarray(types.i32, (1,))

    def _qd_subscript(self, compiler, node, index):
        if not isinstance(index, tuple) or len(index) != 2:
            raise QuadrantsTypeError("a sparse matrix builder is indexed by [i, j]")
        return _TripletRef(self, index)

    @_compiled
    def _append(self, i, j, value):
        k = ops.atomic_add(self._count[0], 1)
        if k < self._rows.shape[0]:
            self._rows[k] = i
            self._cols[k] = j
            self._vals[k] = value

    def num_triplets(self):
        """How many triplets kernels added (may exceed max_num_triplets)."""
        return int(self._count.to_numpy()[0])

    def print_triplets(self):
        count = min(self.num_triplets(), self.max_num_triplets)
        rows, cols, vals = (a.to_numpy()[:count] for a in (self._rows, self._cols, self._vals))
        for r, c, v in zip(rows, cols, vals):
            print(f"({r}, {c}) val={v}")

    def build(self, dtype=None):
        """The SparseMatrix of the triplets added so far (duplicates summed)."""
        added = self.num_triplets()
        if added > self.max_num_triplets:
            raise QuadrantsRuntimeError(f"SparseMatrixBuilder: kernels added {added} triplets "
                                        f"but max_num_triplets is {self.max_num_triplets}; the "
                                        f"extra ones were dropped. Make it larger")
        matrix = SparseMatrix(self.num_rows, self.num_cols,
                              dtype=self.dtype if dtype is None else dtype,
                              storage_format=self.storage_format)
        matrix._set_triplets(self._rows.to_numpy()[:added], self._cols.to_numpy()[:added],
                             self._vals.to_numpy()[:added])
        return matrix


class _TripletRef:
    """builder[i, j] in kernel code: the target of += and -=."""

    def __init__(self, builder, index):
        self.builder, self.index = builder, index

    def _qd_augassign(self, compiler, node, op, value):
        if op not in ("add", "sub"):
            raise TypeError(f"a sparse matrix builder takes += and -=, not the '{op}' "
                            f"augmented assignment")
        if op == "sub":
            value = ops.binary("sub", 0, context.load(value), lambda a, b: a - b)
        compiler.inline_python(node, self.builder._append, [*self.index, value], {})
