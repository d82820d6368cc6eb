"""Vulkan's queued launches and device-local memory.

Kernels that can record no error, print nothing and have no adstacks are
recorded into batches of command buffers and submitted without waiting;
everything that needs the host (host reads and writes, numpy arguments,
qd.sync(), launches that must finish) drains the queue first. Each test
runs twice: on memory the host maps, and on device-local memory the host
cannot map (QD_VULKAN_FORCE_STAGING=1, as on discrete GPUs), where every
host access is a transfer of its own."""
import os

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from quadrants.lang.impl import get_runtime

# More launches than two batches hold, so that batches wrap around.
LAUNCHES = 3 * 64 + 5


@pytest.fixture(params=[{}, {"QD_VULKAN_FORCE_STAGING": "1"}], ids=["mapped", "device_local"])
def vulkan(request, monkeypatch):
    reason = runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        pytest.skip(f"arch vulkan unavailable: {reason}")
    if "vulkan" not in os.environ.get("QD_WANTED_ARCHS", "vulkan"):
        pytest.skip("vulkan not in QD_WANTED_ARCHS")
    monkeypatch.delenv("QD_VULKAN_FORCE_STAGING", raising=False)
    for name, value in request.param.items():
        monkeypatch.setenv(name, value)
    qd.init(arch=qd.vulkan, offline_cache=False)
    yield request.param
    qd.reset()


def _program():
    return get_runtime().prog


def test_dependent_launches_run_in_order_across_batches(vulkan):
    n = 1000
    x = qd.field(qd.i32, n)

    @qd.kernel
    def step(k: qd.i32):
        for i in range(n):
            x[i] = (x[i] * 3 + i + k) % 1000003

    expect = np.zeros(n, np.int64)
    for k in range(LAUNCHES):
        step(k)
        assert _program().last_launch_batched
        expect = (expect * 3 + np.arange(n) + k) % 1000003
    np.testing.assert_array_equal(x.to_numpy(), expect)


def test_each_launch_keeps_its_own_arguments_and_range(vulkan):
    # A range_for's bound comes from the launch's own context, and its
    # bounds shader rewrites the same record at every launch.
    n = LAUNCHES
    x = qd.field(qd.i32, n)
    a = qd.ndarray(qd.i32, n)
    b = qd.ndarray(qd.i32, n)

    @qd.kernel
    def bump(m: qd.i32, arr: qd.types.ndarray(qd.i32, 1), v: qd.i32):
        for i in range(m):
            x[i] += 1
            arr[i] += v

    for m in range(1, n + 1):
        bump(m, a if m % 2 else b, m)
    np.testing.assert_array_equal(x.to_numpy(), n - np.arange(n))
    odd = np.array([sum(m for m in range(i + 1, n + 1) if m % 2) for i in range(n)])
    even = np.array([sum(m for m in range(i + 1, n + 1) if not m % 2) for i in range(n)])
    np.testing.assert_array_equal(a.to_numpy(), odd)
    np.testing.assert_array_equal(b.to_numpy(), even)


def test_host_access_between_launches_sees_every_earlier_launch(vulkan):
    x = qd.field(qd.f32, 256)
    arr = qd.ndarray(qd.f32, 256)

    @qd.kernel
    def add(v: qd.f32, a: qd.types.ndarray(qd.f32, 1)):
        for i in x:
            x[i] += v
            a[i] = x[i] * 2.0

    total, bonus = 0.0, 0.0
    for k in range(100):
        add(1.0, arr)
        total += 1.0
        if k % 7 == 0:
            assert x[13] == total + bonus
            assert arr.to_numpy()[200] == 2 * total
            x[13] = total + bonus + 100.0  # a host write between queued launches
            bonus += 100.0
    expect = np.full(256, total, np.float32)
    expect[13] += bonus
    np.testing.assert_array_equal(x.to_numpy(), expect)


def test_numpy_arguments_and_launches_that_must_finish_keep_launch_order(vulkan, capfd):
    x = qd.field(qd.i32, 64)

    @qd.kernel
    def inc():
        for i in x:
            x[i] += 1

    @qd.kernel
    def copy_out(out: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            out[i] = x[i]

    @qd.kernel
    def show():
        print("x0 =", x[0])

    for _ in range(10):
        inc()
    out = np.zeros(64, np.int32)
    copy_out(out)  # a numpy argument: staged in, run, copied back
    np.testing.assert_array_equal(out, np.full(64, 10))
    for _ in range(5):
        inc()
    show()  # prints: drains the queue and waits for its own fence
    assert not _program().last_launch_batched
    qd.sync()
    assert "x0 = 15" in capfd.readouterr().out


def test_freed_arrays_wait_for_queued_launches_and_new_ones_start_zero(vulkan):
    @qd.kernel
    def fill(a: qd.types.ndarray(qd.f32, 1), v: qd.f32):
        for i in range(a.shape[0]):
            a[i] = v

    for round_ in range(4):
        arrays = [qd.ndarray(qd.f32, 1 << 16) for _ in range(8)]
        for a in arrays:
            assert not a.to_numpy().any()  # zero, whatever the memory held before
            for v in range(20):
                fill(a, float(v + round_))
        last = arrays[-1]
        del arrays  # freed while their launches may be queued
        np.testing.assert_array_equal(last.to_numpy(), np.full(1 << 16, 19.0 + round_))


def test_host_addressability_follows_the_memory(vulkan):
    a = qd.ndarray(qd.i32, 4)
    a.from_numpy(np.arange(4, dtype=np.int32))
    addressable = _program().array_memory_host_addressable
    if "QD_VULKAN_FORCE_STAGING" in vulkan:
        assert not addressable
    elif "llvmpipe" in _program().device_description:
        assert addressable  # lavapipe's memory is host memory
    np.testing.assert_array_equal(a.to_numpy(), np.arange(4))
