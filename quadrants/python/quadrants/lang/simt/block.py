"""qd.simt.block: the threads of one GPU block (qd.loop_config(block_dim=)
sets its size): barriers, fences, thread indices, block-shared arrays, and
reductions and scans built on subgroup shuffles and shared memory."""
import math
import warnings

from quadrants.lang import context, matrix, types
from quadrants.lang.exception import QuadrantsIndexError
from quadrants.lang.expr import Expr, GlobalRef
from quadrants.lang.kernel import func
from quadrants.lang.ops import cast as qd_cast
from quadrants.lang.ops import intrinsic, static_assert
from quadrants.lang.transformer import static
from quadrants.lang.types import template
from quadrants.lang.simt import reductions, subgroup
from quadrants.lang.simt._primitive import as_type, emit, require_simt


@intrinsic
def sync():
    """Waits until every thread of the block arrives; their writes to
    shared and global memory are visible to each other afterwards."""
    require_simt("qd.block.sync")
    emit("block_sync", None)


def _sync_reduce(op, predicate, what):
    require_simt(what)
    return emit(op, types.i32, as_type(predicate, types.i32, what))


@intrinsic
def sync_all_nonzero(predicate):
    """sync(), returning 1 when `predicate` is nonzero on every thread of
    the block, else 0."""
    return _sync_reduce("block_sync_and", predicate, "qd.block.sync_all_nonzero")


@intrinsic
def sync_any_nonzero(predicate):
    """sync(), returning 1 when `predicate` is nonzero on any thread."""
    return _sync_reduce("block_sync_or", predicate, "qd.block.sync_any_nonzero")


@intrinsic
def sync_count_nonzero(predicate):
    """sync(), returning how many threads have a nonzero `predicate`."""
    return _sync_reduce("block_sync_count", predicate, "qd.block.sync_count_nonzero")


@intrinsic
def mem_fence():
    """Orders this thread's memory accesses as the block sees them."""
    require_simt("qd.block.mem_fence")
    emit("block_mem_fence", None)


@intrinsic
def mem_sync():
    """Deprecated name of mem_fence()."""
    warnings.warn("qd.simt.block.mem_sync() is deprecated; use qd.simt.block.mem_fence() "
                  "instead.", DeprecationWarning, stacklevel=2)
    return mem_fence()


@intrinsic
def thread_idx():
    """The thread's index in its block, an i32 in [0, block_dim)."""
    require_simt("qd.block.thread_idx")
    return emit("block_thread_idx", types.i32)


@intrinsic
def global_thread_idx():
    """The thread's index in the launch: block index * block_dim +
    thread_idx()."""
    require_simt("qd.block.global_thread_idx")
    return Expr(context.builder().thread_index(), types.i32)


class SharedArray:
    """SharedArray(shape, dtype): an array every thread of the block shares,
    uninitialized, made in kernel code; `dtype` a scalar type or a
    vector/matrix type. Indexed like an ndarray (arr[i, j]); elements take
    assignments and atomics."""

    _is_quadrants_class = True
    _qd_shared_array = True  # kernel code indexes it (transformer.expressions)

    def __init__(self, shape, dtype):
        if isinstance(shape, int):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or \
                not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
            raise ValueError(f"qd.simt.block.shared_array shape must be an integer or a "
                             f"tuple of integers, but got {shape}")
        if any(s <= 0 for s in shape):
            raise ValueError(f"qd.simt.block.SharedArray: every extent must be positive, "
                             f"got shape {tuple(shape)}")
        require_simt("qd.simt.block.SharedArray")
        self.shape = tuple(shape)
        self.element = dtype if isinstance(dtype, matrix.MatrixType) else None
        self.dtype = dtype.dtype if self.element is not None else dtype
        if not isinstance(self.dtype, types.DataType):
            raise ValueError(f"qd.simt.block.SharedArray: dtype must be a primitive, vector "
                             f"or matrix type, got {dtype!r}")
        self._leaves = 1 if self.element is None else self.element.n * self.element.m
        self._stmt = context.builder().shared_array(
            self.dtype.name, math.prod(self.shape) * self._leaves)

    def _element_ref(self, indices):
        """The element at `indices` (Exprs): a GlobalRef, or a vector or
        matrix of them."""
        if len(indices) != len(self.shape):
            raise QuadrantsIndexError(f"Expected {len(self.shape)} indices, got {len(indices)}.")
        b = context.builder()
        linear = None
        for index, extent in zip(indices, self.shape):
            index = as_type(index, types.i32, "a shared array index")
            linear = index if linear is None else Expr(
                b.binary("add", b.binary("mul", linear.stmt,
                                         context.constant(extent, types.i32).stmt),
                         index.stmt), types.i32)
        if self.element is None:
            return GlobalRef(b.shared_ptr(self._stmt, linear.stmt), self.dtype)
        base = b.binary("mul", linear.stmt, context.constant(self._leaves, types.i32).stmt)
        refs = [GlobalRef(b.shared_ptr(self._stmt, b.binary(
            "add", base, context.constant(k, types.i32).stmt)), self.dtype)
            for k in range(self._leaves)]
        return matrix.Matrix._make(refs, self.element.n, self.element.m, self.element.ndim)


def _check_block_dim(block_dim, what):
    size = subgroup.group_size()
    static_assert(size > 0 and block_dim % size == 0 and block_dim >= size,
                  f"{what}: block_dim must be a positive multiple of subgroup size")


def _lanes():
    """Lanes per subgroup (a Python int)."""
    return subgroup.group_size()


def _subgroups(block_dim):
    """Subgroups per block (a Python int)."""
    return block_dim // subgroup.group_size()


@func
def reduce(value, block_dim: template(), op: template(), dtype: template()):
    """The block's reduction of `value` under the associative `op` (a
    function of two values), valid in thread 0 (other threads hold partial
    results); `block_dim`, a multiple of the subgroup size, and `dtype`,
    value's type, are compile-time."""
    _check_block_dim(block_dim, "block.reduce")
    partial = reductions._reduce_tiled(value, op, subgroup.log2_group_size())
    if static(_subgroups(block_dim) > 1):
        partials = SharedArray((_subgroups(block_dim),), dtype)
        tid = thread_idx()
        if tid % _lanes() == 0:
            partials[tid // _lanes()] = partial
        sync()
        if tid == 0:
            for w in static(range(1, _subgroups(block_dim))):
                partial = op(partial, partials[w])
        sync()
    return partial


@func
def reduce_all(value, block_dim: template(), op: template(), dtype: template()):
    """reduce(), its result given to every thread."""
    total = reduce(value, block_dim, op, dtype)
    shared = SharedArray((1,), dtype)
    if thread_idx() == 0:
        shared[0] = total
    sync()
    result = shared[0]
    sync()
    return result


@func
def reduce_add(value, block_dim: template(), dtype: template()):
    return reduce(value, block_dim, reductions._bin_add, dtype)


@func
def reduce_min(value, block_dim: template(), dtype: template()):
    return reduce(value, block_dim, reductions._bin_min, dtype)


@func
def reduce_max(value, block_dim: template(), dtype: template()):
    return reduce(value, block_dim, reductions._bin_max, dtype)


@func
def reduce_all_add(value, block_dim: template(), dtype: template()):
    return reduce_all(value, block_dim, reductions._bin_add, dtype)


@func
def reduce_all_min(value, block_dim: template(), dtype: template()):
    return reduce_all(value, block_dim, reductions._bin_min, dtype)


@func
def reduce_all_max(value, block_dim: template(), dtype: template()):
    return reduce_all(value, block_dim, reductions._bin_max, dtype)


@func
def _add_subgroup_prefix(carry, block_dim: template(), op: template(), dtype: template()):
    """Each thread's subgroup scan `carry`, preceded (under `op`) by the
    totals of the subgroups before its own, staged in shared memory."""
    totals = SharedArray((_subgroups(block_dim),), dtype)
    tid = thread_idx()
    if tid % _lanes() == _lanes() - 1:
        totals[tid // _lanes()] = carry
    sync()
    own = tid // _lanes()
    prefix = totals[0]
    for w in static(range(1, _subgroups(block_dim))):
        if own == w:
            carry = op(prefix, carry)
        prefix = op(prefix, totals[w])
    sync()
    return carry


@func
def inclusive_scan(value, block_dim: template(), op: template(), dtype: template()):
    """The inclusive scan of `value` over the block's threads in order,
    under the associative `op`, on every thread."""
    _check_block_dim(block_dim, "block.inclusive_scan")
    scanned = reductions._inclusive_scan_tiled(value, op, subgroup.log2_group_size())
    if static(_subgroups(block_dim) > 1):
        scanned = _add_subgroup_prefix(scanned, block_dim, op, dtype)
    return scanned


@func
def exclusive_scan(value, block_dim: template(), op: template(), identity, dtype: template()):
    """The exclusive scan: thread t gets the scan of the threads before it
    (thread 0 gets `identity`)."""
    _check_block_dim(block_dim, "block.exclusive_scan")
    inclusive = inclusive_scan(value, block_dim, op, dtype)
    staged = SharedArray((block_dim,), dtype)
    tid = thread_idx()
    staged[tid] = inclusive
    sync()
    result = identity
    if tid > 0:
        result = staged[tid - 1]
    sync()
    return result


@func
def inclusive_add(value, block_dim: template(), dtype: template()):
    return inclusive_scan(value, block_dim, reductions._bin_add, dtype)


@func
def inclusive_min(value, block_dim: template(), dtype: template()):
    return inclusive_scan(value, block_dim, reductions._bin_min, dtype)


@func
def inclusive_max(value, block_dim: template(), dtype: template()):
    return inclusive_scan(value, block_dim, reductions._bin_max, dtype)


@func
def exclusive_add(value, block_dim: template(), dtype: template()):
    return exclusive_scan(value, block_dim, reductions._bin_add, value - value, dtype)


@func
def exclusive_min(value, block_dim: template(), dtype: template()):
    return exclusive_scan(value, block_dim, reductions._bin_min,
                          reductions._typed_max_value(value), dtype)


@func
def exclusive_max(value, block_dim: template(), dtype: template()):
    return exclusive_scan(value, block_dim, reductions._bin_max,
                          reductions._typed_min_value(value), dtype)


@func
def _lanes_with_digit(digit, lane):
    """(lanes below `lane` in the subgroup holding `digit`, lanes above)."""
    below = 0
    above = 0
    for j in static(range(_lanes())):
        other = subgroup.shuffle(digit, j)
        if other == digit:
            if j < lane:
                below += 1
            if j > lane:
                above += 1
    return below, above


@func
def radix_rank_match_atomic_or(key, block_dim: template(), radix_bits: template(),
                               bit_start: template(), num_bits: template(), bins,
                               excl_prefix):
    """The stable rank of the thread's `key` (a u32) in its block when the
    block's keys are ordered by digit (key >> bit_start) & (2**num_bits - 1):
    the keys of smaller digits, then those of equal digit held by lower
    threads. Also fills the caller's SharedArrays ((2**radix_bits,) i32)
    `bins` with each digit's count and `excl_prefix` with their exclusive
    prefix sums; block_dim must equal 2**radix_bits."""
    static_assert(_lanes() == 32 or _lanes() == 64,
                  "block.radix_rank_match_atomic_or: subgroup size must be 32 or 64")
    static_assert(block_dim == 1 << radix_bits,
                  "block.radix_rank_match_atomic_or: block_dim must equal RADIX_DIGITS "
                  "(1 << radix_bits)")
    counts = SharedArray((_subgroups(block_dim) * block_dim,), types.i32)
    tid = thread_idx()
    lane = subgroup.invocation_id()
    own = tid // _lanes()
    for s in static(range(_subgroups(block_dim))):
        counts[s * block_dim + tid] = 0
    digit = qd_cast((key >> qd_cast(bit_start, types.u32)) &
                    qd_cast((1 << num_bits) - 1, types.u32), types.i32)
    below, above = _lanes_with_digit(digit, lane)
    sync()
    if above == 0:
        counts[own * block_dim + digit] = below + 1
    sync()
    # Thread t owns digit t: its count per subgroup becomes the count of
    # the subgroups before.
    total = 0
    for s in static(range(_subgroups(block_dim))):
        n = counts[s * block_dim + tid]
        counts[s * block_dim + tid] = total
        total += n
    prefix = exclusive_add(total, block_dim, types.i32)
    bins[tid] = total
    excl_prefix[tid] = prefix
    sync()
    rank = excl_prefix[digit] + counts[own * block_dim + digit] + below
    sync()
    return rank
