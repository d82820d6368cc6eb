"""qd.algorithms.exclusive_scan_{add,min,max}, and the in-place inclusive
scan that it, select, reduce_by_key_add and PrefixSumExecutor build on.

The inclusive scan runs in place over buf[0:n] in 2 D - 1 phases
(D = log256_max_n), with no storage besides the buffer. Level k of the
scan is the elements at positions (j + 1) * 256^k - 1, j = 0, 1, ...:
level 0 is every element, and level k + 1 is the last element of each
full block of 256 at level k.

- Up-sweep, k = 0 .. D - 1: one thread per block of 256 level-k elements
  scans its block serially. The last element of a full block then holds
  the block's total, which level k + 1 scans next. At level D - 1 one
  block holds every element (n <= 256^D), so that level ends final.
- Down-sweep, k = D - 2 .. 0: level k + 1 is final; every level-k element
  of block b >= 1 that is not the block's last (a level-(k+1) element,
  already final) combines the final last element of block b - 1 in front
  of its value. One thread per element.

The exclusive scan first writes out[i] = arr[i - 1] (out[0] = identity),
then scans out in place.
"""
from quadrants.lang import ops, types
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.types import i32
from quadrants.algorithms import _common
from quadrants.algorithms._common import BLOCK_DIM, intrinsic


def _read_count(stash, at):
    return stash if at is None else ops.cast(stash[at], i32)


def _upsweep(buf, base, stash, at, s, combine):
    for b in range((_read_count(stash, at) // s + (BLOCK_DIM - 1)) // BLOCK_DIM):
        c = _read_count(stash, at) // s
        first = b * BLOCK_DIM
        last = ops.min(first + BLOCK_DIM, c)
        acc = buf[base + (first + 1) * s - 1]
        for j in range(first + 1, last):
            p = base + (j + 1) * s - 1
            acc = combine(acc, buf[p])
            buf[p] = acc


def _downsweep(buf, base, stash, at, s, combine):
    for j in range(BLOCK_DIM, _read_count(stash, at) // s):
        if j % BLOCK_DIM != BLOCK_DIM - 1:
            p = base + (j + 1) * s - 1
            buf[p] = combine(buf[base + (j // BLOCK_DIM) * BLOCK_DIM * s - 1], buf[p])


def inclusive_scan(buf, stash, at, depth, combine, base=0):
    """Emits the phases scanning buf[base:base + n] in place (n = stash[at],
    or the int `stash` when at is None)."""
    for level in range(depth):
        _common.phase(_upsweep, buf=buf, base=base, stash=stash, at=at,
                      s=BLOCK_DIM ** level, combine=combine)
    for level in reversed(range(depth - 1)):
        _common.phase(_downsweep, buf=buf, base=base, stash=stash, at=at,
                      s=BLOCK_DIM ** level, combine=combine)


def _stash_count(stash, at, n):
    for _ in range(1):
        stash[at] = n


def _shift_in(arr, out, stash, at, first):
    for i in range(_read_count(stash, at)):
        if i == 0:
            out[0] = first
        else:
            out[i] = arr[i - 1]


def _exclusive_scan(op, arr, out, scratch, n, dtype, log256_max_n):
    what = f"qd.algorithms.exclusive_scan_{op}()"
    _common.in_kernel_top_level(what)
    depth = _common.validate_log256_max_n(log256_max_n)
    dtype = _common.check_dtype(what, "dtype", dtype)
    if out is arr:
        raise ValueError(f"{what}: out must be a buffer distinct from arr (the scan is not "
                         f"in place)")
    _common.check_same(what, "arr", arr, dtype)
    _common.check_same(what, "out", out, dtype)
    _check_scratch(what, scratch)
    n = _common.check_count(what, n)
    _common.phase(_stash_count, stash=scratch, at=0, n=n)
    _common.phase(_shift_in, arr=arr, out=out, stash=scratch, at=0,
                  first=_common.identity(op, dtype))
    inclusive_scan(out, scratch, 0, depth, _common.COMBINE[op])


def _check_scratch(what, scratch):
    dtype = _common.buffer_dtype(scratch, what, "scratch")
    if dtype not in (types.u32, types.u64):
        raise QuadrantsTypeError(f"{what}: scratch must be a u32 or u64 buffer, got {dtype}")


@intrinsic
def exclusive_scan_add(arr, out, scratch, n, dtype, log256_max_n):
    """out[i] = arr[0] + ... + arr[i - 1] for i < n (out[0] = 0), called at
    the top level of a kernel. arr and out: distinct 1-D tensors of `dtype`
    (i32, u32, f32, i64, u64, f64); scratch: a u32 or u64 tensor of
    exclusive_scan_scratch_slots(N, log256_max_n) slots; n: the run-time
    count (e.g. count[0]), n <= 256 ** log256_max_n."""
    _exclusive_scan("add", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def exclusive_scan_min(arr, out, scratch, n, dtype, log256_max_n):
    """out[i] = min(arr[0:i]); out[0] is dtype's largest value (+inf for
    floats). Arguments as exclusive_scan_add."""
    _exclusive_scan("min", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def exclusive_scan_max(arr, out, scratch, n, dtype, log256_max_n):
    """out[i] = max(arr[0:i]); out[0] is dtype's smallest value (-inf for
    floats). Arguments as exclusive_scan_add."""
    _exclusive_scan("max", arr, out, scratch, n, dtype, log256_max_n)


@intrinsic
def exclusive_scan_scratch_slots(n, log256_max_n=None):
    """The scratch slots exclusive_scan_* need for up to n elements: one
    (the scan runs in place in out; scratch holds the count). n may be a
    run-time value when log256_max_n is given."""
    if log256_max_n is None:
        log256_max_n = _common.depth_for_n(n)
    _common.validate_log256_max_n(log256_max_n)
    return 1
