"""Compound types: vector(n, dtype), matrix(n, m, dtype) and
struct(**members)."""
from quadrants.lang.matrix import MatrixType, matrix, vector
from quadrants.lang.struct import StructType, struct

__all__ = ["matrix", "vector", "struct", "MatrixType", "StructType"]
