"""qd.simt: block-shared arrays, block barriers and thread indices,
subgroup shuffles, votes, reductions and scans, grid fences and CUDA's
warp intrinsics, checked against numpy on the GPU backends (lavapipe's
subgroups have 8 lanes, NVIDIA's 32: the checks follow group_size()). The
CPU has no blocks: there these raise upstream's error when the kernel
compiles."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsGradientError,
                                      QuadrantsTypeError)
from tests import test_utils

I32 = qd.types.ndarray(qd.i32, ndim=1)
F32 = qd.types.ndarray(qd.f32, ndim=1)
SG = qd.simt.subgroup
BLOCK = qd.simt.block


@test_utils.test(arch=qd.gpu)
def test_shared_array_exchanges_values_within_a_block():
    block = 64

    @qd.kernel
    def reverse(out: I32):
        qd.loop_config(block_dim=block)
        for i in range(out.shape[0]):
            buf = BLOCK.SharedArray((block,), qd.i32)
            t = BLOCK.thread_idx()
            buf[t] = i * 3
            BLOCK.sync()
            out[i] = buf[block - 1 - t]

    out = qd.ndarray(qd.i32, shape=(block * 5,))
    reverse(out)
    i = np.arange(block * 5)
    expected = 3 * ((i // block) * block + block - 1 - i % block)
    np.testing.assert_array_equal(out.to_numpy(), expected)


@test_utils.test(arch=qd.gpu)
def test_shared_array_two_dimensions_vectors_and_atomics():
    block = 32

    @qd.kernel
    def fill(out: I32, vec_out: F32, sums: F32):
        qd.loop_config(block_dim=block)
        for i in range(out.shape[0]):
            grid = BLOCK.SharedArray((4, 8), qd.i32)
            vecs = BLOCK.SharedArray(block, qd.math.vec3)
            total = BLOCK.SharedArray((1,), qd.f32)
            t = BLOCK.thread_idx()
            grid[t // 8, t % 8] = t * t
            vecs[t] = qd.math.vec3(t, 2 * t, 3 * t)
            if t == 0:
                total[0] = 0.0
            BLOCK.sync()
            qd.atomic_add(total[0], 0.5 * t)
            BLOCK.sync()
            out[i] = grid[(block - 1 - t) // 8, (block - 1 - t) % 8]
            vec_out[i] = vecs[(t + 1) % block].z
            sums[i] = total[0]

    n = block * 3
    out, vec_out, sums = (qd.ndarray(dt, shape=(n,)) for dt in (qd.i32, qd.f32, qd.f32))
    fill(out, vec_out, sums)
    t = np.arange(n) % block
    np.testing.assert_array_equal(out.to_numpy(), (block - 1 - t) ** 2)
    np.testing.assert_array_equal(vec_out.to_numpy(), 3.0 * ((t + 1) % block))
    np.testing.assert_array_equal(sums.to_numpy(), np.full(n, 0.5 * block * (block - 1) / 2))


@test_utils.test(arch=qd.gpu)
def test_block_barriers_with_predicates_and_thread_indices():
    block = 64

    @qd.kernel
    def votes(flags: I32, out_all: I32, out_any: I32, out_count: I32, local: I32,
              glob: I32):
        qd.loop_config(block_dim=block)
        for i in range(flags.shape[0]):
            out_all[i] = BLOCK.sync_all_nonzero(flags[i])
            out_any[i] = BLOCK.sync_any_nonzero(flags[i])
            out_count[i] = BLOCK.sync_count_nonzero(flags[i])
            local[i] = BLOCK.thread_idx()
            glob[i] = BLOCK.global_thread_idx()

    n = block * 3
    flags = np.zeros(n, np.int32)
    flags[:block] = 7                     # block 0: every thread
    flags[block + 5] = flags[block + 9] = 1   # block 1: two threads
    arrays = [qd.ndarray(qd.i32, shape=(n,)) for _ in range(6)]
    arrays[0].from_numpy(flags)
    votes(*arrays)
    all_, any_, count, local, glob = (a.to_numpy() for a in arrays[1:])
    per_block = lambda values: np.repeat(values, block)  # noqa: E731
    np.testing.assert_array_equal(all_, per_block([1, 0, 0]))
    np.testing.assert_array_equal(any_, per_block([1, 1, 0]))
    np.testing.assert_array_equal(count, per_block([block, 2, 0]))
    np.testing.assert_array_equal(local, np.arange(n) % block)
    np.testing.assert_array_equal(glob, np.arange(n))


@test_utils.test(arch=qd.gpu)
def test_subgroup_shuffles_and_votes():
    size = SG.group_size()
    assert size in (8, 16, 32, 64) and 2 ** SG.log2_group_size() == size

    @qd.kernel
    def lanes(lane: I32, down: I32, up: I32, xor: I32, first: F32, ballot: I32, elect: I32,
              any_odd: I32):
        qd.loop_config(block_dim=size * 2)
        for i in range(lane.shape[0]):
            lane[i] = SG.invocation_id()
            down[i] = SG.shuffle_down(i * 10, 1)
            up[i] = SG.shuffle_up(i * 10, 1)
            xor[i] = SG.shuffle_xor(i, 1)
            first[i] = SG.shuffle(qd.f32(i) + 0.25, 0)
            ballot[i] = qd.cast(SG.ballot(i % 3 == 0) & qd.u64(0xFFFFFFFF), qd.i32)
            elect[i] = SG.elect()
            any_odd[i] = SG.any_true(i % size == size - 1)

    n = size * 4
    arrays = [qd.ndarray(qd.f32 if k == 4 else qd.i32, shape=(n,)) for k in range(8)]
    lanes(*arrays)
    lane, down, up, xor, first, ballot, elect, any_odd = (a.to_numpy() for a in arrays)
    i = np.arange(n)
    np.testing.assert_array_equal(lane, i % size)
    inside = i % size != size - 1
    np.testing.assert_array_equal(down[inside], (i[inside] + 1) * 10)
    np.testing.assert_array_equal(up[i % size != 0], (i[i % size != 0] - 1) * 10)
    np.testing.assert_array_equal(xor, i ^ 1)
    np.testing.assert_array_equal(first, (i - i % size) + 0.25)
    base = i - i % size
    expected = [sum(1 << k for k in range(size) if (b + k) % 3 == 0) & 0xFFFFFFFF
                for b in base]
    np.testing.assert_array_equal(ballot.astype(np.uint32), np.array(expected, np.uint32))
    np.testing.assert_array_equal(elect, (i % size == 0).astype(np.int32))
    np.testing.assert_array_equal(any_odd, np.ones(n, np.int32))


@pytest.mark.parametrize("dtype", [qd.i32, qd.f32, qd.f64, qd.i64])
@test_utils.test(arch=qd.gpu)
def test_subgroup_reductions_and_scans(dtype):
    if dtype == qd.f64 and qd.cfg.arch == qd.vulkan and not \
            qd.lang.impl.get_runtime().prog.get_device_caps().get(
                qd._lib.core.DeviceCapability.spirv_has_float64):
        pytest.skip("the Vulkan device has no f64")
    size = SG.group_size()
    log2 = SG.log2_group_size()
    arr = qd.types.ndarray(dtype, ndim=1)

    @qd.kernel
    def scan(src: arr, total: arr, total_all: arr, incl: arr, excl: arr, top: arr):
        qd.loop_config(block_dim=size)
        for i in range(src.shape[0]):
            v = src[i]
            total[i] = SG.reduce_add(v)
            total_all[i] = SG.reduce_all_add(v)
            incl[i] = SG.inclusive_add(v)
            excl[i] = SG.exclusive_add(v)
            top[i] = SG.reduce_all_max_tiled(v, log2 - 1)

    n = size * 3
    rng = np.random.default_rng(1)
    np_type = {qd.i32: np.int32, qd.f32: np.float32, qd.f64: np.float64, qd.i64: np.int64}[dtype]
    values = rng.integers(-50, 50, n).astype(np_type)
    if dtype == qd.i64:
        values = values * (1 << 40)
    arrays = [qd.ndarray(dtype, shape=(n,)) for _ in range(6)]
    arrays[0].from_numpy(values)
    scan(*arrays)
    total, total_all, incl, excl, top = (a.to_numpy() for a in arrays[1:])
    groups = values.reshape(-1, size)
    leaders = np.arange(n) % size == 0
    np.testing.assert_array_equal(total[leaders], groups.sum(axis=1))
    np.testing.assert_array_equal(total_all, np.repeat(groups.sum(axis=1), size))
    np.testing.assert_array_equal(incl, np.cumsum(groups, axis=1).ravel())
    np.testing.assert_array_equal(excl, (np.cumsum(groups, axis=1) - groups).ravel())
    halves = values.reshape(-1, size // 2)
    np.testing.assert_array_equal(top, np.repeat(halves.max(axis=1), size // 2))


@test_utils.test(arch=qd.gpu)
def test_block_reductions_and_scans_span_subgroups():
    block = SG.group_size() * 4

    @qd.kernel
    def scan(src: F32, total: F32, low: F32, incl: F32, excl: F32):
        qd.loop_config(block_dim=block)
        for i in range(src.shape[0]):
            v = src[i]
            total[i] = BLOCK.reduce_add(v, block, qd.f32)
            low[i] = BLOCK.reduce_all_min(v, block, qd.f32)
            incl[i] = BLOCK.inclusive_add(v, block, qd.f32)
            excl[i] = BLOCK.exclusive_add(v, block, qd.f32)

    n = block * 3
    values = np.random.default_rng(2).integers(-20, 20, n).astype(np.float32)
    arrays = [qd.ndarray(qd.f32, shape=(n,)) for _ in range(5)]
    arrays[0].from_numpy(values)
    scan(*arrays)
    total, low, incl, excl = (a.to_numpy() for a in arrays[1:])
    blocks = values.reshape(-1, block)
    np.testing.assert_array_equal(total[::block], blocks.sum(axis=1))
    np.testing.assert_array_equal(low, np.repeat(blocks.min(axis=1), block))
    np.testing.assert_array_equal(incl, np.cumsum(blocks, axis=1).ravel())
    np.testing.assert_array_equal(excl, (np.cumsum(blocks, axis=1) - blocks).ravel())


@test_utils.test(arch=qd.gpu)
def test_grid_fence_orders_a_flag_after_its_data():
    @qd.kernel
    def publish(data: I32, flag: I32):
        for i in range(data.shape[0]):
            data[i] = i + 1
            qd.simt.grid.mem_fence()
            qd.atomic_add(flag[0], 1)

    data, flag = qd.ndarray(qd.i32, shape=(1000,)), qd.ndarray(qd.i32, shape=(1,))
    publish(data, flag)
    np.testing.assert_array_equal(data.to_numpy(), np.arange(1, 1001))
    assert flag.to_numpy()[0] == 1000


@test_utils.test(arch=qd.cuda)
def test_cuda_warp_intrinsics_take_masks():
    @qd.kernel
    def warp(src: I32, shfl: I32, vote: I32, ballot: I32, match: I32, active: I32):
        qd.loop_config(block_dim=32)
        for i in range(src.shape[0]):
            full = qd.u32(0xFFFFFFFF)
            shfl[i] = qd.simt.warp.shfl_down_i32(full, src[i], 2)
            vote[i] = qd.simt.warp.all_nonzero(full, src[i] % 2)
            ballot[i] = qd.simt.warp.ballot(src[i] % 2)
            match[i] = qd.cast(qd.simt.warp.match_any(full, src[i] % 4), qd.i32)
            active[i] = qd.cast(qd.simt.warp.active_mask(), qd.i32)
            qd.simt.warp.sync(full)

    n = 64
    src = np.arange(n, dtype=np.int32)
    arrays = [qd.ndarray(qd.i32, shape=(n,)) for _ in range(6)]
    arrays[0].from_numpy(src)
    warp(*arrays)
    shfl, vote, ballot, match, active = (a.to_numpy() for a in arrays[1:])
    lane = src % 32
    np.testing.assert_array_equal(shfl[lane < 30], src[lane < 30] + 2)
    np.testing.assert_array_equal(vote, np.zeros(n, np.int32))
    np.testing.assert_array_equal(ballot.astype(np.uint32), np.full(n, 0xAAAAAAAA, np.uint32))
    expected = [sum(1 << k for k in range(32) if k % 4 == l % 4) for l in lane]
    np.testing.assert_array_equal(match.astype(np.uint32), np.array(expected, np.uint32))
    np.testing.assert_array_equal(active.astype(np.uint32), np.full(n, 0xFFFFFFFF, np.uint32))


@test_utils.test(arch=qd.cuda)
def test_cuda_shared_arrays_beyond_48_kib_opt_in():
    limit = qd.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=False)
    if limit < 96 * 1024:
        pytest.skip(f"the device allows {limit} bytes of shared memory per block")
    count = 96 * 1024 // 4

    @qd.kernel
    def big(out: F32):
        qd.loop_config(block_dim=256)
        for i in range(out.shape[0]):
            buf = BLOCK.SharedArray((count,), qd.f32)
            t = BLOCK.thread_idx()
            j = t
            while j < count:
                buf[j] = qd.f32(j)
                j += 256
            BLOCK.sync()
            out[i] = buf[count - 1 - t]

    out = qd.ndarray(qd.f32, shape=(512,))
    big(out)
    np.testing.assert_array_equal(out.to_numpy(), count - 1 - np.arange(512) % 256)


@test_utils.test(arch=qd.vulkan)
def test_vulkan_rejects_cuda_warp_intrinsics():
    @qd.kernel
    def warp(out: I32):
        for i in range(out.shape[0]):
            out[i] = qd.simt.warp.active_mask()

    with pytest.raises(QuadrantsCompilationError, match="warp_active_mask.*CUDA"):
        warp(qd.ndarray(qd.i32, shape=(32,)))


@test_utils.test(arch=qd.cpu)
def test_cpu_has_no_blocks_or_subgroups():
    @qd.kernel
    def barrier(out: I32):
        for i in range(out.shape[0]):
            BLOCK.sync()
            out[i] = 1

    with pytest.raises(QuadrantsCompilationError, match="qd.block.sync is not supported for "
                                                         "arch cpu"):
        barrier(qd.ndarray(qd.i32, shape=(4,)))

    @qd.kernel
    def shared(out: I32):
        for i in range(out.shape[0]):
            buf = BLOCK.SharedArray((4,), qd.i32)
            buf[0] = 1
            out[i] = buf[0]

    with pytest.raises(QuadrantsCompilationError, match="SharedArray is not supported"):
        shared(qd.ndarray(qd.i32, shape=(4,)))
    assert SG.group_size() == 0
    assert qd.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=True) == 0
    with pytest.raises(RuntimeError, match="get_max_shared_memory_bytes"):
        qd.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=False)


@test_utils.test(arch=qd.gpu)
def test_misuse_is_reported():
    with pytest.raises(QuadrantsCompilationError, match="shape must be an integer"):
        @qd.kernel
        def bad_shape(out: I32):
            for i in range(out.shape[0]):
                buf = BLOCK.SharedArray((2.5,), qd.i32)
                out[i] = buf[0]
        bad_shape(qd.ndarray(qd.i32, shape=(4,)))

    with pytest.raises(QuadrantsCompilationError, match="Expected 2 indices, got 1"):
        @qd.kernel
        def bad_index(out: I32):
            for i in range(out.shape[0]):
                buf = BLOCK.SharedArray((2, 2), qd.i32)
                out[i] = buf[0]
        bad_index(qd.ndarray(qd.i32, shape=(4,)))

    with pytest.raises(QuadrantsTypeError, match="block_dim=...\\) is at most 1024"):
        @qd.kernel
        def too_wide(out: I32):
            qd.loop_config(block_dim=2048)
            for i in range(out.shape[0]):
                out[i] = 1
        too_wide(qd.ndarray(qd.i32, shape=(4,)))

    with pytest.raises(QuadrantsCompilationError, match="can only be called in kernel code"):
        BLOCK.sync()


@test_utils.test(arch=qd.gpu)
def test_gradients_through_block_cooperation_are_refused_by_name():
    x = qd.field(qd.f32, shape=64, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def total():
        qd.loop_config(block_dim=64)
        for i in range(64):
            loss[None] += SG.shuffle_xor(x[i], 1)

    with pytest.raises(QuadrantsGradientError, match="qd.simt primitive 'subgroup_shuffle_xor'"):
        total.grad()


def test_deprecated_names_warn_once(monkeypatch):
    monkeypatch.setattr(SG, "_barrier_deprecation_warned", False)
    monkeypatch.setattr(SG, "sync", lambda: None)
    with pytest.warns(DeprecationWarning, match="subgroup.barrier\\(\\) is deprecated") as seen:
        for _ in range(3):
            SG.barrier()
    assert len([w for w in seen if w.category is DeprecationWarning]) == 1


def _tile_size():
    return min(16, SG.group_size())


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test(arch=qd.gpu)
def test_register_tile_cholesky_solve_and_rank1_update(dtype):
    if dtype == qd.f64 and qd.cfg.arch == qd.vulkan and not \
            qd.lang.impl.get_runtime().prog.get_device_caps().get(
                qd._lib.core.DeviceCapability.spirv_has_float64):
        pytest.skip("the Vulkan device has no f64")
    from quadrants.lang.simt._tile import _make_tile  # noqa: PLC0415
    n = _tile_size()
    Tile = _make_tile(n, dtype)
    np_type = np.float32 if dtype == qd.f32 else np.float64
    rng = np.random.default_rng(3)
    batches = 3
    m = rng.random((batches, n, n))
    spd = m @ m.transpose(0, 2, 1) + n * np.eye(n)
    rhs = rng.random((batches, n, n))
    vecs = rng.random((n, 2))
    arr3 = qd.types.NDArray[dtype, 3]
    arr2 = qd.types.NDArray[dtype, 2]

    @qd.kernel
    def factor(a: arr3, b: arr3, l_out: arr3, v: arr2, upd: arr2):
        qd.loop_config(block_dim=n)
        for g in range(batches * n):
            batch = g // n
            t = Tile.zeros()
            t[:] = a[batch, 0:n, 0:n]
            if batch == 0:
                u = Tile.zeros()
                u[:] = t
                u -= qd.outer(v[0:n, 0], v[0:n, 1])
                upd[0:n, 0:n] = u
            t.cholesky_(1e-12)
            l_out[batch, 0:n, 0:n] = t
            x = Tile.zeros()
            x[:] = b[batch, 0:n, 0:n]
            t.solve_triangular_(x)
            b[batch, 0:n, 0:n] = x

    a, b, l_out = (qd.ndarray(dtype, (batches, n, n)) for _ in range(3))
    v, upd = qd.ndarray(dtype, (n, 2)), qd.ndarray(dtype, (n, n))
    a.from_numpy(spd.astype(np_type))
    b.from_numpy(rhs.astype(np_type))
    v.from_numpy(vecs.astype(np_type))
    factor(a, b, l_out, v, upd)
    tol = 1e-4 if dtype == qd.f32 else 1e-10
    chol = np.linalg.cholesky(spd)
    np.testing.assert_allclose(l_out.to_numpy(), chol, atol=tol * n)
    expected = np.stack([np.linalg.solve(chol[k], rhs[k].T).T for k in range(batches)])
    np.testing.assert_allclose(b.to_numpy(), expected, atol=tol * n)
    np.testing.assert_allclose(upd.to_numpy(), spd[0] - np.outer(vecs[:, 0], vecs[:, 1]),
                               atol=tol)


@test_utils.test(arch=qd.gpu)
def test_register_tile_partial_loads_and_stores_clip_to_the_slice_and_array():
    from quadrants.lang.simt._tile import _make_tile  # noqa: PLC0415
    n = _tile_size()
    Tile = _make_tile(n, qd.f32)

    @qd.kernel
    def copy(src: qd.types.NDArray[qd.f32, 2], dst: qd.types.NDArray[qd.f32, 2],
             rows: qd.i32, cols: qd.i32):
        qd.loop_config(block_dim=n)
        for _ in range(n):
            t = Tile.eye()
            t[:] = src[1:1 + rows, 2:2 + cols]
            dst[0:n, 0:n] = t

    src = qd.ndarray(qd.f32, (n + 3, n - 1))
    data = np.arange((n + 3) * (n - 1), dtype=np.float32).reshape(n + 3, n - 1)
    src.from_numpy(data)
    dst = qd.ndarray(qd.f32, (n, n - 2))   # narrower than the tile: columns clip
    copy(src, dst, n - 2, n)
    # Rows and columns outside the slice or the array keep the identity's.
    expected = np.eye(n, n - 2, dtype=np.float32)
    expected[:n - 2, :n - 3] = data[1:n - 1, 2:n - 1]
    np.testing.assert_array_equal(dst.to_numpy(), expected)


@test_utils.test(arch=qd.cpu)
def test_register_tiles_need_a_gpu():
    @qd.kernel
    def make(dst: qd.types.NDArray[qd.f32, 2]):
        for _ in range(16):
            t = qd.simt.Tile16x16.zeros()
            dst[0:16, 0:16] = t

    with pytest.raises(qd.QuadrantsSyntaxError, match="requires a GPU backend"):
        make(qd.ndarray(qd.f32, (16, 16)))
    with pytest.raises(TypeError, match="does not support composition"):
        qd.outer(1, 2) + qd.outer(3, 4)


@test_utils.test(arch=qd.gpu)
def test_forward_mode_moves_tangents_with_shuffled_values():
    size = SG.group_size()
    x = qd.field(qd.f32, shape=size, needs_dual=True)
    y = qd.field(qd.f32, shape=size, needs_dual=True)

    @qd.kernel
    def swap_squares():
        qd.loop_config(block_dim=size)
        for i in range(size):
            y[i] = SG.shuffle_xor(x[i] * x[i], 1)

    values = np.arange(1, size + 1, dtype=np.float32)
    x.from_numpy(values)
    seed = [0.0] * size
    seed[2] = 1.0   # d/dx_2
    with qd.ad.FwdMode(loss=y, param=x, seed=seed):
        swap_squares()
    expected = np.zeros(size, np.float32)
    expected[3] = 2 * values[2]   # y_3 = x_2^2
    np.testing.assert_allclose(y.dual.to_numpy(), expected)
    np.testing.assert_allclose(y.to_numpy(), values[np.arange(size) ^ 1] ** 2)

    @qd.kernel
    def through_shared():
        qd.loop_config(block_dim=size)
        for i in range(size):
            buf = BLOCK.SharedArray((size,), qd.f32)
            buf[BLOCK.thread_idx()] = x[i]
            BLOCK.sync()
            y[i] = buf[size - 1 - BLOCK.thread_idx()]

    with pytest.raises(QuadrantsGradientError, match="forward mode cannot carry a tangent "
                                                     "through qd.simt.block.SharedArray"):
        with qd.ad.FwdMode(loss=y, param=x, seed=seed):
            through_shared()


@test_utils.test(arch=qd.cuda)
def test_shared_arrays_belong_to_tasks_not_real_functions():
    @qd.real_func
    def staged(x: qd.f32) -> qd.f32:
        buf = BLOCK.SharedArray((32,), qd.f32)
        buf[BLOCK.thread_idx()] = x
        return buf[BLOCK.thread_idx()]

    @qd.kernel
    def uses(out: F32):
        qd.loop_config(block_dim=32)
        for i in range(out.shape[0]):
            out[i] = staged(qd.f32(i))

    with pytest.raises(QuadrantsCompilationError, match="SharedArray in a qd.real_func"):
        uses(qd.ndarray(qd.f32, shape=(32,)))
