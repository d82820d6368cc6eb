"""Kernels over a SparseMatrix's CSR arrays on the device: the sparse
matrix-vector product and the vector steps of conjugate gradient."""
import numpy as np

from quadrants.lang import ops, types
from quadrants.lang.kernel import kernel
from quadrants.lang.ndarray import ndarray
from quadrants.lang.types import ndarray as ndarray_type
from quadrants.lang.types import template


@kernel
def spmv(indptr: ndarray_type(), indices: ndarray_type(), data: ndarray_type(),
         x: ndarray_type(), y: ndarray_type(), dtype: template()):
    """y = A x, one row per thread."""
    for r in range(y.shape[0]):
        acc = ops.cast(0, dtype)
        for k in range(indptr[r], indptr[r + 1]):
            acc += data[k] * x[indices[k]]
        y[r] = acc


@kernel
def dot(a: ndarray_type(), b: ndarray_type(), out: ndarray_type()):
    """out[0] = a . b (accumulated in out's dtype)."""
    out[0] = 0
    for i in range(a.shape[0]):
        out[0] += a[i] * b[i]


@kernel
def axpy(y: ndarray_type(), alpha: ndarray_type(), x: ndarray_type(), sign: template()):
    """y += sign * alpha[0] * x."""
    for i in range(y.shape[0]):
        y[i] += sign * alpha[0] * x[i]


@kernel
def xpby(y: ndarray_type(), x: ndarray_type(), beta: ndarray_type()):
    """y = x + beta[0] * y."""
    for i in range(y.shape[0]):
        y[i] = x[i] + beta[0] * y[i]


@kernel
def residual(r: ndarray_type(), b: ndarray_type(), ax: ndarray_type()):
    """r = b - A x."""
    for i in range(r.shape[0]):
        r[i] = b[i] - ax[i]


class DeviceCsr:
    """A SparseMatrix's CSR arrays as qd.ndarrays (row offsets and column
    indices in i32, values in the matrix's dtype)."""

    def __init__(self, matrix):
        if matrix._data.size >= 2**31:
            raise ValueError(f"a sparse matrix on the device holds fewer than 2^31 stored "
                             f"values, got {matrix._data.size}")
        self.n, self.m, self.dtype = matrix.n, matrix.m, matrix.dtype
        self.indptr = _to_ndarray(types.i32, matrix._indptr.astype(np.int32))
        self.indices = _to_ndarray(types.i32, matrix._cols.astype(np.int32))
        self.data = _to_ndarray(matrix.dtype, matrix._data)

    def matvec(self, x, y):
        spmv(self.indptr, self.indices, self.data, x, y, self.dtype)


def _to_ndarray(dtype, values):
    # A zero-length ndarray is refused; an unused slot stands in for none.
    out = ndarray(dtype, (max(values.size, 1),))
    if values.size:
        out.from_numpy(values)
    return out
