"""qd.simt.warp: CUDA's warp intrinsics, with explicit u32 lane masks.
Other backends reject them when the kernel compiles (qd.simt.subgroup is
the portable form)."""
from quadrants.lang import types
from quadrants.lang.ops import intrinsic
from quadrants.lang.simt._primitive import as_type, emit, require_simt, scalar


def _mask(mask, what):
    return as_type(mask, types.u32, what)


def _vote(op, mask, predicate, what):
    require_simt(what)
    return emit(op, types.i32, _mask(mask, what), as_type(predicate, types.i32, what))


@intrinsic
def all_nonzero(mask, predicate):
    return _vote("warp_all", mask, predicate, "qd.simt.warp.all_nonzero")


@intrinsic
def any_nonzero(mask, predicate):
    return _vote("warp_any", mask, predicate, "qd.simt.warp.any_nonzero")


@intrinsic
def unique(mask, predicate):
    return _vote("warp_unique", mask, predicate, "qd.simt.warp.unique")


@intrinsic
def active_mask():
    require_simt("qd.simt.warp.active_mask")
    return emit("warp_active_mask", types.u32)


@intrinsic
def ballot(predicate):
    """The bits of the active lanes whose predicate is nonzero (as i32)."""
    require_simt("qd.simt.warp.ballot")
    mask = emit("warp_active_mask", types.u32)
    return emit("warp_ballot", types.i32, mask,
                as_type(predicate, types.i32, "qd.simt.warp.ballot"))


def _shuffle(op, dtype, mask, value, lane, what):
    require_simt(what)
    return emit(op, dtype, _mask(mask, what), as_type(value, dtype, what),
                as_type(lane, types.i32, what))


@intrinsic
def shfl_sync_i32(mask, val, offset):
    return _shuffle("warp_shfl", types.i32, mask, val, offset, "qd.simt.warp.shfl_sync_i32")


@intrinsic
def shfl_sync_f32(mask, val, offset):
    return _shuffle("warp_shfl", types.f32, mask, val, offset, "qd.simt.warp.shfl_sync_f32")


@intrinsic
def shfl_up_i32(mask, val, offset):
    return _shuffle("warp_shfl_up", types.i32, mask, val, offset, "qd.simt.warp.shfl_up_i32")


@intrinsic
def shfl_up_f32(mask, val, offset):
    return _shuffle("warp_shfl_up", types.f32, mask, val, offset, "qd.simt.warp.shfl_up_f32")


@intrinsic
def shfl_down_i32(mask, val, offset):
    return _shuffle("warp_shfl_down", types.i32, mask, val, offset,
                    "qd.simt.warp.shfl_down_i32")


@intrinsic
def shfl_down_f32(mask, val, offset):
    return _shuffle("warp_shfl_down", types.f32, mask, val, offset,
                    "qd.simt.warp.shfl_down_f32")


@intrinsic
def shfl_xor_i32(mask, val, offset):
    return _shuffle("warp_shfl_xor", types.i32, mask, val, offset,
                    "qd.simt.warp.shfl_xor_i32")


def _match(op, mask, value, what):
    require_simt(what)
    return emit(op, types.u32, _mask(mask, what), scalar(value, what))


@intrinsic
def match_any(mask, value):
    """The mask of the lanes in `mask` whose value equals this lane's."""
    return _match("warp_match_any", mask, value, "qd.simt.warp.match_any")


@intrinsic
def match_all(mask, val):
    """`mask` when every lane in it has the same value, else 0."""
    return _match("warp_match_all", mask, val, "qd.simt.warp.match_all")


@intrinsic
def sync(mask):
    """Waits for the lanes in `mask`."""
    require_simt("qd.simt.warp.sync")
    emit("warp_sync", None, _mask(mask, "qd.simt.warp.sync"))


__all__ = ["all_nonzero", "any_nonzero", "unique", "ballot", "shfl_sync_i32", "shfl_sync_f32",
           "shfl_up_i32", "shfl_up_f32", "shfl_down_i32", "shfl_down_f32", "shfl_xor_i32",
           "match_any", "match_all", "active_mask", "sync"]
