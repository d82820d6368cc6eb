"""Ndarray parameter annotations: ndarray(dtype, ndim) and NDArray[dtype,
ndim]."""
from quadrants.lang.types import NDArray, NdarrayType, ndarray

__all__ = ["ndarray", "NDArray", "NdarrayType"]
