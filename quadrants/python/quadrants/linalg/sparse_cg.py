"""qd.linalg.SparseCG: conjugate gradient for A x = b with a symmetric
positive definite SparseMatrix A, run as kernels on the program's arch
(CSR matrix-vector products and vector updates stay on the device; only
the scalars of each iteration are read back)."""
import math

import numpy as np

from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsRuntimeError
from quadrants.lang.ndarray import Ndarray, ndarray
from quadrants.linalg import sparse_kernels
from quadrants.linalg.sparse_matrix import SparseMatrix


class SparseCG:
    """SparseCG(A, b, x0=None, max_iter=50, atol=1e-6).solve() -> (x, ok):
    iterates until the residual norm |b - A x| is below atol or max_iter
    iterations ran. x is a qd.ndarray when b is one on a GPU arch, and a
    numpy array otherwise (as upstream)."""

    def __init__(self, A, b, x0=None, max_iter=50, atol=1e-6):  # pylint: disable=invalid-name
        if not isinstance(A, SparseMatrix):
            raise QuadrantsRuntimeError(f"SparseCG: A must be a qd.linalg.SparseMatrix, got "
                                        f"{type(A).__name__}")
        if A.n != A.m:
            raise QuadrantsRuntimeError(f"SparseCG: A must be square, got {A.n} x {A.m}")
        self.dtype = A.dtype
        self.matrix = A
        self.b = b
        self.max_iter, self.atol = int(max_iter), float(atol)
        self._b = self._vector("b", b)
        self._x = self._vector("x0", x0) if x0 is not None else \
            ndarray(self.dtype, (A.n,))

    def _vector(self, name, value):
        values = value.to_numpy() if isinstance(value, Ndarray) else np.asarray(value)
        if values.shape != (self.matrix.n,):
            raise QuadrantsRuntimeError(f"SparseCG: {name} must hold {self.matrix.n} values, "
                                        f"got shape {values.shape}")
        out = ndarray(self.dtype, (self.matrix.n,))
        out.from_numpy(values.astype(np.float32 if self.dtype == types.f32 else np.float64))
        return out

    def solve(self):
        n = self.matrix.n
        csr = sparse_kernels.DeviceCsr(self.matrix)
        r, p, ap = (ndarray(self.dtype, (n,)) for _ in range(3))
        scalar = ndarray(types.f64, (1,))
        alpha, beta = ndarray(self.dtype, (1,)), ndarray(self.dtype, (1,))
        x = self._x

        def dot(a, b):
            sparse_kernels.dot(a, b, scalar)
            return float(scalar.to_numpy()[0])

        csr.matvec(x, ap)
        sparse_kernels.residual(r, self._b, ap)
        p.copy_from(r)
        old = dot(r, r)
        for _ in range(self.max_iter):
            if math.sqrt(old) < self.atol:
                break
            csr.matvec(p, ap)
            alpha.from_numpy(np.array([old / dot(p, ap)]))
            sparse_kernels.axpy(x, alpha, p, 1.0)
            sparse_kernels.axpy(r, alpha, ap, -1.0)
            new = dot(r, r)
            beta.from_numpy(np.array([new / old]))
            sparse_kernels.xpby(p, r, beta)
            old = new
        converged = math.sqrt(old) < self.atol
        if isinstance(self.b, Ndarray) and runtime.state.arch in runtime.GPU_ARCHS:
            return x, converged
        return x.to_numpy(), converged
