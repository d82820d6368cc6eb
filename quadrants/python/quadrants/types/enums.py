"""Enumerations upstream keeps in quadrants.types.enums.

Layout is qd.Layout, what the vector/matrix field constructors take. The
others name upstream's autodiff modes, SNode gradient roles, buffer formats
and boundary modes; nothing here returns them, and Quadrants has no
textures, so Format only names the formats.
"""
import enum

from quadrants.lang.field import Layout, SNodeGradType


class AutodiffMode(enum.Enum):
    """How a kernel is compiled: as written, its validation variant, its
    forward-mode or its reverse-mode version."""
    NONE = 0
    VALIDATION = 1
    FORWARD = 2
    REVERSE = 3


class BoundaryMode(enum.Enum):
    """Out-of-range indexing: unchecked, or clamped into range."""
    UNSAFE = 0
    CLAMP = 1


def to_boundary_enum(boundary):
    """BoundaryMode of 'clamp' or 'unsafe'."""
    if boundary == "clamp":
        return BoundaryMode.CLAMP
    if boundary == "unsafe":
        return BoundaryMode.UNSAFE
    raise ValueError(f"Invalid boundary argument: {boundary}. Valid options: 'unsafe', 'clamp'")


Format = enum.Enum("Format", [
    "unknown", "r8", "rg8", "rgba8", "rgba8srgb", "bgra8", "bgra8srgb", "r8u", "rg8u", "rgba8u",
    "r8i", "rg8i", "rgba8i", "r16", "rg16", "rgb16", "rgba16", "r16u", "rg16u", "rgb16u",
    "rgba16u", "r16i", "rg16i", "rgb16i", "rgba16i", "r16f", "rg16f", "rgb16f", "rgba16f",
    "r32u", "rg32u", "rgb32u", "rgba32u", "r32i", "rg32i", "rgb32i", "rgba32i", "r32f",
    "rg32f", "rgb32f", "rgba32f", "depth16", "depth24stencil8", "depth32f"], start=0)
Format.__doc__ = "Buffer and texture formats, by upstream's names."

__all__ = ["Layout", "AutodiffMode", "SNodeGradType", "Format", "BoundaryMode"]
