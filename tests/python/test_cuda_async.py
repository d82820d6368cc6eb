"""CUDA launches are asynchronous: kernels queue on a stream and the host
waits only where it needs their results (host reads and writes, qd.sync(),
the copy-back of numpy arguments). An error a queued kernel records raises at
the next sync, naming the kernel. Fields and ndarrays live in device memory:
an allocation the device cannot satisfy raises QuadrantsRuntimeError with
its size, and qd.init(device_id=...) picks the GPU."""
import ctypes
import re
from pathlib import Path

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

# Enough work per launch (~1 ms) that a read not waiting for it sees stale data.
N = 1 << 20
STEPS = 256


@qd.func
def _spin(i):
    v = i % 65521
    for _ in range(STEPS):
        v = (v * 31 + 7) % 65521
    return v


def _spin_expected(offset):
    v = (np.arange(N, dtype=np.int64) + offset) % 65521
    for _ in range(STEPS):
        v = (v * 31 + 7) % 65521
    return v


def _spin_field():
    x = qd.field(qd.i32, shape=N)

    @qd.kernel
    def spin_fill(offset: qd.i32):
        for i in x:
            x[i] = _spin(i + offset)

    return x, spin_fill


# ---- results are there when the host looks, without qd.sync() ------------------

@test_utils.test(arch=qd.cuda)
def test_host_index_read_waits_for_the_kernel():
    x, spin_fill = _spin_field()
    expected = _spin_expected(3)
    spin_fill(3)
    assert x[N - 1] == expected[N - 1]
    assert x[0] == expected[0]


@test_utils.test(arch=qd.cuda)
def test_to_numpy_waits_for_the_kernel():
    x, spin_fill = _spin_field()
    spin_fill(5)
    np.testing.assert_array_equal(x.to_numpy(), _spin_expected(5))
    spin_fill(6)  # a second launch over the same memory
    np.testing.assert_array_equal(x.to_numpy(), _spin_expected(6))


@test_utils.test(arch=qd.cuda)
def test_numpy_argument_holds_the_result_when_the_call_returns():
    @qd.kernel
    def spin_into(a: qd.types.ndarray(qd.i32, 1), offset: qd.i32):
        for i in range(a.shape[0]):
            a[i] = _spin(i + offset)

    a = np.full(N, -1, dtype=np.int32)
    spin_into(a, 11)
    np.testing.assert_array_equal(a, _spin_expected(11))


@test_utils.test(arch=qd.cuda)
def test_ndarray_read_waits_for_the_kernel():
    @qd.kernel
    def spin_into(a: qd.types.ndarray(qd.i32, 1), offset: qd.i32):
        for i in range(a.shape[0]):
            a[i] = _spin(i + offset)

    a = qd.ndarray(qd.i32, N)
    spin_into(a, 2)
    assert a[N - 1] == _spin_expected(2)[N - 1]
    spin_into(a, 4)
    np.testing.assert_array_equal(a.to_numpy(), _spin_expected(4))


# ---- many queued launches ---------------------------------------------------------

@test_utils.test(arch=qd.cuda)
def test_thousand_queued_field_launches_all_apply():
    x = qd.field(qd.i32, shape=1024)

    @qd.kernel
    def bump():
        for i in x:
            x[i] += 1

    for _ in range(1000):
        bump()
    np.testing.assert_array_equal(x.to_numpy(), np.full(1024, 1000))


@test_utils.test(arch=qd.cuda)
def test_thousand_queued_ndarray_launches_all_apply():
    @qd.kernel
    def bump(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            a[i] += 1

    a = qd.ndarray(qd.i32, 1024)
    for _ in range(1000):
        bump(a)
    np.testing.assert_array_equal(a.to_numpy(), np.full(1024, 1000))


@test_utils.test(arch=qd.cuda)
def test_host_writes_land_between_the_launches_around_them():
    x = qd.field(qd.i32, shape=1024)
    a = qd.ndarray(qd.i32, 1024)

    @qd.kernel
    def bump(arr: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            x[i] += 1
            arr[i] += 1

    for _ in range(100):
        bump(a)
    x[7] = -1000  # after the 100 queued launches, before the next 10
    a[7] = -1000
    for _ in range(10):
        bump(a)
    expected = np.full(1024, 110)
    expected[7] = -990
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(a.to_numpy(), expected)

    x.from_numpy(np.full(1024, 5, dtype=np.int32))
    a.from_numpy(np.full(1024, 5, dtype=np.int32))
    for _ in range(10):
        bump(a)
    np.testing.assert_array_equal(x.to_numpy(), np.full(1024, 15))
    np.testing.assert_array_equal(a.to_numpy(), np.full(1024, 15))


# ---- errors recorded by queued launches --------------------------------------------

_SYNCS = {
    "qd_sync": lambda x: qd.sync(),
    "index_read": lambda x: x[0],
    "to_numpy": lambda x: x.to_numpy(),
}


@pytest.mark.parametrize("sync", list(_SYNCS), ids=list(_SYNCS))
@test_utils.test(arch=qd.cuda, check_out_of_bound=True)
def test_out_of_bound_in_a_queued_launch_raises_at_next_sync_naming_it(sync):
    x = qd.field(qd.i32, shape=1024)

    @qd.kernel
    def bump():
        for i in x:
            x[i] += 1

    @qd.kernel
    def write_past_end(k: qd.i32):
        for _ in range(1):
            x[k] = 1

    for _ in range(5):
        bump()
    write_past_end(1024)
    for _ in range(5):
        bump()  # queued behind the failing launch
    with pytest.raises(qd.QuadrantsAssertionError, match="write_past_end"):
        _SYNCS[sync](x)
    qd.sync()  # reported once

    x.fill(0)
    bump()
    qd.sync()
    np.testing.assert_array_equal(x.to_numpy(), np.ones(1024))


@test_utils.test(arch=qd.cuda, debug=True)
def test_out_of_bound_under_debug_raises_naming_the_kernel():
    @qd.kernel
    def read_one_past(a: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            out[i] = a[i + 1]  # the last thread reads past the end

    a = qd.ndarray(qd.i32, 64)
    out = qd.ndarray(qd.i32, 64)
    with pytest.raises(qd.QuadrantsAssertionError, match="read_one_past"):
        read_one_past(a, out)
        qd.sync()
    a.from_numpy(np.arange(64, dtype=np.int32))

    @qd.kernel
    def copy(a: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            out[i] = a[i]

    copy(a, out)
    qd.sync()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(64))


@test_utils.test(arch=qd.cuda, require=qd.extension.adstack, default_fp=qd.f64,
                 debug=True, ad_stack_size=32)
def test_adstack_overflow_in_a_queued_launch_raises_naming_the_kernel():
    xv = np.linspace(-1.0, 1.0, 256)
    x = qd.field(qd.f64, shape=len(xv), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(xv)

    @qd.kernel
    def deep_recurrence(n: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(n):
                v = v * 0.97 + 0.1 * qd.sin(v + 0.3)
            loss[None] += v

    def gradient(n):
        x.grad.fill(0)
        loss[None] = 0
        deep_recurrence(n)
        loss.grad[None] = 1
        deep_recurrence.grad(n)

    # 102 slots needed, 32 available; debug mode waits for each launch and
    # reports the overflow at the call.
    with pytest.raises(qd.QuadrantsAssertionError, match="Adstack overflow.*deep_recurrence"):
        gradient(100)
    deep_recurrence(3)  # the program stays usable
    qd.sync()

    gradient(20)  # 22 slots: within capacity
    qd.sync()
    v, dv = xv.copy(), np.ones_like(xv)
    for _ in range(20):
        dv *= 0.97 + 0.1 * np.cos(v + 0.3)
        v = v * 0.97 + 0.1 * np.sin(v + 0.3)
    np.testing.assert_allclose(x.grad.to_numpy(), dv, rtol=1e-10)
    assert loss[None] == pytest.approx(v.sum(), rel=1e-10)


# ---- allocations the device cannot satisfy -----------------------------------------

TIB = 1 << 40


def _byte_counts(message):
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", message)]


@test_utils.test(arch=qd.cuda)
def test_one_tib_field_raises_with_its_size_and_the_session_stays_usable():
    before = qd.field(qd.i32, shape=16)
    before.from_numpy(np.arange(16, dtype=np.int32))
    huge = qd.field(qd.f32, shape=(TIB // 4,), name="huge")
    with pytest.raises(qd.QuadrantsRuntimeError) as info:
        huge[0] = 1.0  # fields are allocated at first use
    message = str(info.value)
    # The earlier field may share the allocation: its size is in the count.
    assert any(TIB <= n < TIB + (1 << 20) for n in _byte_counts(message)), message
    assert "field" in message.lower() or "huge" in message, message
    with pytest.raises(qd.QuadrantsRuntimeError):
        huge.to_numpy()  # still unallocated: raises again, no crash

    np.testing.assert_array_equal(before.to_numpy(), np.arange(16))
    after = qd.field(qd.i32, shape=16)

    @qd.kernel
    def combine():
        for i in after:
            after[i] = before[i] * 2 + 1

    combine()
    np.testing.assert_array_equal(after.to_numpy(), np.arange(16) * 2 + 1)


@test_utils.test(arch=qd.cuda)
def test_one_tib_field_alone_reports_exactly_its_bytes():
    huge = qd.field(qd.f32, shape=(TIB // 4,))

    @qd.kernel
    def touch():
        for _ in range(1):
            huge[0] = 1.0

    with pytest.raises(qd.QuadrantsRuntimeError) as info:
        touch()
        qd.sync()
    assert TIB in _byte_counts(str(info.value)), str(info.value)


@test_utils.test(arch=qd.cuda)
def test_one_tib_ndarray_raises_with_its_size_and_the_session_stays_usable():
    with pytest.raises(qd.QuadrantsRuntimeError) as info:
        # Each extent stays below 2**31, as an ndarray's shape must.
        qd.ndarray(qd.f32, (TIB // 4 // 2**20, 2**20))
    message = str(info.value)
    assert TIB in _byte_counts(message), message
    assert "ndarray" in message.lower(), message

    a = qd.ndarray(qd.f32, 8)
    a.fill(2.5)
    np.testing.assert_array_equal(a.to_numpy(), np.full(8, 2.5, dtype=np.float32))


# ---- choosing the GPU ----------------------------------------------------------------

def _gpu_count():
    """The driver's own count of CUDA devices."""
    cuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
    return count.value


def _runs_a_kernel():
    x = qd.field(qd.i32, shape=32)

    @qd.kernel
    def fill():
        for i in x:
            x[i] = i * i

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(32) ** 2)


@test_utils.test(arch=qd.cuda)
def test_device_id_past_the_gpu_count_raises_saying_how_many():
    with pytest.raises(qd.QuadrantsRuntimeError, match="GPU") as info:
        qd.init(arch=qd.cuda, device_id=10 ** 6)
    assert str(_gpu_count()) in str(info.value), str(info.value)
    qd.init(arch=qd.cuda, device_id=0)
    _runs_a_kernel()


@test_utils.test(arch=qd.cuda)
def test_last_device_id_runs():
    last = _gpu_count() - 1
    if last == 0:
        pytest.skip("one GPU here: device 0 is covered by the test above")
    qd.init(arch=qd.cuda, device_id=last)
    _runs_a_kernel()


@test_utils.test(arch=qd.cuda)
def test_device_id_from_the_environment(monkeypatch):
    monkeypatch.setenv("QD_DEVICE_ID", str(10 ** 6))
    with pytest.raises(qd.QuadrantsRuntimeError, match="GPU"):
        qd.init(arch=qd.cuda)
    qd.init(arch=qd.cuda, device_id=0)  # the argument wins over the variable
    _runs_a_kernel()
    monkeypatch.setenv("QD_DEVICE_ID", "0")
    qd.init(arch=qd.cuda)
    _runs_a_kernel()


# ---- no managed memory left in the sources ----------------------------------------

def test_no_managed_memory_in_the_sources():
    # Under Bazel this file is a symlink into the checkout; resolve() finds it.
    sources = Path(__file__).resolve().parents[2] / "quadrants"
    if not (sources / "runtime" / "cuda").is_dir():
        pytest.skip(f"the C++ sources are not reachable from {Path(__file__).resolve()}")
    found = []
    for path in sorted(sources.rglob("*")):
        if path.is_file():
            text = path.read_bytes()
            found += [f"{path.relative_to(sources)}: {word.decode()}"
                      for word in (b"cuMemAllocManaged", b"MallocManaged") if word in text]
    assert not found, "managed memory is still used:\n" + "\n".join(found)
