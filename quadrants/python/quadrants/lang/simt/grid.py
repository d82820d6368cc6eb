"""qd.simt.grid: the whole launch."""
import warnings

from quadrants.lang.ops import intrinsic
from quadrants.lang.simt._primitive import emit, require_simt


@intrinsic
def mem_fence():
    """Orders this thread's global memory accesses as every thread of the
    launch sees them (no barrier: the launch has none)."""
    require_simt("qd.simt.grid.mem_fence")
    emit("grid_mem_fence", None)


@intrinsic
def memfence():
    """Deprecated name of mem_fence()."""
    warnings.warn("qd.simt.grid.memfence() is deprecated; use qd.simt.grid.mem_fence() "
                  "instead.", DeprecationWarning, stacklevel=2)
    return mem_fence()
