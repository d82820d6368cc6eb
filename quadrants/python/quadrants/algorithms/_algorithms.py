"""The deprecated host-side algorithms: qd.algorithms.parallel_sort (an
in-place sorting network) and qd.algorithms.PrefixSumExecutor (an in-place
inclusive prefix sum). New code calls qd.algorithms.sort and
qd.algorithms.exclusive_scan_add inside its own kernels."""
import warnings

from quadrants.lang import types
from quadrants.lang.exception import ArgumentValueError, QuadrantsTypeError
from quadrants.lang.field import Field
from quadrants.lang.kernel import kernel
from quadrants.lang.types import i32, template
from quadrants.algorithms import _common, _scan


@kernel
def _sort_stage(keys: template(), values: template(), has_values: template(), n: i32,
                p: i32, k: i32, pairs: i32, key_base: i32, value_base: i32):
    # One compare-exchange of Batcher's odd-even merge sort per thread: the
    # pairs (j + i, j + i + k) for j = k % p + 2 k t, i < k, that stay in one
    # block of 2 p elements. *_base: the fields' offsets.
    for t in range(pairs):
        j = k % p + (t // k) * 2 * k
        a = j + t % k
        b = a + k
        if b < n and a // (2 * p) == b // (2 * p):
            if keys[key_base + b] < keys[key_base + a]:
                keys[key_base + a], keys[key_base + b] = keys[key_base + b], keys[key_base + a]
                if has_values:
                    values[value_base + a], values[value_base + b] = \
                        values[value_base + b], values[value_base + a]


def parallel_sort(keys, values=None):
    """Sorts the 1-D field `keys` ascending in place, permuting the 1-D field
    `values` (same length) with it when given (not stable).

    Deprecated: use qd.algorithms.sort inside a kernel. This launches
    O(log^2 N) kernels of Batcher's odd-even merge sort from the host."""
    warnings.warn("qd.algorithms.parallel_sort is deprecated; call qd.algorithms.sort (at "
                  "the top level of a kernel) instead", DeprecationWarning, stacklevel=2)
    _check_field("qd.algorithms.parallel_sort()", "keys", keys)
    if values is not None:
        _check_field("qd.algorithms.parallel_sort()", "values", values)
        if values.shape != keys.shape:
            raise ArgumentValueError(f"qd.algorithms.parallel_sort(): values has shape "
                                     f"{values.shape}, keys {keys.shape}")
    n = keys.shape[0]
    vals = keys if values is None else values
    p = 1
    while p < n:
        k = p
        while k >= 1:
            starts = (n - 1 - k - k % p) // (2 * k) + 1 if n - 1 - k >= k % p else 0
            if starts:
                _sort_stage(keys, vals, values is not None, n, p, k, starts * k,
                            keys.offset[0], vals.offset[0])
            k //= 2
        p *= 2


def _check_field(what, name, f):
    if not isinstance(f, Field) or len(f.shape) != 1:
        raise QuadrantsTypeError(f"{what}: {name} must be a 1-D qd.field, got "
                                 f"{type(f).__name__}"
                                 f"{' of shape ' + str(f.shape) if isinstance(f, Field) else ''}")


@_common.intrinsic
def _scan_in_place(buf, n, depth, base):
    _scan.inclusive_scan(buf, n, None, depth, _common.add, base)


@kernel
def _prefix_sum(buf: template(), n: template(), depth: template(), base: template()):
    _scan_in_place(buf, n, depth, base)


class PrefixSumExecutor:
    """PrefixSumExecutor(length).run(arr): the inclusive prefix sum of the
    i32 field arr (shape (length,), any offset) in place,
    arr[i] = arr[0] + ... + arr[i] counting from the first element.

    Deprecated: use qd.algorithms.exclusive_scan_add inside a kernel."""

    def __init__(self, length):
        warnings.warn("qd.algorithms.PrefixSumExecutor is deprecated; call "
                      "qd.algorithms.exclusive_scan_add (at the top level of a kernel) "
                      "instead", DeprecationWarning, stacklevel=2)
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise ArgumentValueError(f"PrefixSumExecutor(length): length must be a "
                                     f"non-negative int, got {length!r}")
        self.sorting_length = length

    def run(self, input_arr):
        _check_field("PrefixSumExecutor.run()", "input_arr", input_arr)
        if input_arr.dtype != types.i32:
            raise RuntimeError("Only qd.i32 type is supported for prefix sum.")
        if input_arr.shape != (self.sorting_length,):
            raise ArgumentValueError(f"PrefixSumExecutor.run(): the executor was made for "
                                     f"length {self.sorting_length}, got a field of shape "
                                     f"{input_arr.shape}")
        if self.sorting_length:
            _prefix_sum(input_arr, self.sorting_length,
                        _common.depth_for_n(self.sorting_length), input_arr.offset[0])
