"""qd.algorithms.sort: a stable ascending key (-value) sort at the top level
of a kernel, as a bottom-up merge sort.

Pass p merges neighbouring sorted runs of width w = 2^p from one buffer of
the pair (keys, tmp_keys) into the other, one thread per element: an
element's place in the merged run is its index in its own run plus the
number of elements of the other run that go before it, found by binary
search (strictly smaller ones for the left run, smaller or equal ones for
the right run: equal keys keep their order). A pass runs only while
w < n, so after the last one the keys are in tmp_keys when the number of
passes run is odd; a final phase copies them back.

Integer keys sort by their low end_bit bits (unsigned), as the radix sort
upstream describes; float keys sort by value (NaN last, as numpy.sort),
which needs end_bit to be their full width. The merge sort needs no
scratch; the argument is kept (and checked) for upstream's signature."""
from quadrants.lang import ops, types
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.expr import NdarrayArg
from quadrants.lang.field import Field
from quadrants.lang.transformer.directives import static
from quadrants.lang.types import i32
from quadrants.algorithms import _common
from quadrants.algorithms._common import intrinsic

_KEY_DTYPES = _common.SCALAR_DTYPES


def _less(a, b, key_mask, bits_type):
    """Whether key a sorts before key b: by value (bits_type None: a float
    key, NaN after every number), or by the key_mask bits of the unsigned
    bits_type."""
    if static(key_mask is not None):
        return ops.cast(a, bits_type) & key_mask < ops.cast(b, bits_type) & key_mask
    if static(bits_type is None):
        return (a < b) or (b != b and a == a)
    return a < b


def _merge_pass(src_k, dst_k, src_v, dst_v, n, w, has_values, key_mask, bits_type):
    for i in range(n[()]):
        count = n[()]
        if w < count:
            start = (i // w) * w
            lo = 0
            hi = 0
            base = start
            left = (i // w) % 2 == 0
            if left:
                if w < count - start:
                    lo = start + w
                    hi = lo + ops.min(w, count - lo)
            else:
                lo = start - w
                hi = start
                base = start - w
            first = lo
            x = src_k[i]
            while lo < hi:
                mid = lo + (hi - lo) // 2
                y = src_k[mid]
                before = _less(y, x, key_mask, bits_type)
                if not left:
                    before = not _less(x, y, key_mask, bits_type)
                if before:
                    lo = mid + 1
                else:
                    hi = mid
            dst = base + (i - start) + (lo - first)
            dst_k[dst] = x
            if static(has_values):
                dst_v[dst] = src_v[i]


def _copy_back(keys, tmp_keys, values, tmp_values, n, passes, has_values):
    for i in range(n[()]):
        odd = 0
        for p in static(range(passes)):
            if (1 << p) < n[()]:
                odd = 1 - odd
        if odd == 1:
            keys[i] = tmp_keys[i]
            if static(has_values):
                values[i] = tmp_values[i]


def _key_order(what, key_dtype, end_bit):
    width = key_dtype.bits
    if isinstance(end_bit, bool) or not isinstance(end_bit, int) or end_bit <= 0 or \
            end_bit % 8 or end_bit > width:
        raise ValueError(f"{what}: end_bit must be a positive multiple of 8 up to the key "
                         f"width ({width} for {key_dtype}), got {end_bit!r}")
    if key_dtype.is_float:
        if end_bit != width:
            raise NotImplementedError(f"{what}: {key_dtype} keys sort by value, so end_bit "
                                      f"must be their full width {width}, got {end_bit}")
        return None, None
    if end_bit == width:
        return None, key_dtype
    unsigned = types.u32 if width == 32 else types.u64
    return (1 << end_bit) - 1, unsigned


def _check_count_ref(what, n):
    if isinstance(n, NdarrayArg) and n.ndim == 0 and n.element is None and n.dtype == i32:
        return
    if isinstance(n, Field) and n.shape == () and n.dtype == i32:
        return
    raise QuadrantsTypeError(f"{what}: n must be a 0-d i32 ndarray (or field) holding the "
                             f"count, read on the device as n[()]; got {n!r}")


@intrinsic
def sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values, end_bit,
         log256_max_n):
    """Sorts keys[0:n] ascending, stably, in place (values[0:n] with them when
    has_values), called at the top level of a kernel. keys / tmp_keys: 1-D
    tensors of key_dtype (u32, i32, f32, u64, i64, f64); values /
    tmp_values: 1-D tensors of one scalar type (pass keys / tmp_keys again
    with has_values=False to sort keys only); tmp_* are workspace. scratch:
    a u32 tensor of sort_scratch_slots(N, log256_max_n) slots; n: a 0-d i32
    ndarray holding the count, n <= 256 ** log256_max_n; end_bit: the low
    key bits to sort by (a multiple of 8; the full width for float keys)."""
    what = "qd.algorithms.sort()"
    _common.in_kernel_top_level(what)
    depth = _common.validate_log256_max_n(log256_max_n)
    key_dtype = _common.check_dtype(what, "key_dtype", key_dtype, _KEY_DTYPES)
    _common.check_same(what, "keys", keys, key_dtype)
    _common.check_same(what, "tmp_keys", tmp_keys, key_dtype)
    if has_values not in (True, False):
        raise QuadrantsTypeError(f"{what}: has_values must be a compile-time bool, got "
                                 f"{has_values!r}")
    if has_values:
        value_dtype = _common.check_dtype(what, "values", _common.buffer_dtype(
            values, what, "values"))
        _common.check_same(what, "tmp_values", tmp_values, value_dtype)
    _common.check_same(what, "scratch", scratch, types.u32)
    _check_count_ref(what, n)
    key_mask, bits_type = _key_order(what, key_dtype, end_bit)
    # Runs of width 2^31 would cover more than any i32 count.
    passes = min(8 * depth, 31)
    buffers = [(keys, values), (tmp_keys, tmp_values)]
    for p in range(passes):
        (src_k, src_v), (dst_k, dst_v) = buffers[p % 2], buffers[(p + 1) % 2]
        _common.phase(_merge_pass, src_k=src_k, dst_k=dst_k, src_v=src_v, dst_v=dst_v, n=n,
                      w=1 << p, has_values=bool(has_values), key_mask=key_mask,
                      bits_type=bits_type)
    _common.phase(_copy_back, keys=keys, tmp_keys=tmp_keys, values=values,
                  tmp_values=tmp_values, n=n, passes=passes, has_values=bool(has_values))


def _min_log256_for_n(n):
    """The smallest log256_max_n that covers n elements."""
    return _common.depth_for_n(n)


@intrinsic
def sort_scratch_slots(n, log256_max_n=None):
    """The u32 scratch slots sort needs for up to n elements: one (the merge
    sort ping-pongs between keys and tmp_keys instead)."""
    if log256_max_n is None:
        log256_max_n = _common.depth_for_n(n)
    _common.validate_log256_max_n(log256_max_n)
    return 1
