"""The adstack max-reducer: trip counts such as range(arr[i]) under a parallel
loop over i give a MaxOverRange over the whole axis, which the launch sizer
hands to a parallel max-reduction instead of walking it serially (capped at
1 << 24 iterations). Checks exact capacities and gradients past the cap, the
dispatch counter and its caches, the raise for shapes outside the grammar,
and the offline cache. On vulkan the reducer is a compute shader, and the
checks that it ran also check that it ran on the device.

Every gradient kernel runs v = x[i % 4], then trips[i] steps v = sin(v), then
loss += v, so d loss / d x[c] has a closed form: the sum over the elements i
with i % 4 == c of the product of cos() along that element's steps.
debug=True makes a push past a stack's capacity raise at qd.sync(), and
default_ad_stack_size=2 makes any stack left unsized overflow, so a passing
gradient also proves the capacities cover every push.
"""
import inspect
import os

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

OPTIONS = dict(ad_stack_experimental_enabled=True, default_ad_stack_size=2,
               default_fp=qd.f64, offline_cache=False, debug=True)
GUARD = 1 << 24
# Past the serial-walk guard by a little: the reducer must reach the tail.
BIG = GUARD + 1024
# The backends with a max-reducer; on vulkan it is the reducer shader.
ARCHS = [qd.cpu, qd.cuda, qd.vulkan]


def stats():
    return runtime.adstack_stats()


def capacities():
    return sorted(c for task in stats()["capacities"] for c in task)


def dispatches():
    return stats()["reducer_dispatches"]


def arch():
    return qd.lang.impl.current_cfg().arch


# Backends whose reducer runs on the accelerator rather than host threads.
DEVICE_REDUCERS = (qd.cuda, qd.vulkan)


def device_dispatches():
    return stats()["device_reducer_dispatches"]


class Counted:
    """Snapshots the dispatch counters; `ran()` checks that the reducer ran
    since, on the device on backends with a device reducer."""

    def __init__(self):
        self.total, self.device = dispatches(), device_dispatches()

    def ran(self):
        assert dispatches() > self.total, stats()
        on_device = device_dispatches() - self.device
        if arch() in DEVICE_REDUCERS:
            assert on_device == dispatches() - self.total, stats()
        else:
            assert on_device == 0, stats()
        return True


def source_line(code, marker):
    """'file:line' of the one line of `code` containing `marker`."""
    lines, start = inspect.getsourcelines(code)
    hits = [start + k for k, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return f"{inspect.getsourcefile(code)}:{hits[0]}"


X0 = np.array([0.1, 0.5, -0.3, 0.9])


def reference_grad(trips, groups):
    """d loss / d x[c] for elements with `trips` steps of sin() on x[groups]."""
    trips = np.asarray(trips, np.int64)
    keys, counts = np.unique(trips * 4 + groups, return_counts=True)
    grad = np.zeros(4)
    for key, count in zip(keys, counts):
        t, c = divmod(int(key), 4)
        v, d = X0[c], 1.0
        for _ in range(max(t, 0)):
            d *= np.cos(v)
            v = np.sin(v)
        grad[c] += count * d
    return grad


class Harness:
    def __init__(self):
        self.x = qd.field(qd.f64, shape=4, needs_grad=True)
        self.loss = qd.field(qd.f64, shape=(), needs_grad=True)
        self.x.from_numpy(X0)

    def grad(self, kernel, *args):
        self.loss[None] = 0
        self.x.grad.fill(0)
        with qd.ad.Tape(loss=self.loss):
            kernel(*args)
        qd.sync()
        return self.x.grad.to_numpy()


def big_gating_array(n, peaks):
    a = np.zeros(n, np.int32)
    for index, value in peaks.items():
        a[index] = value
    arr = qd.ndarray(qd.i32, (n,))
    arr.from_numpy(a)
    return a, arr


# ---- 1. exact capacities over more elements than the guard --------------------------------------

BODIES = ["arr[i]", "arr[i] + k", "f[i] + arr[i]", "max(f[i], arr[i])"]


@pytest.mark.parametrize("body", BODIES)
@test_utils.test(arch=ARCHS, **OPTIONS)
def test_bound_over_an_axis_past_the_guard_is_sized_exactly(body):
    h = Harness()
    x, loss = h.x, h.loss
    f = qd.field(qd.i32, shape=BIG)
    k = 3

    @qd.kernel
    def plain(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i]):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def offset(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i] + k):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def summed(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(f[i] + arr[i]):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def larger(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(qd.max(f[i], arr[i])):
                v = qd.sin(v)
            loss[None] += v

    # The peak sits past the guard: a serial walk could not reach it.
    a, arr = big_gating_array(BIG, {5: 4, GUARD + 77: 23, BIG - 1: 9})
    fv = np.zeros(BIG, np.int32)
    fv[[GUARD + 77, BIG - 2]] = [6, 31]
    f.from_numpy(fv)
    kernel, trips = {
        "arr[i]": (plain, a),
        "arr[i] + k": (offset, a.astype(np.int64) + k),
        "f[i] + arr[i]": (summed, fv.astype(np.int64) + a),
        "max(f[i], arr[i])": (larger, np.maximum(fv, a)),
    }[body]
    before = Counted()
    grad = h.grad(kernel, arr)
    assert capacities() == [int(trips.max()) + 2], stats()
    assert before.ran()
    groups = np.arange(BIG) % 4
    assert grad == pytest.approx(reference_grad(trips, groups), rel=1e-9, abs=1e-9)


# An ample budget keeps the j loop (8194 slots per thread) unsegmented even
# where the device runs 2^18 threads at once, so its stack shows the sized
# capacity rather than a checkpointed segment.
@test_utils.test(arch=ARCHS, **dict(OPTIONS, ad_stack_max_bytes=1 << 40))
def test_two_axis_bound_past_the_guard_is_sized_exactly():
    h = Harness()
    x, loss = h.x, h.loss

    @qd.kernel
    def grid(arr2d: qd.types.ndarray(qd.i32, 2)):
        for i in range(arr2d.shape[0]):
            v = x[i % 4]
            for j in range(arr2d.shape[1]):
                for _ in range(arr2d[i, j]):
                    v = qd.sin(v)
            loss[None] += v

    rows, cols = (1 << 11) + 64, 1 << 13  # 2^24 + 2^19 cells, past the guard
    values = np.zeros((rows, cols), np.int32)
    values[3, 5], values[rows - 1, cols - 2], values[2100, 0] = 4, 17, 8
    arr2d = qd.ndarray(qd.i32, (rows, cols))
    arr2d.from_numpy(values)
    before = Counted()
    grad = h.grad(grid, arr2d)
    # The j loop's stack holds cols + 2; the innermost one the largest cell + 2.
    assert capacities() == sorted([cols + 2, 17 + 2]), stats()
    assert before.ran()
    trips = values.sum(axis=1)
    assert grad == pytest.approx(reference_grad(trips, np.arange(rows) % 4), rel=1e-9, abs=1e-9)


# ---- 2. the dispatch counter and the caches ----------------------------------------

@test_utils.test(**OPTIONS)
def test_dispatches_advance_only_when_what_they_read_changes():
    h = Harness()
    x, loss = h.x, h.loss
    n = 4096

    @qd.kernel
    def two_stacks(arr: qd.types.ndarray(qd.i32, 1), m: qd.i32):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i]):
                v = qd.sin(v)
            u = x[(i + 1) % 4]
            for _ in range(m):
                u = qd.sin(u)
            loss[None] += v + u

    @qd.kernel
    def set_all(arr: qd.types.ndarray(qd.i32, 1), k: qd.i32):
        for i in range(arr.shape[0]):
            arr[i] = k

    a, arr = big_gating_array(n, {10: 7, n - 1: 3})
    other = qd.ndarray(qd.i32, (n,))

    def launch(m, expect_caps):
        h.grad(two_stacks, arr, m)
        assert capacities() == sorted(expect_caps), stats()
        return dispatches()

    before = Counted()
    first = launch(5, [7 + 2, 5 + 2])
    assert before.ran()
    assert launch(5, [7 + 2, 5 + 2]) == first          # identical launch
    hits = stats()["cache_hits"]
    assert launch(5, [7 + 2, 5 + 2]) == first
    assert stats()["cache_hits"] > hits                 # the task layer hit
    # Only the scalar bound changes: the arr stack's capacity and the
    # reducer result stay cached.
    tree_hits = stats()["tree_cache_hits"]
    assert launch(9, [7 + 2, 9 + 2]) == first
    assert stats()["tree_cache_hits"] > tree_hits, stats()
    other.fill(100)                                     # unrelated write
    assert launch(9, [7 + 2, 9 + 2]) == first
    arr[20] = 12                                        # host write
    before = Counted()
    after_host = launch(9, [12 + 2, 9 + 2])
    assert after_host > first and before.ran()
    assert launch(9, [12 + 2, 9 + 2]) == after_host
    set_all(arr, 2)                                     # a kernel writes it
    before = Counted()
    after_kernel = launch(9, [2 + 2, 9 + 2])
    assert after_kernel > after_host and before.ran()
    assert launch(9, [2 + 2, 9 + 2]) == after_kernel


@test_utils.test(**OPTIONS)
def test_field_gated_dispatches_follow_field_writes():
    h = Harness()
    x, loss = h.x, h.loss
    n = 1000
    f = qd.field(qd.i32, shape=n)
    unrelated = qd.field(qd.i32, shape=n)

    @qd.kernel
    def gated():
        for i in f:
            v = x[i % 4]
            for _ in range(f[i] + 1):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def bump(k: qd.i32):
        f[k] += 10

    f[7] = 4

    def launch(expect):
        grad = h.grad(gated)
        assert capacities() == [expect + 1 + 2], stats()
        trips = f.to_numpy().astype(np.int64) + 1
        assert grad == pytest.approx(reference_grad(trips, np.arange(n) % 4), rel=1e-9)
        return dispatches()

    before = Counted()
    first = launch(4)
    assert before.ran()
    assert launch(4) == first
    unrelated[3] = 50                       # another field
    assert launch(4) == first
    f[500] = 9                              # host write
    second = launch(9)
    assert second > first
    bump(7)                                 # a kernel writes it: f[7] = 14
    before = Counted()
    third = launch(14)
    assert third > second and before.ran()
    assert launch(14) == third


@pytest.mark.parametrize("env", [{"QD_VULKAN_SIZER": "host"}, {"QD_VULKAN_FORCE_STAGING": "1"}],
                         ids=["host_mode", "staged"])
def test_vulkan_reducer_runs_on_the_host_when_asked_and_on_staged_buffers(monkeypatch, env):
    # With QD_VULKAN_SIZER=host the host reducer runs, on host copies it
    # refreshes first. With device-local memory the host cannot map (as on
    # discrete GPUs) the shader reads the device buffers, and must see the
    # values the host wrote through its copies.
    reason = runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        pytest.skip(f"arch vulkan unavailable: {reason}")
    if "vulkan" not in os.environ.get("QD_WANTED_ARCHS", "vulkan"):
        pytest.skip("vulkan not in QD_WANTED_ARCHS")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    qd.init(arch=qd.vulkan, **OPTIONS)
    try:
        h = Harness()
        x, loss = h.x, h.loss
        n = 5000

        @qd.kernel
        def gated(arr: qd.types.ndarray(qd.i32, 1)):
            for i in range(arr.shape[0]):
                v = x[i % 4]
                for _ in range(arr[i] + 1):
                    v = qd.sin(v)
                loss[None] += v

        a, arr = big_gating_array(n, {17: 6, n - 1: 2})
        grad = h.grad(gated, arr)
        assert capacities() == [6 + 1 + 2], stats()
        on_device = device_dispatches()
        assert dispatches() >= 1, stats()
        assert on_device == (0 if "QD_VULKAN_SIZER" in env else dispatches()), stats()
        trips = a.astype(np.int64) + 1
        assert grad == pytest.approx(reference_grad(trips, np.arange(n) % 4), rel=1e-9)
    finally:
        qd.reset()


# ---- 3. out-of-grammar shapes past the guard raise ---------------------------------

@pytest.mark.parametrize("shape", ["halved_index", "i64_leaf"])
@test_utils.test(arch=ARCHS, **OPTIONS)
def test_out_of_grammar_bound_past_the_guard_raises(shape):
    h = Harness()
    x, loss = h.x, h.loss

    @qd.kernel
    def halved_index(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i // 2]):  # <- halved
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def wide_leaf(arr: qd.types.ndarray(qd.i64, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i]):  # <- wide
                v = qd.sin(v)
            loss[None] += v

    here = inspect.currentframe().f_code
    if shape == "halved_index":
        kernel, where = halved_index, source_line(here, "# <- " + "halved")
        values = np.zeros(GUARD + 8, np.int32)
    else:
        kernel, where = wide_leaf, source_line(here, "# <- " + "wide")
        values = np.zeros(GUARD + 8, np.int64)
    values[GUARD + 3] = 5
    arr = qd.ndarray(qd.i32 if shape == "halved_index" else qd.i64, values.shape)
    arr.from_numpy(values)
    before, before_device = dispatches(), device_dispatches()
    with pytest.raises(qd.QuadrantsError) as info:
        h.grad(kernel, arr)
    message = str(info.value)
    assert "16777216" in message, message
    assert kernel.__name__ in message, message
    assert where in message, message
    assert dispatches() == before, stats()
    assert device_dispatches() == before_device, stats()


# ---- 4. a compile-time-constant trip count captures nothing ------------------------

@test_utils.test(**OPTIONS)
def test_constant_trip_count_dispatches_nothing():
    h = Harness()
    x, loss = h.x, h.loss

    @qd.kernel
    def constant(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(6):
                v = qd.sin(v)
            loss[None] += v

    n = 64
    arr = qd.ndarray(qd.i32, (n,))
    grad = h.grad(constant, arr)
    assert dispatches() == 0, stats()
    assert device_dispatches() == 0, stats()
    assert stats()["reducer_cache_hits"] == 0, stats()
    assert grad == pytest.approx(reference_grad(np.full(n, 6), np.arange(n) % 4), rel=1e-9)


# ---- 5. the offline cache ------------------------------------------------------------

@test_utils.test(arch=ARCHS, **dict(OPTIONS, offline_cache=True))
def test_a_cache_hit_sizes_identically(tmp_path):
    a = np.zeros(GUARD + 64, np.int32)
    a[[3, GUARD + 50]] = [2, 13]
    results = []
    here = arch()
    for _ in range(2):
        qd.init(arch=here, **dict(OPTIONS, offline_cache=True,
                                    offline_cache_file_path=str(tmp_path)))
        h = Harness()
        x, loss = h.x, h.loss

        @qd.kernel
        def cached(arr: qd.types.ndarray(qd.i32, 1)):
            for i in range(arr.shape[0]):
                v = x[i % 4]
                for _ in range(arr[i] + 1):
                    v = qd.sin(v)
                loss[None] += v

        arr = qd.ndarray(qd.i32, a.shape)
        arr.from_numpy(a)
        grad = h.grad(cached, arr)
        results.append((capacities(), dispatches(), runtime.offline_cache_stats()["hits"], grad,
                        device_dispatches()))
    (caps0, disp0, hits0, grad0, dev0), (caps1, disp1, hits1, grad1, dev1) = results
    assert hits0 == 0 and hits1 >= 1, results
    assert caps0 == caps1 == [13 + 1 + 2]
    assert disp0 == disp1 >= 1
    if here in DEVICE_REDUCERS:
        assert dev0 == dev1 == disp0, results
    assert grad1 == pytest.approx(grad0, rel=1e-12)
