"""qd.simt.subgroup: the threads of one subgroup (a CUDA warp, an AMDGPU
wavefront, a SPIR-V subgroup) exchanging values without shared memory.
Lanes must run the same call together (uniform control flow). Lane
arguments may be any integer."""
import warnings

from quadrants.lang import types
from quadrants.lang.kernel import func
from quadrants.lang.ops import cast, intrinsic
# pylint: disable=unused-import,wildcard-import,unused-wildcard-import
from quadrants.lang.simt._subgroup_primitives import (ballot, broadcast,  # noqa: F401
                                                      broadcast_first, group_size,
                                                      invocation_id, log2_group_size,
                                                      mem_fence, shuffle, shuffle_down,
                                                      shuffle_up, shuffle_xor, sync)
from quadrants.lang.simt.reductions import *  # noqa: F401,F403
from quadrants.lang.simt.sorting import *  # noqa: F401,F403
from quadrants.lang.transformer import static
from quadrants.lang.types import template

# Whether each deprecated name warned yet (once per process).
_barrier_deprecation_warned = False
_memory_barrier_deprecation_warned = False
_ballot_full_subgroup_deprecation_warned = False


@intrinsic
def barrier():
    """Deprecated name of sync()."""
    global _barrier_deprecation_warned  # pylint: disable=global-statement
    if not _barrier_deprecation_warned:
        _barrier_deprecation_warned = True
        warnings.warn("qd.simt.subgroup.barrier() is deprecated; use qd.simt.subgroup.sync() "
                      "instead (matching block.sync()).", DeprecationWarning, stacklevel=2)
    return sync()


@intrinsic
def memory_barrier():
    """Deprecated name of mem_fence()."""
    global _memory_barrier_deprecation_warned  # pylint: disable=global-statement
    if not _memory_barrier_deprecation_warned:
        _memory_barrier_deprecation_warned = True
        warnings.warn("qd.simt.subgroup.memory_barrier() is deprecated; use "
                      "qd.simt.subgroup.mem_fence() instead (matching block.mem_fence() and "
                      "grid.mem_fence()).", DeprecationWarning, stacklevel=2)
    return mem_fence()


@intrinsic
def ballot_full_subgroup(predicate):
    """Deprecated name of ballot()."""
    global _ballot_full_subgroup_deprecation_warned  # pylint: disable=global-statement
    if not _ballot_full_subgroup_deprecation_warned:
        _ballot_full_subgroup_deprecation_warned = True
        warnings.warn("qd.simt.subgroup.ballot_full_subgroup() is deprecated; use "
                      "qd.simt.subgroup.ballot() instead (full-subgroup ops are unsuffixed; "
                      "tiled forms use _tiled, e.g. reduce_add_tiled).", DeprecationWarning,
                      stacklevel=2)
    return ballot(predicate)


@func
def elect():
    """1 on lane 0 of the subgroup, else 0."""
    return cast(invocation_id() == 0, types.i32)


@func
def ballot_first_n(predicate, n: template()):
    """A u32 of the predicates of lanes 0..n-1 (n at most 32, compile-time)."""
    keep = cast(invocation_id(), types.u32) < cast(n, types.u32)
    return cast(ballot(cast(predicate != 0, types.i32) * cast(keep, types.i32)), types.u32)


@func
def all_true_tiled(predicate, log2_size: template()):
    """1 when `predicate` is nonzero on every lane of the running lane's
    tile of 2**log2_size lanes."""
    p = cast(predicate != 0, types.i32)
    for i in static(range(log2_size)):
        p = p & shuffle_xor(p, 1 << i)
    return p


@func
def any_true_tiled(predicate, log2_size: template()):
    """1 when `predicate` is nonzero on any lane of the tile."""
    p = cast(predicate != 0, types.i32)
    for i in static(range(log2_size)):
        p = p | shuffle_xor(p, 1 << i)
    return p


@func
def all_equal_tiled(value, log2_size: template()):
    """1 when `value` is the same (==) on every lane of the tile."""
    base = invocation_id() & ~((1 << log2_size) - 1)
    return all_true_tiled(value == shuffle(value, base), log2_size)


@func
def all_true(predicate):
    return all_true_tiled(predicate, log2_group_size())


@func
def any_true(predicate):
    return any_true_tiled(predicate, log2_group_size())


@func
def all_equal(value):
    return all_equal_tiled(value, log2_group_size())


@func
def lanemask_lt(lane_id):
    """u32 of the lanes below `lane_id`."""
    return (cast(1, types.u32) << cast(lane_id, types.u32)) - cast(1, types.u32)


@func
def lanemask_le(lane_id):
    one = cast(1, types.u32) << cast(lane_id, types.u32)
    return one | (one - cast(1, types.u32))


@func
def lanemask_eq(lane_id):
    return cast(1, types.u32) << cast(lane_id, types.u32)


@func
def lanemask_gt(lane_id):
    one = cast(1, types.u32) << cast(lane_id, types.u32)
    return ~(one | (one - cast(1, types.u32)))


@func
def lanemask_ge(lane_id):
    return ~((cast(1, types.u32) << cast(lane_id, types.u32)) - cast(1, types.u32))
