"""qd.algorithms.select: stream compaction at the top level of a kernel.

The count n waits in num_out[0]. scratch[0:n] gets the flags and is
scanned in place (inclusive, _scan.inclusive_scan), so a flagged element i
goes to out[scratch[i] - 1]; the last scanned value is the number kept."""
from quadrants.lang import ops, types
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.types import i32, u32
from quadrants.algorithms import _common, _scan
from quadrants.algorithms._common import intrinsic


def _start(num_out, n):
    for _ in range(1):
        num_out[0] = n


def _flags_in(flags, scratch, num_out):
    for i in range(num_out[0]):
        scratch[i] = ops.cast(flags[i], u32)


def _scatter(arr, flags, out, scratch, num_out):
    for i in range(num_out[0]):
        if flags[i] != 0:
            out[ops.cast(scratch[i], i32) - 1] = arr[i]


def _count_out(scratch, num_out):
    for _ in range(1):
        num_out[0] = ops.select(num_out[0] > 0,
                                ops.cast(scratch[ops.max(num_out[0] - 1, 0)], i32), 0)


def _element_buffer(what, name, buf):
    if not _common.is_buffer(buf):
        raise QuadrantsTypeError(f"{what}: {name} must be a 1-D field or ndarray, got "
                                 f"{type(buf).__name__}")
    shape = getattr(buf, "shape", None)
    ndim = buf.ndim if hasattr(buf, "ndim") else len(shape)
    if ndim != 1:
        raise QuadrantsTypeError(f"{what}: {name} must be 1-D")


@intrinsic
def select(arr, flags, out, num_out, scratch, n, log256_max_n):
    """Copies every arr[i] (i < n) with flags[i] == 1 to out[0:k], in input
    order, and writes k to num_out[0]; called at the top level of a kernel.
    arr and out: 1-D tensors of one element type (scalar, vector or
    struct), len(out) >= n; flags: a 1-D i32 tensor of 0s and 1s; num_out:
    an i32 tensor (num_out[0] is written); scratch: a u32 tensor of
    select_scratch_slots(N) slots; n <= 256 ** log256_max_n."""
    what = "qd.algorithms.select()"
    _common.in_kernel_top_level(what)
    depth = _common.validate_log256_max_n(log256_max_n)
    _element_buffer(what, "arr", arr)
    _element_buffer(what, "out", out)
    _common.check_same(what, "flags", flags, types.i32)
    _common.check_same(what, "num_out", num_out, types.i32)
    _common.check_same(what, "scratch", scratch, types.u32)
    n = _common.check_count(what, n)
    _common.phase(_start, num_out=num_out, n=n)
    _common.phase(_flags_in, flags=flags, scratch=scratch, num_out=num_out)
    _scan.inclusive_scan(scratch, num_out, 0, depth, _common.add)
    _common.phase(_scatter, arr=arr, flags=flags, out=out, scratch=scratch, num_out=num_out)
    _common.phase(_count_out, scratch=scratch, num_out=num_out)


@intrinsic
def select_scratch_slots(n, log256_max_n=None):
    """The u32 scratch slots select needs for up to n elements: n (one
    write position per element), at least 1."""
    if log256_max_n is not None:
        _common.validate_log256_max_n(log256_max_n)
    return _common.at_least_one(n)
