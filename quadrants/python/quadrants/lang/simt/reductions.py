"""Subgroup reductions and scans over tiles of 2**log2_size lanes, built on
shuffles; the full-subgroup forms take the whole subgroup as one tile."""
import numpy as np

from quadrants.lang import context, types
from quadrants.lang.numerics import clz as _clz
from quadrants.lang.ops import cast as _cast
from quadrants.lang.ops import intrinsic
from quadrants.lang.ops import max as _max
from quadrants.lang.ops import min as _min
from quadrants.lang.ops import static_assert
from quadrants.lang.simt._primitive import scalar
from quadrants.lang.kernel import func
from quadrants.lang.transformer import static
from quadrants.lang.types import template
from quadrants.lang.simt._subgroup_primitives import (ballot, invocation_id, log2_group_size, shuffle,
                                          shuffle_down, shuffle_up)


@func
def _bin_add(a, b):
    return a + b


@func
def _bin_mul(a, b):
    return a * b


@func
def _bin_min(a, b):
    return _min(a, b)


@func
def _bin_max(a, b):
    return _max(a, b)


@func
def _bin_and(a, b):
    return a & b


@func
def _bin_or(a, b):
    return a | b


@func
def _bin_xor(a, b):
    return a ^ b


def _typed_extreme(value, largest):
    v = scalar(value, "a scan identity")
    t = v.dtype
    if t.is_float:
        return context.constant(float("inf") if largest else float("-inf"), t)
    if t == types.u1:
        return context.constant(1 if largest else 0, t)
    info = np.iinfo(types.to_numpy_dtype(t))
    return context.constant(int(info.max if largest else info.min), t)


@intrinsic
def _typed_max_value(value):
    """The largest value of value's type (+inf for floats): min's identity."""
    return _typed_extreme(value, True)


@intrinsic
def _typed_min_value(value):
    """The smallest value of value's type (-inf for floats): max's identity."""
    return _typed_extreme(value, False)


@func
def _reduce_tiled(value, op: template(), log2_size: template()):
    """Tree reduction by shuffle_down: lane 0 of each tile holds the tile's
    result."""
    for i in static(range(log2_size)):
        value = op(value, shuffle_down(value, 1 << (log2_size - 1 - i)))
    return value


@func
def _reduce_all_tiled(value, op: template(), log2_size: template()):
    """Butterfly reduction: every lane of the tile holds the result."""
    lane = invocation_id()
    for i in static(range(log2_size)):
        value = op(value, shuffle(value, lane ^ (1 << i)))
    return value


@func
def reduce_add_tiled(value, log2_size: template()):
    return _reduce_tiled(value, _bin_add, log2_size)


@func
def reduce_min_tiled(value, log2_size: template()):
    return _reduce_tiled(value, _bin_min, log2_size)


@func
def reduce_max_tiled(value, log2_size: template()):
    return _reduce_tiled(value, _bin_max, log2_size)


@func
def reduce_all_add_tiled(value, log2_size: template()):
    return _reduce_all_tiled(value, _bin_add, log2_size)


@func
def reduce_all_min_tiled(value, log2_size: template()):
    return _reduce_all_tiled(value, _bin_min, log2_size)


@func
def reduce_all_max_tiled(value, log2_size: template()):
    return _reduce_all_tiled(value, _bin_max, log2_size)


@func
def _inclusive_scan_tiled(value, op: template(), log2_size: template()):
    """Hillis-Steele scan: lane i of a tile gets op over lanes 0..i of it,
    folded left (op(earlier, later))."""
    lane = invocation_id() & ((1 << log2_size) - 1)
    for i in static(range(log2_size)):
        earlier = shuffle_up(value, 1 << i)
        if lane >= (1 << i):
            value = op(earlier, value)
    return value


@func
def _exclusive_scan_tiled(value, op: template(), identity, log2_size: template()):
    lane = invocation_id() & ((1 << log2_size) - 1)
    previous = shuffle_up(value, 1)
    if lane == 0:
        previous = identity
    return _inclusive_scan_tiled(previous, op, log2_size)


@func
def inclusive_add_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_add, log2_size)


@func
def inclusive_mul_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_mul, log2_size)


@func
def inclusive_min_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_min, log2_size)


@func
def inclusive_max_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_max, log2_size)


@func
def inclusive_and_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_and, log2_size)


@func
def inclusive_or_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_or, log2_size)


@func
def inclusive_xor_tiled(value, log2_size: template()):
    return _inclusive_scan_tiled(value, _bin_xor, log2_size)


@func
def exclusive_add_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_add, value - value, log2_size)


@func
def exclusive_mul_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_mul, value - value + 1, log2_size)


@func
def exclusive_min_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_min, _typed_max_value(value), log2_size)


@func
def exclusive_max_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_max, _typed_min_value(value), log2_size)


@func
def exclusive_and_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_and, ~(value ^ value), log2_size)


@func
def exclusive_or_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_or, value ^ value, log2_size)


@func
def exclusive_xor_tiled(value, log2_size: template()):
    return _exclusive_scan_tiled(value, _bin_xor, value ^ value, log2_size)


@func
def _segment_start(head_flag, log2_size: template()):
    """How many lanes back the running lane's segment starts: the nearest
    lane at or below it in its tile with a nonzero head flag (the tile's
    first lane always starts one)."""
    lane = invocation_id()
    tile_base = lane & ~((1 << log2_size) - 1)
    offset = _cast(lane - tile_base, types.u64)
    heads = ballot(head_flag != 0) >> _cast(tile_base, types.u64)
    # The tile's heads at or below this lane, and the tile's first lane.
    below = (heads & ((_cast(2, types.u64) << offset) - _cast(1, types.u64))) | \
        _cast(1, types.u64)
    return lane - tile_base - (63 - _clz(below))


@func
def _segmented_tiled(value, head_flag, op: template(), log2_size: template()):
    distance = _segment_start(head_flag, log2_size)
    for i in static(range(log2_size)):
        partner = shuffle_up(value, 1 << i)
        if distance >= (1 << i):
            value = op(partner, value)
    return value


@func
def segmented_reduce_add_tiled(value, head_flag, log2_size: template()):
    static_assert(log2_size <= 6, "segmented_reduce_add_tiled requires log2_size <= 6")
    return _segmented_tiled(value, head_flag, _bin_add, log2_size)


@func
def segmented_reduce_min_tiled(value, head_flag, log2_size: template()):
    static_assert(log2_size <= 6, "segmented_reduce_min_tiled requires log2_size <= 6")
    return _segmented_tiled(value, head_flag, _bin_min, log2_size)


@func
def segmented_reduce_max_tiled(value, head_flag, log2_size: template()):
    static_assert(log2_size <= 6, "segmented_reduce_max_tiled requires log2_size <= 6")
    return _segmented_tiled(value, head_flag, _bin_max, log2_size)


@func
def reduce_add(value):
    """reduce_add_tiled over the whole subgroup."""
    return reduce_add_tiled(value, log2_group_size())


@func
def reduce_min(value):
    """reduce_min_tiled over the whole subgroup."""
    return reduce_min_tiled(value, log2_group_size())


@func
def reduce_max(value):
    """reduce_max_tiled over the whole subgroup."""
    return reduce_max_tiled(value, log2_group_size())


@func
def reduce_all_add(value):
    """reduce_all_add_tiled over the whole subgroup."""
    return reduce_all_add_tiled(value, log2_group_size())


@func
def reduce_all_min(value):
    """reduce_all_min_tiled over the whole subgroup."""
    return reduce_all_min_tiled(value, log2_group_size())


@func
def reduce_all_max(value):
    """reduce_all_max_tiled over the whole subgroup."""
    return reduce_all_max_tiled(value, log2_group_size())


@func
def inclusive_add(value):
    """inclusive_add_tiled over the whole subgroup."""
    return inclusive_add_tiled(value, log2_group_size())


@func
def inclusive_mul(value):
    """inclusive_mul_tiled over the whole subgroup."""
    return inclusive_mul_tiled(value, log2_group_size())


@func
def inclusive_min(value):
    """inclusive_min_tiled over the whole subgroup."""
    return inclusive_min_tiled(value, log2_group_size())


@func
def inclusive_max(value):
    """inclusive_max_tiled over the whole subgroup."""
    return inclusive_max_tiled(value, log2_group_size())


@func
def inclusive_and(value):
    """inclusive_and_tiled over the whole subgroup."""
    return inclusive_and_tiled(value, log2_group_size())


@func
def inclusive_or(value):
    """inclusive_or_tiled over the whole subgroup."""
    return inclusive_or_tiled(value, log2_group_size())


@func
def inclusive_xor(value):
    """inclusive_xor_tiled over the whole subgroup."""
    return inclusive_xor_tiled(value, log2_group_size())


@func
def exclusive_add(value):
    """exclusive_add_tiled over the whole subgroup."""
    return exclusive_add_tiled(value, log2_group_size())


@func
def exclusive_mul(value):
    """exclusive_mul_tiled over the whole subgroup."""
    return exclusive_mul_tiled(value, log2_group_size())


@func
def exclusive_min(value):
    """exclusive_min_tiled over the whole subgroup."""
    return exclusive_min_tiled(value, log2_group_size())


@func
def exclusive_max(value):
    """exclusive_max_tiled over the whole subgroup."""
    return exclusive_max_tiled(value, log2_group_size())


@func
def exclusive_and(value):
    """exclusive_and_tiled over the whole subgroup."""
    return exclusive_and_tiled(value, log2_group_size())


@func
def exclusive_or(value):
    """exclusive_or_tiled over the whole subgroup."""
    return exclusive_or_tiled(value, log2_group_size())


@func
def exclusive_xor(value):
    """exclusive_xor_tiled over the whole subgroup."""
    return exclusive_xor_tiled(value, log2_group_size())


@func
def segmented_reduce_add(value, head_flag):
    """segmented_reduce_add_tiled over the whole subgroup."""
    return segmented_reduce_add_tiled(value, head_flag, log2_group_size())


@func
def segmented_reduce_min(value, head_flag):
    """segmented_reduce_min_tiled over the whole subgroup."""
    return segmented_reduce_min_tiled(value, head_flag, log2_group_size())


@func
def segmented_reduce_max(value, head_flag):
    """segmented_reduce_max_tiled over the whole subgroup."""
    return segmented_reduce_max_tiled(value, head_flag, log2_group_size())


__all__ = [
    "reduce_add_tiled", "reduce_min_tiled", "reduce_max_tiled", "reduce_all_add_tiled",
    "reduce_all_min_tiled", "reduce_all_max_tiled", "inclusive_add_tiled", "inclusive_mul_tiled",
    "inclusive_min_tiled", "inclusive_max_tiled", "inclusive_and_tiled", "inclusive_or_tiled",
    "inclusive_xor_tiled", "exclusive_add_tiled", "exclusive_mul_tiled", "exclusive_min_tiled",
    "exclusive_max_tiled", "exclusive_and_tiled", "exclusive_or_tiled", "exclusive_xor_tiled",
    "segmented_reduce_add_tiled", "segmented_reduce_min_tiled", "segmented_reduce_max_tiled",
    "reduce_add", "reduce_min", "reduce_max", "reduce_all_add", "reduce_all_min",
    "reduce_all_max", "inclusive_add", "inclusive_mul", "inclusive_min", "inclusive_max",
    "inclusive_and", "inclusive_or", "inclusive_xor", "exclusive_add", "exclusive_mul",
    "exclusive_min", "exclusive_max", "exclusive_and", "exclusive_or", "exclusive_xor",
    "segmented_reduce_add", "segmented_reduce_min", "segmented_reduce_max"]
