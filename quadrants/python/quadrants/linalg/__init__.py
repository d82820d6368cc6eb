"""qd.linalg: matrix-free iterative solvers for A x = b, with A given as a
kernel that computes A v (a LinearOperator), sparse matrices built by
kernels (SparseMatrixBuilder, SparseMatrix), their direct solvers
(SparseSolver) and conjugate gradient (SparseCG)."""
from quadrants.linalg.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from quadrants.linalg.sparse_cg import SparseCG
from quadrants.linalg.sparse_matrix import SparseMatrix, SparseMatrixBuilder
from quadrants.linalg.sparse_solver import SparseSolver

__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG", "SparseCG", "SparseMatrix",
           "SparseMatrixBuilder", "SparseSolver"]
