"""Upstream's module path for qd.algorithms.sort and its sizing helpers
(quadrants.algorithms._radix_sort); the sort itself is in _sort.py."""
from quadrants.algorithms._sort import _min_log256_for_n, sort, sort_scratch_slots  # noqa: F401
