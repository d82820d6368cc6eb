"""qd.simt: GPU cooperation primitives: block (threads of a block, shared
arrays), subgroup (lanes of a warp or wavefront), grid (the launch) and
warp (CUDA's masked intrinsics)."""
# subgroup first: reductions and sorting import from it.
from quadrants.lang.simt import subgroup  # noqa: I001  isort: skip
from quadrants.lang.simt import block, grid, warp
from quadrants.lang.simt._tile import Tile16x16, Tile32x32

__all__ = ["warp", "subgroup", "block", "grid", "Tile16x16", "Tile32x32"]
