"""qd.algorithms: device-wide reduce, exclusive scan, select, sort and
reduce-by-key, each called at the top level of a kernel (its phases are
parallel loops of their own, run in order), and the deprecated host-side
parallel_sort and PrefixSumExecutor."""
from quadrants.algorithms._algorithms import PrefixSumExecutor, parallel_sort
from quadrants.algorithms._reduce import (reduce_add, reduce_max, reduce_min,
                                          reduce_scratch_slots)
from quadrants.algorithms._reduce_by_key import (reduce_by_key_add,
                                                 reduce_by_key_scratch_slots)
from quadrants.algorithms._scan import (exclusive_scan_add, exclusive_scan_max,
                                        exclusive_scan_min, exclusive_scan_scratch_slots)
from quadrants.algorithms._select import select, select_scratch_slots
from quadrants.algorithms._sort import sort, sort_scratch_slots

__all__ = [
    "PrefixSumExecutor",
    "exclusive_scan_add",
    "exclusive_scan_max",
    "exclusive_scan_min",
    "exclusive_scan_scratch_slots",
    "parallel_sort",
    "reduce_add",
    "reduce_by_key_add",
    "reduce_by_key_scratch_slots",
    "reduce_max",
    "reduce_min",
    "reduce_scratch_slots",
    "select",
    "select_scratch_slots",
    "sort",
    "sort_scratch_slots",
]
