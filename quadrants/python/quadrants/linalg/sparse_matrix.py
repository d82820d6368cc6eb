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

from quadrants.lang import context, ops, runtime, types
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsTypeError)
from quadrants.lang.numerics import bit_cast
from quadrants.lang.ndarray import Ndarray, ndarray
from quadrants.lang.simt._tile import _compiled
from quadrants.linalg import sparse_kernels

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
        # The builder whose fill kernels receive the gradients of the stored
        # entries (set by a build() under qd.ad.Tape; new contents drop it).
        self._grad_builder = None
        self._grad_lost = False
        self._version = getattr(self, "_version", 0) + 1
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

    def _like(self, rows, cols, values, n=None, m=None, other=None):
        """A new matrix of these triplets, made from self (and `other`)."""
        out = SparseMatrix.__new__(SparseMatrix)
        out.dtype, out.storage_format = self.dtype, self.storage_format
        out.n = self.n if n is None else n
        out.m = self.m if m is None else m
        out._set_triplets(rows, cols, values)
        # Entry gradients reach builders from matrices built under a tape
        # only; a taped solve with a matrix derived from one says so.
        out._grad_lost = any(op._grad_builder is not None or op._grad_lost
                             for op in (self, other) if op is not None)
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
        lost = self._grad_lost or self._grad_builder is not None
        if k >= 0:
            self._data[k] = value
            self._grad_builder = None
            self._version += 1
        else:
            self._set_triplets(np.append(self._rows, i), np.append(self._cols, j),
                               np.append(self._data, value))
        self._grad_lost = lost

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
                          np.concatenate([self._data, other._data]), other=other)

    def __sub__(self, other):
        self._same_shape(other, "subtraction")
        return self._like(np.concatenate([self._rows, other._rows]),
                          np.concatenate([self._cols, other._cols]),
                          np.concatenate([self._data, -other._data]), other=other)

    def __mul__(self, other):
        if isinstance(other, SparseMatrix):
            self._same_shape(other, "elementwise product")
            key = self._rows * self.m + self._cols
            other_key = other._rows * other.m + other._cols
            common, mine, theirs = np.intersect1d(key, other_key, return_indices=True)
            return self._like(common // self.m, common % self.m,
                              self._data[mine] * other._data[theirs], other=other)
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
                              self._data[left] * other._data[right], m=other.m, other=other)
        shape = tuple(other.shape) if hasattr(other, "shape") else np.shape(other)
        if shape != (self.m,):
            raise QuadrantsTypeError(f"sparse matrix times vector: a vector of {self.m} values "
                                     f"is expected, got shape {shape}")
        if isinstance(other, Ndarray):
            # An ndarray stays on the device: the product is a kernel.
            out = ndarray(self.dtype, (self.n,))
            self._device_csr().matvec(other, out)
            return out
        # Fields and numpy arrays: a numpy array, computed on the host.
        x = other.to_numpy() if hasattr(other, "to_numpy") else np.asarray(other)
        return np.bincount(self._rows, weights=self._data * x[self._cols],
                           minlength=self.n).astype(self._np_dtype())

    def _device_csr(self):
        """The CSR arrays as ndarrays, made once per contents."""
        cached = getattr(self, "_device", None)
        if cached is None or cached[0] != self._version:
            cached = (self._version, sparse_kernels.DeviceCsr(self))
            self._device = cached
        return cached[1]


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
        # Values are kept as their bits (an integer array), which have no
        # adjoint: the gradient kernel of a fill replays the slot counter
        # with its final value, so no gradient may depend on the slot.
        self._bits_dtype = types.i32 if self.dtype == types.f32 else types.i64
        self._vals = ndarray(self._bits_dtype, (self.max_num_triplets,))
        self._count = ndarray(types.i32, (1,))
        # The gradient path, keyed by entry instead of by slot: after a
        # build() under qd.ad.Tape, the matrix's CSR pattern is copied here
        # and `_grad_on` set, so a fill's gradient kernel finds each added
        # value's stored entry and reads its adjoint from `_entry_sink.grad`.
        self._pattern_indptr = ndarray(types.i32, (self.num_rows + 1,))
        self._pattern_indices = ndarray(types.i32, (self.max_num_triplets,))
        self._entry_sink = ndarray(self.dtype, (self.max_num_triplets,), needs_grad=True)
        self._grad_on = ndarray(types.i32, (1,))

    def _qd_subscript(self, compiler, node, index):
        if not isinstance(index, tuple) or len(index) != 2:
            raise QuadrantsTypeError("a sparse matrix builder is indexed by [i, j]")
        return _TripletRef(self, index)

    @_compiled
    def _append(self, i, j, value):
        v = ops.cast(value, self.dtype)
        bits = bit_cast(v, self._bits_dtype)
        k = ops.atomic_add(self._count[0], 1)
        if k < self._rows.shape[0]:
            self._rows[k] = i
            self._cols[k] = j
            self._vals[k] = bits
        if self._grad_on[0] != 0:
            slot = -1
            for t in range(self._pattern_indptr[i], self._pattern_indptr[i + 1]):
                if self._pattern_indices[t] == j:
                    slot = t
            if slot >= 0:
                self._entry_sink[slot] += v

    def num_triplets(self):
        """How many triplets kernels added (may exceed max_num_triplets)."""
        return int(self._count.to_numpy()[0])

    def print_triplets(self):
        count = min(self.num_triplets(), self.max_num_triplets)
        rows, cols = (a.to_numpy()[:count] for a in (self._rows, self._cols))
        vals = self._vals.to_numpy()[:count].view(
            np.float32 if self.dtype == types.f32 else np.float64)
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
        values = self._vals.to_numpy()[:added].view(
            np.float32 if self.dtype == types.f32 else np.float64)
        matrix._set_triplets(self._rows.to_numpy()[:added], self._cols.to_numpy()[:added],
                             values)
        taped = runtime.state.tape is not None
        if taped:
            self._pattern_indptr.from_numpy(matrix._indptr.astype(np.int32))
            indices = np.zeros(self.max_num_triplets, np.int32)
            indices[:matrix._cols.size] = matrix._cols
            self._pattern_indices.from_numpy(indices)
            matrix._grad_builder = self
        self._grad_on.from_numpy(np.array([int(taped)], np.int32))
        return matrix

    def clear(self):
        """Forgets the triplets added so far (the builder can be filled
        again, e.g. once per step of an optimization)."""
        self._count.from_numpy(np.zeros(1, np.int32))

    def _add_entry_gradients(self, matrix, entry_grads):
        """Adds d loss / d (stored entry s of `matrix`) for every s to the
        gradient the fill kernels' .grad reads."""
        if matrix._grad_builder is not self or \
                self._pattern_indptr.to_numpy().tolist() != matrix._indptr.tolist():
            raise QuadrantsGradientError("the sparse matrix's builder was built again or "
                                         "refilled after the matrix was taped; build one "
                                         "matrix per builder within a qd.ad.Tape")
        grads = self._entry_sink.grad.to_numpy()
        grads[:entry_grads.size] += entry_grads
        self._entry_sink.grad.from_numpy(grads)


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
