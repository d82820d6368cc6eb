"""The subgroup primitives the rest of qd.simt builds on (re-exported by
qd.simt.subgroup): lane identity, barriers, shuffles and ballots."""
from quadrants.lang import runtime, types
from quadrants.lang.ops import intrinsic
from quadrants.lang.simt._primitive import as_type, emit, require_simt, value_op


@intrinsic
def sync():
    """Waits for every lane of the subgroup; shared memory writes before it
    are visible to the subgroup after it."""
    require_simt("qd.simt.subgroup.sync")
    emit("subgroup_sync", None)


@intrinsic
def mem_fence():
    """Orders this lane's memory accesses as its subgroup sees them."""
    require_simt("qd.simt.subgroup.mem_fence")
    emit("subgroup_mem_fence", None)


@intrinsic
def invocation_id():
    """The lane's index in its subgroup, an i32 in [0, group_size())."""
    require_simt("qd.simt.subgroup.invocation_id")
    return emit("subgroup_invocation_id", types.i32)


def group_size():
    """Lanes per subgroup on this device, a Python int (32 on CUDA, 64 on
    AMDGPU, the device's on Vulkan; 0 on the CPU)."""
    return runtime.program().subgroup_size


def log2_group_size():
    size = group_size()
    assert size > 0 and size & (size - 1) == 0, f"subgroup size {size} is not a power of two"
    return size.bit_length() - 1


@intrinsic
def shuffle(value, index):
    """`value` of lane `index`."""
    require_simt("qd.simt.subgroup.shuffle")
    return value_op("subgroup_shuffle", value, index, what="qd.simt.subgroup.shuffle")


@intrinsic
def shuffle_xor(value, mask):
    """`value` of lane invocation_id() ^ mask."""
    require_simt("qd.simt.subgroup.shuffle_xor")
    return value_op("subgroup_shuffle_xor", value, mask, what="qd.simt.subgroup.shuffle_xor")


@intrinsic
def shuffle_up(value, offset):
    """`value` of lane invocation_id() - offset (lanes below `offset` get
    an unspecified value)."""
    require_simt("qd.simt.subgroup.shuffle_up")
    return value_op("subgroup_shuffle_up", value, offset, what="qd.simt.subgroup.shuffle_up")


@intrinsic
def shuffle_down(value, offset):
    """`value` of lane invocation_id() + offset (lanes past the end get an
    unspecified value)."""
    require_simt("qd.simt.subgroup.shuffle_down")
    return value_op("subgroup_shuffle_down", value, offset,
                    what="qd.simt.subgroup.shuffle_down")


@intrinsic
def broadcast(value, index):
    """`value` of lane `index`, the same for every lane."""
    require_simt("qd.simt.subgroup.broadcast")
    return value_op("subgroup_broadcast", value, index, what="qd.simt.subgroup.broadcast")


@intrinsic
def broadcast_first(value):
    """`value` of lane 0."""
    require_simt("qd.simt.subgroup.broadcast_first")
    return value_op("subgroup_broadcast", value, 0, what="qd.simt.subgroup.broadcast_first")


@intrinsic
def ballot(predicate):
    """A u64 whose bit k is set when `predicate` is nonzero on lane k."""
    require_simt("qd.simt.subgroup.ballot")
    return emit("subgroup_ballot", types.u64,
                as_type(predicate, types.i32, "qd.simt.subgroup.ballot"))
