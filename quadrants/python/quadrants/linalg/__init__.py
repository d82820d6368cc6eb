"""qd.linalg: matrix-free iterative solvers for A x = b, with A given as a
kernel that computes A v (a LinearOperator), and sparse matrices built by
kernels (SparseMatrixBuilder, SparseMatrix)."""
from quadrants.linalg.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from quadrants.linalg.sparse_matrix import SparseMatrix, SparseMatrixBuilder

__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG", "SparseMatrix",
           "SparseMatrixBuilder"]
