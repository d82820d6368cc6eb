"""Bitonic sorting of (key, value) pairs across the lanes of a subgroup."""
from quadrants.lang.simt._subgroup_primitives import invocation_id, log2_group_size, shuffle
from quadrants.lang.kernel import func
from quadrants.lang.transformer import static
from quadrants.lang.types import template


@func
def bitonic_sort_kv_tiled(key, value, log2_size: template()):
    """Sorts the (key, value) pairs held by the lanes of each tile of
    2**log2_size lanes ascending (by key, then value); returns this lane's
    pair after the sort."""
    lane = invocation_id()
    for k in static(range(1, log2_size + 1)):
        for j in static(range(k - 1, -1, -1)):
            their_key = shuffle(key, lane ^ (1 << j))
            their_value = shuffle(value, lane ^ (1 << j))
            # Sequences of 2**k lanes alternate in direction, except the
            # last merge, which sorts the whole tile ascending.
            ascending = (lane & ((1 << k) if k < log2_size else 0)) == 0
            keeps_low = ((lane & (1 << j)) == 0) == ascending
            below = (their_key < key) | ((their_key == key) & (their_value < value))
            above = (their_key > key) | ((their_key == key) & (their_value > value))
            if (keeps_low & below) | (~keeps_low & above):
                key = their_key
                value = their_value
    return key, value


@func
def bitonic_sort_kv(key, value):
    """bitonic_sort_kv_tiled over the whole subgroup."""
    return bitonic_sort_kv_tiled(key, value, log2_group_size())


__all__ = ["bitonic_sort_kv_tiled", "bitonic_sort_kv"]
