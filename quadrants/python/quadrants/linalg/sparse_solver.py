"""qd.linalg.SparseSolver: direct solves of A x = b with a SparseMatrix,
factorized on the host by Eigen (LLT, LDLT or LU, with AMD or COLAMD
fill-reducing orderings), and their gradients under qd.ad.Tape. In a CUDA
session LLT factorizes and solves on the GPU with cuSOLVER instead (the
ordering still comes from the host), and a qd.ndarray right-hand side
never leaves the device.

    solver = qd.linalg.SparseSolver(qd.f64, "LLT", "AMD")
    solver.analyze_pattern(A)   # once per sparsity pattern
    solver.factorize(A)         # once per matrix
    x = solver.solve(b)         # b: numpy array, field or qd.ndarray

Under a Tape, `x = solver.solve(b)` with a qd.ndarray b is recorded: the
reverse pass runs one solve with the transposed factorization,
lambda = A^-T x.grad, adds it to b.grad and adds -lambda_i x_j to the
gradient of each stored entry (i, j) of A, which reaches the kernels that
filled A's builder through their .grad.
"""
import numpy as np

from quadrants._lib import core as _core
from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsGradientError, QuadrantsRuntimeError
from quadrants.lang.field import Field
from quadrants.lang.ndarray import Ndarray, ndarray
from quadrants.linalg.sparse_matrix import SparseMatrix

_SOLVER_TYPES = ("LLT", "LDLT", "LU")
_ORDERINGS = ("AMD", "COLAMD")


class SparseSolver:
    """Factorizes a square SparseMatrix once and solves with it (upstream's
    API: analyze_pattern, factorize, compute, solve, info)."""

    def __init__(self, dtype=types.f32, solver_type="LLT", ordering="AMD"):
        if solver_type not in _SOLVER_TYPES or ordering not in _ORDERINGS:
            raise QuadrantsRuntimeError(f"The solver type {solver_type} with {ordering} is not "
                                        f"supported. Only {list(_SOLVER_TYPES)} with "
                                        f"{list(_ORDERINGS)} are supported.")
        self.dtype = types.normalize(dtype)
        if self.dtype not in (types.f32, types.f64):
            raise QuadrantsRuntimeError(f"SparseSolver solves in f32 or f64, got {self.dtype}")
        self.solver_type, self.ordering = solver_type, ordering
        self.solver, self._on_device = _core_solver(self.dtype, solver_type, ordering)
        self.matrix = None
        # The matrix and contents the current factorization is of.
        self._factorized = None

    def _np_dtype(self):
        return np.float32 if self.dtype == types.f32 else np.float64

    def _check_matrix(self, sparse_matrix):
        if not isinstance(sparse_matrix, SparseMatrix):
            raise QuadrantsRuntimeError(f"The parameter type: {type(sparse_matrix)} is not "
                                        f"supported in linear solvers; pass a "
                                        f"qd.linalg.SparseMatrix")
        if sparse_matrix.dtype != self.dtype:
            raise QuadrantsRuntimeError(f"The SparseSolver's dtype {self.dtype} is not "
                                        f"consistent with the SparseMatrix's dtype "
                                        f"{sparse_matrix.dtype}.")

    def analyze_pattern(self, sparse_matrix):
        """Orders A's rows and columns to limit fill-in and factorizes its
        pattern symbolically (enough for every matrix of that pattern)."""
        self._check_matrix(sparse_matrix)
        self.matrix = sparse_matrix
        self._factorized = None
        self.solver.analyze_pattern(sparse_matrix.n, sparse_matrix.m, sparse_matrix._indptr,
                                    sparse_matrix._cols)

    def factorize(self, sparse_matrix):
        """Factorizes A numerically; raises QuadrantsRuntimeError when A is
        singular (or, for LLT, not positive definite)."""
        self._check_matrix(sparse_matrix)
        self.matrix = sparse_matrix
        self._factorized = None
        self.solver.factorize(sparse_matrix.n, sparse_matrix.m, sparse_matrix._indptr,
                              sparse_matrix._cols, sparse_matrix._data)
        self._factorized = (sparse_matrix, sparse_matrix._version)

    def compute(self, sparse_matrix):
        """analyze_pattern(A), then factorize(A)."""
        self.analyze_pattern(sparse_matrix)
        self.factorize(sparse_matrix)

    def info(self):
        """Whether the last factorization succeeded."""
        return self.solver.ok()

    def solve(self, b):
        """x with A x = b: a numpy array for a numpy array or a field, a
        qd.ndarray for a qd.ndarray (recorded by a qd.ad.Tape)."""
        if self.matrix is None:
            raise QuadrantsRuntimeError("Please call compute() before calling solve().")
        if isinstance(b, Field):
            return self._solve_host(b.to_numpy())
        if isinstance(b, np.ndarray):
            return self._solve_host(b)
        if isinstance(b, Ndarray):
            return self._solve_ndarray(b)
        raise QuadrantsRuntimeError(f"The parameter type: {type(b)} is not supported in "
                                    f"linear solvers; pass a numpy array, a field or a "
                                    f"qd.ndarray")

    def _solve_host(self, b, transposed=False):
        b = np.asarray(b)
        if b.shape != (self.matrix.n,):
            raise QuadrantsRuntimeError(f"SparseSolver.solve: b must hold {self.matrix.n} "
                                        f"values (shape ({self.matrix.n},)), got shape "
                                        f"{b.shape}")
        return self.solver.solve(b.astype(self._np_dtype(), copy=False), transposed)

    def _solve_ndarray(self, b):
        tape = runtime.state.tape
        n = self.matrix.n
        x = ndarray(self.dtype, (n,), needs_grad=tape is not None)
        if self._on_device and b.dtype == self.dtype and b.shape == (n,) \
                and b.element_shape == ():
            self.solver.solve_on_device(b.arr.device_allocation_ptr(),
                                        x.arr.device_allocation_ptr())
            x_values = x.to_numpy() if tape is not None else None
        else:
            x_values = self._solve_host(b.to_numpy())
            x.from_numpy(x_values)
        if tape is not None and runtime.state.grad_replaced_depth == 0:
            tape.record(_TapedSolve(self, self.matrix, x_values), (b, x), {})
        return x


def _core_solver(dtype, solver_type, ordering):
    """The C++ solver, and whether it factorizes on the session's GPU: LLT
    in a CUDA session uses cuSOLVER (a QuadrantsRuntimeError names the
    library when it cannot be loaded), everything else Eigen on the host."""
    f32 = dtype == types.f32
    if solver_type == "LLT" and runtime.is_initialized() and runtime.state.arch.name == "cuda":
        core_class = _core.CudaSparseCholeskyF32 if f32 else _core.CudaSparseCholeskyF64
        return core_class(ordering, runtime.state.options.get("device_id", 0)), True
    core_class = _core.SparseDirectSolverF32 if f32 else _core.SparseDirectSolverF64
    return core_class(solver_type, ordering), False


class _TapedSolve:
    """One x = A^-1 b on a Tape; .grad(b, x) is its reverse pass."""

    def __init__(self, solver, matrix, x_values):
        self.solver, self.matrix = solver, matrix
        self.version = matrix._version
        self.x_values = x_values
        self.__name__ = "SparseSolver.solve"

    def __call__(self, b, x):
        raise QuadrantsGradientError("qd.ad.Tape(grad_check=...) cannot replay "
                                     "SparseSolver.solve: check the gradient of the kernels "
                                     "around it separately")

    def grad(self, b, x):
        matrix, solver = self.matrix, self.solver
        if matrix._version != self.version:
            raise QuadrantsGradientError("a sparse matrix was modified after a taped "
                                         "SparseSolver.solve used it; its gradient would be "
                                         "of the new values")
        if solver._factorized != (matrix, self.version):
            # The solver was refactorized meanwhile: factorize this matrix again.
            solver = SparseSolver(solver.dtype, solver.solver_type, solver.ordering)
            solver.compute(matrix)
        lam = solver._solve_host(x.grad.to_numpy(), transposed=True).astype(np.float64)
        if b.grad is not None:
            b_grad = b.grad.to_numpy()
            b.grad.from_numpy((b_grad + lam).astype(b_grad.dtype))
        if matrix._grad_builder is None:
            if matrix._grad_lost:
                raise QuadrantsGradientError(
                    "the matrix of a taped SparseSolver.solve was made by sparse matrix "
                    "arithmetic (+, -, *, @, transpose) from one built under the tape; "
                    "its entries' gradients cannot reach the builders' kernels. Fill one "
                    "builder with the whole matrix and solve with its build()")
            return
        rows, cols = matrix._rows, matrix._cols
        xv = self.x_values.astype(np.float64)
        entry = -lam[rows] * xv[cols]
        if solver.solver_type in ("LLT", "LDLT"):
            # The factorization reads the lower triangle as a symmetric
            # matrix: an entry below the diagonal stands for both (i, j) and
            # (j, i), and entries above it are never read.
            entry = np.where(rows > cols, entry - lam[cols] * xv[rows],
                             np.where(rows == cols, entry, 0.0))
        matrix._grad_builder._add_entry_gradients(matrix, entry)
