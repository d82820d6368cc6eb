"""qd.algorithms.reduce_by_key_add: each run of equal consecutive keys
becomes one (key, sum of its values) pair, at the top level of a kernel.

The count n waits in num_runs[0]. scratch[i] gets 1 where a run starts
(i == 0 or keys[i] != keys[i - 1], so every NaN key starts a run) and is
scanned in place (inclusive): element i belongs to run scratch[i] - 1. The
run heads write their key and a zero; then every element adds its value
to its run atomically, so float sums depend on the order the atomics land
in (within rounding)."""
from quadrants.lang import ops, types
from quadrants.lang.types import i32, u32
from quadrants.algorithms import _common, _scan
from quadrants.algorithms._common import intrinsic


def _start(num_runs, n):
    for _ in range(1):
        num_runs[0] = n


def _heads(keys_in, scratch, num_runs):
    for i in range(num_runs[0]):
        scratch[i] = ops.cast(_is_head(keys_in, i), u32)


def _is_head(keys_in, i):
    return ops.select(i == 0, 1, ops.cast(keys_in[i] != keys_in[ops.max(i - 1, 0)], i32))


def _write_heads(keys_in, keys_out, values_out, scratch, num_runs, zero):
    for i in range(num_runs[0]):
        if _is_head(keys_in, i) != 0:
            run = ops.cast(scratch[i], i32) - 1
            keys_out[run] = keys_in[i]
            values_out[run] = zero


def _accumulate(values_in, values_out, scratch, num_runs):
    for i in range(num_runs[0]):
        ops.atomic_add(values_out[ops.cast(scratch[i], i32) - 1], values_in[i])


def _count_out(scratch, num_runs):
    for _ in range(1):
        num_runs[0] = ops.select(num_runs[0] > 0,
                                 ops.cast(scratch[ops.max(num_runs[0] - 1, 0)], i32), 0)


@intrinsic
def reduce_by_key_add(keys_in, values_in, keys_out, values_out, num_runs, scratch, n,
                      value_dtype, log256_max_n):
    """Collapses each run of equal consecutive keys in keys_in[0:n] into
    keys_out[r] (the key) and values_out[r] (the sum of its values), and
    writes the number of runs to num_runs[0]; called at the top level of a
    kernel. Keys and values: 1-D tensors of i32, u32, f32, i64, u64 or f64
    (values of value_dtype); the outputs as long as the inputs; num_runs:
    an i32 tensor; scratch: a u32 tensor of reduce_by_key_scratch_slots(N)
    slots; n <= 256 ** log256_max_n."""
    what = "qd.algorithms.reduce_by_key_add()"
    _common.in_kernel_top_level(what)
    depth = _common.validate_log256_max_n(log256_max_n)
    value_dtype = _common.check_dtype(what, "value_dtype", value_dtype)
    key_dtype = _common.check_dtype(what, "keys_in", _common.buffer_dtype(keys_in, what,
                                                                         "keys_in"))
    _common.check_same(what, "keys_out", keys_out, key_dtype)
    _common.check_same(what, "values_in", values_in, value_dtype)
    _common.check_same(what, "values_out", values_out, value_dtype)
    _common.check_same(what, "num_runs", num_runs, types.i32)
    _common.check_same(what, "scratch", scratch, types.u32)
    n = _common.check_count(what, n)
    _common.phase(_start, num_runs=num_runs, n=n)
    _common.phase(_heads, keys_in=keys_in, scratch=scratch, num_runs=num_runs)
    _scan.inclusive_scan(scratch, num_runs, 0, depth, _common.add)
    _common.phase(_write_heads, keys_in=keys_in, keys_out=keys_out, values_out=values_out,
                  scratch=scratch, num_runs=num_runs, zero=0.0 if value_dtype.is_float else 0)
    _common.phase(_accumulate, values_in=values_in, values_out=values_out, scratch=scratch,
                  num_runs=num_runs)
    _common.phase(_count_out, scratch=scratch, num_runs=num_runs)


@intrinsic
def reduce_by_key_scratch_slots(n, log256_max_n=None):
    """The u32 scratch slots reduce_by_key_add needs for up to n elements:
    n (one run index per element), at least 1."""
    if log256_max_n is not None:
        _common.validate_log256_max_n(log256_max_n)
    return _common.at_least_one(n)
