"""qd.algorithms (reduce, exclusive scan, select, sort, reduce-by-key
composed at the top level of a kernel, their scratch-size helpers, and the
deprecated parallel_sort and PrefixSumExecutor) and qd.linalg's
matrix-free solvers, against numpy, for sizes around the block size (256),
non-powers of two and large arrays."""
import math
import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants.algorithms._radix_sort import _min_log256_for_n
from quadrants.algorithms._reduce import _reduce_depth_for_n
from quadrants.lang import runtime
from tests import test_utils

_NP = {"i32": np.int32, "u32": np.uint32, "f32": np.float32, "i64": np.int64,
       "u64": np.uint64, "f64": np.float64}
_SIZES = [1, 255, 256, 257, 1024, 65537]


def _require(dtype):
    arch = runtime.state.options.get("arch", runtime.cpu)
    if dtype in ("i64", "u64", "f64") and \
            not qd.is_extension_supported(arch, qd.extension.data64):
        pytest.skip(f"arch {arch} has no 64-bit types (qd.extension.data64)")


def _values(rng, dtype, n, bound=1000):
    if dtype[0] == "f":
        return rng.uniform(-10.0, 10.0, n).astype(_NP[dtype])
    low = 0 if dtype[0] == "u" else -bound
    return rng.integers(low, bound, n).astype(_NP[dtype])


def _scratch_dtype(dtype):
    return qd.u64 if dtype in ("i64", "u64", "f64") else qd.u32


@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("dtype", ["i32", "f32", "u64"])
@test_utils.test()
def test_reduce(dtype, n):
    _require(dtype)
    qd_dt, depth = getattr(qd, dtype), _reduce_depth_for_n(n)
    host = _values(np.random.default_rng(n), dtype, n)
    arr = qd.field(qd_dt, shape=n)
    sums, mins, maxs = (qd.field(qd_dt, shape=1) for _ in range(3))
    scratch = qd.field(_scratch_dtype(dtype), shape=qd.algorithms.reduce_scratch_slots(n, depth))
    count = qd.field(qd.i32, shape=1)
    arr.from_numpy(host)
    count[0] = n

    @qd.kernel
    def run():
        # Each op starts after the previous one's phases have finished.
        qd.algorithms.reduce_add(arr, sums, scratch, count[0], qd_dt, depth)
        qd.algorithms.reduce_min(arr, mins, scratch, count[0], qd_dt, depth)
        qd.algorithms.reduce_max(arr, maxs, scratch, count[0], qd_dt, depth)

    run()
    assert mins[0] == host.min() and maxs[0] == host.max()
    if dtype == "f32":
        assert sums[0] == pytest.approx(host.astype(np.float64).sum(), rel=1e-5, abs=1e-3)
    else:
        assert sums[0] == host.sum(dtype=_NP[dtype])


@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("dtype", ["i32", "f32", "u64"])
@pytest.mark.parametrize("op", ["add", "min", "max"])
@test_utils.test()
def test_exclusive_scan(op, dtype, n):
    _require(dtype)
    qd_dt, depth = getattr(qd, dtype), _reduce_depth_for_n(n)
    host = _values(np.random.default_rng(n + 1), dtype, n)
    arr, out = qd.field(qd_dt, shape=n), qd.field(qd_dt, shape=n)
    scratch = qd.field(_scratch_dtype(dtype),
                       shape=qd.algorithms.exclusive_scan_scratch_slots(n, depth))
    count = qd.field(qd.i32, shape=1)
    arr.from_numpy(host)
    count[0] = n
    scan = getattr(qd.algorithms, f"exclusive_scan_{op}")

    @qd.kernel
    def run():
        scan(arr, out, scratch, count[0], qd_dt, depth)

    run()
    got = out.to_numpy()
    info = np.finfo if dtype[0] == "f" else np.iinfo
    first = {"add": 0, "min": info(_NP[dtype]).max, "max": info(_NP[dtype]).min}[op]
    if dtype[0] == "f" and op != "add":
        first = np.inf if op == "min" else -np.inf
    accumulate = {"add": np.cumsum, "min": np.minimum.accumulate,
                  "max": np.maximum.accumulate}[op]
    want = np.concatenate([[first], accumulate(host.astype(np.float64) if dtype == "f32"
                                               else host)[:-1]])
    if dtype == "f32":
        np.testing.assert_allclose(got, want, rtol=2e-5 * math.sqrt(n), atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want.astype(_NP[dtype]))


@test_utils.test()
def test_scan_large_with_ndarrays_and_a_smaller_count():
    n, live = 1 << 18, 262_147 - 15_000
    depth = 3
    i32_1d = qd.types.ndarray(qd.i32, ndim=1)
    u32_1d = qd.types.ndarray(qd.u32, ndim=1)

    @qd.kernel
    def run(arr: i32_1d, out: i32_1d, scratch: u32_1d, count: i32_1d):
        for i in range(count[0]):  # a phase of the user's before the scan
            arr[i] = arr[i] % 7
        qd.algorithms.exclusive_scan_add(arr, out, scratch, count[0], qd.i32, depth)

    host = np.random.default_rng(5).integers(0, 1000, n).astype(np.int32)
    arr, out = host.copy(), np.full(n, -1, np.int32)
    run(arr, out, np.zeros(qd.algorithms.exclusive_scan_scratch_slots(n, depth), np.uint32),
        np.array([live], np.int32))
    want = np.concatenate([[0], np.cumsum(host[:live] % 7)[:-1]])
    np.testing.assert_array_equal(out[:live], want)
    assert np.all(out[live:] == -1)


@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("dtype", ["i32", "f32", "u64"])
@test_utils.test()
def test_select(dtype, n):
    _require(dtype)
    qd_dt, depth = getattr(qd, dtype), _reduce_depth_for_n(n)
    rng = np.random.default_rng(n + 2)
    host = _values(rng, dtype, n, bound=10000)
    flags_host = (rng.random(n) < 0.3).astype(np.int32)
    arr, out = qd.field(qd_dt, shape=n), qd.field(qd_dt, shape=n)
    flags, num_out = qd.field(qd.i32, shape=n), qd.field(qd.i32, shape=1)
    scratch = qd.field(qd.u32, shape=qd.algorithms.select_scratch_slots(n))
    count = qd.field(qd.i32, shape=1)
    arr.from_numpy(host)
    flags.from_numpy(flags_host)
    count[0] = n

    @qd.kernel
    def run():
        qd.algorithms.select(arr, flags, out, num_out, scratch, count[0], depth)

    run()
    kept = int(num_out[0])
    assert kept == flags_host.sum()
    np.testing.assert_array_equal(out.to_numpy()[:kept], host[flags_host == 1])


@test_utils.test()
def test_select_struct_elements():
    n = 1000
    particle = qd.types.struct(pos=qd.math.vec2, id=qd.i32)
    arr, out = particle.field(shape=n), particle.field(shape=n)
    flags, num_out = qd.field(qd.i32, shape=n), qd.field(qd.i32, shape=1)
    scratch = qd.field(qd.u32, shape=qd.algorithms.select_scratch_slots(n))

    @qd.kernel
    def run():
        for i in range(n):
            arr[i].pos = qd.math.vec2(i * 0.5, -i)
            arr[i].id = i
            flags[i] = 1 if i % 3 == 1 else 0
        qd.algorithms.select(arr, flags, out, num_out, scratch, n, 2)

    run()
    kept = np.arange(1, n, 3)
    assert num_out[0] == len(kept)
    np.testing.assert_array_equal(out.id.to_numpy()[:len(kept)], kept)
    np.testing.assert_allclose(out.pos.to_numpy()[:len(kept)],
                               np.stack([kept * 0.5, -kept], axis=1))


def _keys(rng, dtype, n):
    if dtype == "u32":
        return rng.integers(0, 2**32, n, dtype=np.uint32)
    if dtype == "i32":
        return rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int32)
    if dtype == "u64":
        return rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2)
    if dtype == "i64":
        return rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    keys = (rng.standard_normal(n) * 1e3).astype(_NP[dtype])
    if n >= 6:
        keys[:6] = [-0.0, 0.0, np.inf, -np.inf, 1e-30, -1e-30]
    return keys


@pytest.mark.parametrize("n", [1, 257, 1024, 65536])
@pytest.mark.parametrize("dtype", ["u32", "i32", "f32", "u64", "i64", "f64"])
@test_utils.test()
def test_sort_key_value(dtype, n):
    _require(dtype)
    qd_dt, depth = getattr(qd, dtype), _min_log256_for_n(n)
    end_bit = 8 * np.dtype(_NP[dtype]).itemsize
    key_nd = qd.types.ndarray(qd_dt, ndim=1)
    u32_nd = qd.types.ndarray(qd.u32, ndim=1)

    @qd.kernel
    def run(keys: key_nd, tmp_keys: key_nd, values: u32_nd, tmp_values: u32_nd,
            scratch: u32_nd, count: qd.types.ndarray(qd.i32, ndim=0)):
        qd.algorithms.sort(keys, tmp_keys, values, tmp_values, scratch, count, qd_dt, True,
                           end_bit, depth)

    host = _keys(np.random.default_rng(n), dtype, n)
    keys, tmp_keys = qd.ndarray(qd_dt, shape=(n,)), qd.ndarray(qd_dt, shape=(n,))
    values, tmp_values = qd.ndarray(qd.u32, shape=(n,)), qd.ndarray(qd.u32, shape=(n,))
    scratch = qd.ndarray(qd.u32, shape=(qd.algorithms.sort_scratch_slots(n, depth),))
    count = qd.ndarray(qd.i32, shape=())
    keys.from_numpy(host)
    values.from_numpy(np.arange(n, dtype=np.uint32))
    count.fill(n)
    run(keys, tmp_keys, values, tmp_values, scratch, count)
    order = np.argsort(host, kind="stable")
    np.testing.assert_array_equal(keys.to_numpy(), host[order])
    np.testing.assert_array_equal(values.to_numpy(), order.astype(np.uint32))


@test_utils.test()
def test_sort_keys_only_low_bits_and_nan():
    n, depth = 5000, 2
    keys, tmp = qd.field(qd.u32, shape=n), qd.field(qd.u32, shape=n)
    fkeys, ftmp = qd.field(qd.f32, shape=n), qd.field(qd.f32, shape=n)
    scratch = qd.field(qd.u32, shape=qd.algorithms.sort_scratch_slots(n, depth))
    count = qd.field(qd.i32, shape=())

    @qd.kernel
    def run():
        qd.algorithms.sort(keys, tmp, keys, tmp, scratch, count, qd.u32, False, 16, depth)
        qd.algorithms.sort(fkeys, ftmp, fkeys, ftmp, scratch, count, qd.f32, False, 32, depth)

    rng = np.random.default_rng(9)
    host = rng.integers(0, 2**32, n, dtype=np.uint32)
    fhost = rng.standard_normal(n).astype(np.float32)
    fhost[::7] = np.nan
    keys.from_numpy(host)
    fkeys.from_numpy(fhost)
    live = n - 123
    count[None] = live
    run()
    # Sorted by the low 16 bits only, stably; the tail past the count untouched.
    want = host[:live][np.argsort(host[:live] & 0xFFFF, kind="stable")]
    np.testing.assert_array_equal(keys.to_numpy()[:live], want)
    np.testing.assert_array_equal(keys.to_numpy()[live:], host[live:])
    np.testing.assert_array_equal(fkeys.to_numpy()[:live], np.sort(fhost[:live]))


@pytest.mark.parametrize("n", _SIZES)
@pytest.mark.parametrize("key_dtype", ["i32", "f32"])
@pytest.mark.parametrize("val_dtype", ["i32", "f32"])
@test_utils.test()
def test_reduce_by_key_add(key_dtype, val_dtype, n):
    depth = _reduce_depth_for_n(n)
    rng = np.random.default_rng(n + 3)
    alphabet = _values(rng, key_dtype, 15, bound=50)
    keys_host = np.repeat(rng.choice(alphabet, n // 3 + 2), rng.integers(1, 8, n // 3 + 2))
    keys_host = np.concatenate([keys_host, np.full(n, keys_host[-1])])[:n]
    values_host = _values(rng, val_dtype, n, bound=100)
    k_dt, v_dt = getattr(qd, key_dtype), getattr(qd, val_dtype)
    keys_in, keys_out = qd.field(k_dt, shape=n), qd.field(k_dt, shape=n)
    values_in, values_out = qd.field(v_dt, shape=n), qd.field(v_dt, shape=n)
    num_runs, count = qd.field(qd.i32, shape=1), qd.field(qd.i32, shape=1)
    scratch = qd.field(qd.u32, shape=qd.algorithms.reduce_by_key_scratch_slots(n))
    keys_in.from_numpy(keys_host)
    values_in.from_numpy(values_host)
    count[0] = n

    @qd.kernel
    def run():
        qd.algorithms.reduce_by_key_add(keys_in, values_in, keys_out, values_out, num_runs,
                                        scratch, count[0], v_dt, depth)

    run()
    heads = np.concatenate([[True], keys_host[1:] != keys_host[:-1]])
    sums = np.zeros(heads.sum())
    np.add.at(sums, np.cumsum(heads) - 1, values_host.astype(np.float64))
    runs = int(num_runs[0])
    assert runs == heads.sum()
    np.testing.assert_array_equal(keys_out.to_numpy()[:runs], keys_host[heads])
    np.testing.assert_allclose(values_out.to_numpy()[:runs], sums, rtol=1e-5, atol=1e-4)


@test_utils.test(arch=qd.cpu)
def test_misuse_is_reported():
    arr, out = qd.field(qd.f32, shape=8), qd.field(qd.f32, shape=8)
    scratch = qd.field(qd.u32, shape=1)

    @qd.kernel
    def in_loop():
        for _ in range(2):
            qd.algorithms.exclusive_scan_add(arr, out, scratch, 8, qd.f32, 1)

    @qd.kernel
    def in_place():
        qd.algorithms.exclusive_scan_add(arr, arr, scratch, 8, qd.f32, 1)

    @qd.kernel
    def wrong_dtype():
        qd.algorithms.reduce_add(arr, out, scratch, 8, qd.i32, 1)

    @qd.kernel
    def too_deep():
        qd.algorithms.reduce_max(arr, out, scratch, 8, qd.f32, 5)

    with pytest.raises(qd.QuadrantsSyntaxError, match="top level of a kernel"):
        in_loop()
    with pytest.raises(qd.QuadrantsCompilationError, match="distinct from arr"):
        in_place()
    with pytest.raises(qd.QuadrantsTypeError, match="arr holds f32, expected i32"):
        wrong_dtype()
    with pytest.raises(qd.QuadrantsCompilationError, match="log256_max_n=5"):
        too_deep()
    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel code"):
        qd.algorithms.reduce_add(arr, out, scratch, 8, qd.f32, 1)


@pytest.mark.parametrize("n", [0, 1, 2, 256, 100_000])
def test_scratch_slots(n):
    a = qd.algorithms
    for fn in (a.reduce_scratch_slots, a.exclusive_scan_scratch_slots, a.sort_scratch_slots):
        assert fn(n) >= 1
        for depth in (1, 2, 3, 4):
            assert fn(n, depth) >= 1
        for depth in (5, 6, 8):
            with pytest.raises(ValueError, match="log256_max_n"):
                fn(n, depth)
    assert a.select_scratch_slots(n) >= max(n, 1)
    assert a.reduce_by_key_scratch_slots(n) >= max(n, 1)


# ---- the deprecated host-side algorithms ----------------------------------------

@pytest.mark.parametrize("dtype", ["i32", "f32"])
@test_utils.test()
def test_parallel_sort(dtype):
    for n in (1, 256, 100_001):
        keys, values = qd.field(getattr(qd, dtype), n), qd.field(getattr(qd, dtype), n)
        host = (np.random.default_rng(n).random(n) * n).astype(_NP[dtype])
        keys.from_numpy(host)
        values.from_numpy(host)
        with pytest.warns(DeprecationWarning, match="qd.algorithms.sort"):
            qd.algorithms.parallel_sort(keys, values)
        np.testing.assert_array_equal(keys.to_numpy(), np.sort(host))
        np.testing.assert_array_equal(values.to_numpy(), keys.to_numpy())


@pytest.mark.parametrize("offset", [-23333, -1, 1, 128])
@pytest.mark.parametrize("dtype", ["i32", "f32"])
@test_utils.test()
def test_parallel_sort_fields_with_offset(dtype, offset):
    n = 4099
    keys = qd.field(getattr(qd, dtype), n, offset=offset)
    values = qd.field(getattr(qd, dtype), n, offset=-offset)
    host = (np.random.default_rng(offset % 97).random(n) * n).astype(_NP[dtype])
    keys.from_numpy(host)
    values.from_numpy(-host)
    with pytest.warns(DeprecationWarning):
        qd.algorithms.parallel_sort(keys, values)
    np.testing.assert_array_equal(keys.to_numpy(), np.sort(host))
    np.testing.assert_array_equal(values.to_numpy(), -keys.to_numpy())
    assert keys[offset] == keys.to_numpy()[0]


@pytest.mark.parametrize("offset", [-23333, -256, 1, 23333])
@test_utils.test()
def test_prefix_sum_executor_with_offset(offset):
    n = 4096
    arr = qd.field(qd.i32, n, offset=offset)
    host = np.random.default_rng(offset % 89).integers(0, n, n).astype(np.int32)
    arr.from_numpy(host)
    with pytest.warns(DeprecationWarning):
        qd.algorithms.PrefixSumExecutor(n).run(arr)
    np.testing.assert_array_equal(arr.to_numpy(), np.cumsum(host, dtype=np.int32))


@test_utils.test()
def test_prefix_sum_executor():
    for n in (512, 1024, 4096, 1000, 70_001):
        arr = qd.field(qd.i32, n)
        host = np.random.default_rng(n).integers(0, n, n).astype(np.int32)
        arr.from_numpy(host)
        with pytest.warns(DeprecationWarning, match="exclusive_scan_add"):
            executor = qd.algorithms.PrefixSumExecutor(n)
        executor.run(arr)
        np.testing.assert_array_equal(arr.to_numpy(), np.cumsum(host, dtype=np.int32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(RuntimeError, match="Only qd.i32"):
            qd.algorithms.PrefixSumExecutor(4).run(qd.field(qd.f32, 4))
        with pytest.raises(ValueError, match="length 4"):
            qd.algorithms.PrefixSumExecutor(4).run(qd.field(qd.i32, 5))


# ---- qd.linalg --------------------------------------------------------------

def _poisson_problem(dtype, grid):
    ax, x, b = (qd.field(dtype, shape=(grid, grid)) for _ in range(3))

    @qd.kernel
    def init():
        for i, j in qd.ndrange(grid, grid):
            b[i, j] = qd.sin(2 * math.pi * i / (grid - 1)) * qd.sin(2 * math.pi * j / (grid - 1))
            x[i, j] = 0.0

    @qd.kernel
    def compute_ax(v: qd.template(), mv: qd.template()):
        for i, j in v:
            left = v[i - 1, j] if i - 1 >= 0 else 0.0
            right = v[i + 1, j] if i + 1 <= grid - 1 else 0.0
            up = v[i, j + 1] if j + 1 <= grid - 1 else 0.0
            down = v[i, j - 1] if j - 1 >= 0 else 0.0
            mv[i, j] = 20 * v[i, j] - left - right - up - down

    init()
    return qd.linalg.LinearOperator(compute_ax), ax, x, b


@pytest.mark.parametrize("solver", ["MatrixFreeCG", "MatrixFreeBICGSTAB"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@test_utils.test()
def test_matrixfree_solvers(solver, dtype):
    _require(dtype)
    grid = 32
    op, ax, x, b = _poisson_problem(getattr(qd, dtype), grid)
    tol = 1e-5 if dtype == "f32" else 1e-10
    assert getattr(qd.linalg, solver)(op, b, x, tol=tol, maxiter=10 * grid * grid)
    op.matvec(x, ax)
    np.testing.assert_allclose(ax.to_numpy(), b.to_numpy(), atol=1e-5 if dtype == "f32"
                               else 1e-9)
    with pytest.raises(qd.QuadrantsRuntimeError, match="Dimension mismatch"):
        op.matvec(x, qd.field(getattr(qd, dtype), shape=(grid, grid + 1)))
