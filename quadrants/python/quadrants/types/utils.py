"""Predicates on data types."""
from quadrants.lang import types
from quadrants.lang.matrix import MatrixType


def is_real(dt):
    """Whether `dt` is a floating-point type."""
    return types.normalize(dt, "is_real()").is_float


def is_integral(dt):
    """Whether `dt` is an integer type (u1 included)."""
    return types.normalize(dt, "is_integral()").is_integral


def is_signed(dt):
    """Whether `dt` is a signed type (every float type is)."""
    return types.normalize(dt, "is_signed()").is_signed


def is_tensor(dt):
    """Whether `dt` is a vector or matrix type."""
    return isinstance(dt, MatrixType)


__all__ = ["is_signed", "is_integral", "is_real", "is_tensor"]
