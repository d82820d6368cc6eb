"""qd.linalg: matrix-free iterative solvers for A x = b, with A given as a
kernel that computes A v (a LinearOperator)."""
from quadrants.linalg.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG

__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG"]
