"""qd.algorithms.reduce_{add,min,max}: out[0] = the sum / min / max of
arr[0:n], at the top level of a kernel.

Two phases: a serial one stores n and sets out[0] to the op's identity;
then one thread per block of 256 elements reduces its block serially and
combines the result into out[0] with an atomic add / min / max. Float sums
therefore depend on the order the atomics land in (within rounding)."""
from quadrants.lang import ops
from quadrants.lang.types import i32
from quadrants.algorithms import _common
from quadrants.algorithms._common import BLOCK_DIM, intrinsic
from quadrants.algorithms._scan import _check_scratch

_ATOMIC = {"add": ops.atomic_add, "min": ops.atomic_min, "max": ops.atomic_max}


def _start(scratch, n, out, first):
    for _ in range(1):
        scratch[0] = n
        out[0] = first


def _blocks(arr, out, scratch, combine, atomic):
    for b in range((ops.cast(scratch[0], i32) + (BLOCK_DIM - 1)) // BLOCK_DIM):
        first = b * BLOCK_DIM
        last = ops.min(first + BLOCK_DIM, ops.cast(scratch[0], i32))
        acc = arr[first]
        for i in range(first + 1, last):
            acc = combine(acc, arr[i])
        atomic(out[0], acc)


def _reduce(op, arr, out, scratch, n, dtype, log256_max_n):
    what = f"qd.algorithms.reduce_{op}()"
    _common.in_kernel_top_level(what)
    _common.validate_log256_max_n(log256_max_n)
    dtype = _common.check_dtype(what, "dtype", dtype)
    _common.check_same(what, "arr", arr, dtype)
    _common.check_same(what, "out", out, dtype)
    _check_scratch(what, scratch)
    n = _common.check_count(what, n)
    _common.phase(_start, scratch=scratch, n=n, out=out, first=_common.identity(op, dtype))
    _common.phase(_blocks, arr=arr, out=out, scratch=scratch, combine=_common.COMBINE[op],
                  atomic=_ATOMIC[op])


@intrinsic
def reduce_add(arr, out, scratch, n, dtype, log256_max_n):
    """out[0] = arr[0] + ... + arr[n - 1] (0 for n = 0), called at the top
    level of a kernel. arr: a 1-D tensor of `dtype` (i32, u32, f32, i64,
    u64, f64); out: a tensor of that dtype (out[0] is written); scratch: a
    u32 or u64 tensor of reduce_scratch_slots(N, log256_max_n) slots; n: the
    run-time count (e.g. count[0]), n <= 256 ** log256_max_n."""
    _reduce("add", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def reduce_min(arr, out, scratch, n, dtype, log256_max_n):
    """out[0] = min(arr[0:n]) (dtype's largest value, +inf for floats, for
    n = 0). Arguments as reduce_add."""
    _reduce("min", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def reduce_max(arr, out, scratch, n, dtype, log256_max_n):
    """out[0] = max(arr[0:n]) (dtype's smallest value, -inf for floats, for
    n = 0). Arguments as reduce_add."""
    _reduce("max", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def reduce_scratch_slots(n, log256_max_n=None):
    """The scratch slots reduce_* need for up to n elements: one (it holds
    the count). n may be a run-time value when log256_max_n is given."""
    if log256_max_n is None:
        log256_max_n = _common.depth_for_n(n)
    _common.validate_log256_max_n(log256_max_n)
    return 1


def _reduce_depth_for_n(n):
    """The smallest log256_max_n that covers n elements."""
    return _common.depth_for_n(n)
