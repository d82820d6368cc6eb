"""The on-device adstack sizer on Vulkan: with QD_VULKAN_SIZER=shader the
sizer shader evaluates every launch-time size expression (field reads,
ndarray shapes and reads, scalar arguments, MaxOverRange walks) and the
capacities it writes are exact; with auto (the default) only expressions
that read field or ndarray contents go to the device; the 1 << 24 guard
raises naming the kernel; and the sizer cache keeps unchanged launches
from dispatching it again.

Each test makes its own runtime (the mode is read when the Vulkan backend
is created), so they do not use the test_utils.test decorator.
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime

OPTIONS = dict(ad_stack_experimental_enabled=True, default_ad_stack_size=2,
               debug=True, offline_cache=False)


@pytest.fixture
def sizer(monkeypatch):
    """Starts a runtime on `arch` with QD_VULKAN_SIZER=`mode`."""
    def start(arch, mode="shader"):
        if arch == qd.vulkan:
            reason = runtime.arch_unavailable_reason(qd.vulkan)
            if reason is not None:
                pytest.skip(f"arch vulkan unavailable: {reason}")
        monkeypatch.setenv("QD_VULKAN_SIZER", mode)
        qd.init(arch=arch, **OPTIONS)
    yield start
    qd.reset()


def stats():
    return runtime.adstack_stats()


def capacities():
    return [c for task in stats()["capacities"] for c in task]


def recurrence_fields(count):
    x = qd.field(qd.f32, shape=count, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(-0.7, 0.9, count).astype(np.float32))
    return x, loss


def run(kernel, loss, *args):
    loss[None] = 0
    with qd.ad.Tape(loss=loss):
        kernel(*args)
    qd.sync()


# ---- one builder per kind of bound; each returns (launch, x, loss) --------

def field_bounded(trips):
    x, loss = recurrence_fields(64)
    n = qd.field(qd.i32, shape=())
    n[None] = trips

    @qd.kernel
    def field_loop():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    return (lambda: run(field_loop, loss)), x, n


def shape_bounded(trips):
    x, loss = recurrence_fields(64)
    a = qd.ndarray(qd.i32, (trips,))

    @qd.kernel
    def shape_loop(arr: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for _ in range(arr.shape[0]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    return (lambda: run(shape_loop, loss, a)), x, a


def read_bounded(trips_per_element):
    count = len(trips_per_element)
    x, loss = recurrence_fields(count)
    a = qd.ndarray(qd.i32, (count,))
    a.from_numpy(np.asarray(trips_per_element, np.int32))

    @qd.kernel
    def read_loop(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            v = x[i]
            for _ in range(arr[i]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    return (lambda: run(read_loop, loss, a)), x, a


def arg_bounded(trips):
    x, loss = recurrence_fields(64)

    @qd.kernel
    def arg_loop(m: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(m):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    return (lambda: run(arg_loop, loss, trips)), x, None


def on(sizer, arch, build, bound, mode="shader"):
    """x.grad, capacities and the stats of one reverse launch on `arch`."""
    sizer(arch, mode)
    launch, x, _ = build(bound)
    launch()
    s = stats()
    result = x.grad.to_numpy(), capacities(), s["sizer_dispatches"], s["tree_evaluations"]
    qd.reset()
    return result


def check_against_cpu(sizer, build, bound, want_capacity):
    cpu = on(sizer, qd.cpu, build, bound)
    vk = on(sizer, qd.vulkan, build, bound)
    # The shader sized the task (one dispatch, no host evaluation) exactly:
    # K trips need K + 2 slots, and debug=True would raise on an overflow.
    assert vk[1] == [want_capacity], vk[1]
    assert vk[2] == 1 and vk[3] == 0, vk
    assert cpu[1] == [want_capacity]
    # Same f32 operations per element; sin differs by an ulp or two between
    # libm and the shader.
    assert vk[0] == pytest.approx(cpu[0], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("trips", [1, 20, 50, 1000])
def test_field_bounded_capacity_from_the_shader(sizer, trips):
    check_against_cpu(sizer, field_bounded, trips, trips + 2)


@pytest.mark.parametrize("trips", [1, 20, 50, 1000])
def test_ndarray_shape_bounded_capacity_from_the_shader(sizer, trips):
    check_against_cpu(sizer, shape_bounded, trips, trips + 2)


@pytest.mark.parametrize("trips", [1, 20, 50, 1000])
def test_argument_bounded_capacity_from_the_shader(sizer, trips):
    check_against_cpu(sizer, arg_bounded, trips, trips + 2)


@pytest.mark.parametrize("peak", [1, 20, 50, 1000])
def test_ndarray_read_bounded_capacity_walks_the_range(sizer, peak):
    # MaxOverRange over i of arr[i]: the peak sits mid-array, with negative
    # and zero trips around it (no iteration: nothing to the maximum).
    trips = [3, 0, -4, peak, 2, 7 if peak > 7 else 0, 1, 5]
    check_against_cpu(sizer, read_bounded, trips, max(max(trips), 0) + 2)


def test_all_empty_ranges_keep_the_setup_slots(sizer):
    sizer(qd.vulkan)
    launch, _, _ = read_bounded([0, -3, 0])
    launch()
    assert capacities() == [2]
    assert stats()["sizer_dispatches"] == 1


def test_auto_sends_only_data_reads_to_the_device(sizer):
    # A field read goes to the shader...
    grads, caps, dispatches, evaluations = on(sizer, qd.vulkan, field_bounded, 30, "auto")
    assert caps == [32] and dispatches == 1 and evaluations == 0
    # ...but a MaxOverRange the max-reducer captures goes to the reducer on
    # the host, which takes it before any walk.
    grads, caps, dispatches, evaluations = on(sizer, qd.vulkan, read_bounded, [4, 9, 2], "auto")
    assert caps == [11] and dispatches == 0 and evaluations == 1
    # ...arguments and shapes are known on the host: no dispatch.
    grads, caps, dispatches, evaluations = on(sizer, qd.vulkan, arg_bounded, 30, "auto")
    assert caps == [32] and dispatches == 0 and evaluations == 1
    grads, caps, dispatches, evaluations = on(sizer, qd.vulkan, shape_bounded, 30, "auto")
    assert caps == [32] and dispatches == 0 and evaluations == 1
    # host never dispatches.
    grads, caps, dispatches, evaluations = on(sizer, qd.vulkan, field_bounded, 30, "host")
    assert caps == [32] and dispatches == 0 and evaluations == 1


def test_unchanged_inputs_do_not_dispatch_again(sizer):
    sizer(qd.vulkan)
    launch, _, n = field_bounded(12)
    launch()
    assert capacities() == [14] and stats()["sizer_dispatches"] == 1
    hits = stats()["cache_hits"]
    launch()
    assert capacities() == [14] and stats()["sizer_dispatches"] == 1
    assert stats()["cache_hits"] == hits + 1
    # A host write to the gating field invalidates the cached capacities.
    n[None] = 40
    launch()
    assert capacities() == [42] and stats()["sizer_dispatches"] == 2


def test_ndarray_write_dispatches_again(sizer):
    sizer(qd.vulkan)
    launch, _, a = read_bounded([3, 6, 1])
    launch()
    launch()
    assert capacities() == [8] and stats()["sizer_dispatches"] == 1
    a.from_numpy(np.array([3, 6, 25], np.int32))
    launch()
    assert capacities() == [27] and stats()["sizer_dispatches"] == 2


@pytest.mark.parametrize("mode", ["shader", "auto"])
def test_walk_past_the_guard_raises_on_the_device(sizer, mode):
    sizer(qd.vulkan, mode)
    x, loss = recurrence_fields(2)

    @qd.kernel
    def guarded_walk(a: qd.types.ndarray(qd.i8, 1)):
        for i in x:
            v = x[i]
            for j in range(a.shape[0]):
                # j // 2 is outside the max-reducer's grammar, so auto mode
                # walks it on the device too.
                for _ in range(a[j // 2]):
                    v = qd.sin(v) * 0.5 + 0.3
            loss[None] += v

    too_long = np.zeros((1 << 24) + 10, np.int8)
    with pytest.raises(qd.QuadrantsError) as info:
        run(guarded_walk, loss, too_long)
    message = str(info.value)
    assert "guarded_walk" in message and "16777216" in message, message
    assert "on the device" in message, message
    assert stats()["sizer_dispatches"] == 1
    assert stats()["tree_evaluations"] == 0
    # The runtime stays usable and sizes the short walk exactly.
    short = np.zeros(40, np.int8)
    short[[3, 17]] = [5, 9]
    run(guarded_walk, loss, short)
    assert sorted(capacities()) == [9 + 2, 40 + 2], capacities()


def test_walk_longer_than_one_device_run_still_sizes_exactly(sizer):
    # 20000 walked elements take more interpreter steps than lavapipe runs
    # in one invocation (it ends loops after 65535 back edges): the shader
    # reports that it was cut short and the host sizes the task. On a
    # device without that bound the shader finishes it. Exact either way.
    sizer(qd.vulkan)
    trips = np.zeros(20000, np.int32)
    trips[[7, 12345, 19999]] = [4, 13, 6]
    launch, _, _ = read_bounded(trips)
    launch()
    assert capacities() == [13 + 2]
    s = stats()
    assert s["sizer_dispatches"] == 1 and s["tree_evaluations"] in (0, 1), s


@pytest.mark.parametrize("divisor", [3, -4, 0])
def test_floor_division_and_modulo_match_the_host(sizer, divisor):
    # Python semantics on negative operands, and 0 for a zero divisor, as
    # the host evaluator computes them.
    values = np.array([-7, 11, 20, -1, 9, 0, 14], np.int32)

    def sized(mode):
        sizer(qd.vulkan, mode)
        x, loss = recurrence_fields(len(values))
        a = qd.ndarray(qd.i32, (len(values),))
        a.from_numpy(values)
        d = qd.field(qd.i32, shape=())
        d[None] = divisor

        @qd.kernel
        def divided(arr: qd.types.ndarray(qd.i32, 1)):
            for i in range(arr.shape[0]):
                v = x[i]
                for _ in range(arr[i] // d[None] + arr[i] % d[None] + 3):
                    v = qd.sin(v) * 0.9 + 0.1
                loss[None] += v
        run(divided, loss, a)
        result = capacities(), stats()["sizer_dispatches"], stats()["tree_evaluations"]
        qd.reset()
        return result

    def floor_div(a, b):
        return 0 if b == 0 else a // b

    def mod(a, b):
        return 0 if b == 0 else a % b

    trips = [floor_div(int(v), divisor) + mod(int(v), divisor) + 3 for v in values]
    want = [max(max(trips), 0) + 2]
    host, shader = sized("host"), sized("shader")
    assert host == (want, 0, 1), host
    assert shader == (want, 1, 0), shader


@pytest.mark.parametrize("dtype, values", [
    # Narrow elements sit at every byte offset of their 32-bit word; negative
    # ones must sign-extend (no trips), unsigned ones must not.
    (qd.i8, [-100, 3, -1, 17, 0, 99, -128, 5, 41]),
    (qd.u8, [3, 200, 0, 17, 128, 5, 1, 9, 2]),
    (qd.i16, [-30000, 300, -1, 17, 250, -5, 7]),
    (qd.u16, [3, 310, 0, 17, 128, 5, 1]),
    (qd.i64, [-(1 << 40), 3, 170, -1, 5]),
    (qd.u32, [3, 170, 0, 1, 5]),
])
def test_element_types_read_like_the_host(sizer, dtype, values):
    def sized(mode):
        sizer(qd.vulkan, mode)
        x, loss = recurrence_fields(len(values))
        a = qd.ndarray(dtype, (len(values),))
        a.from_numpy(np.asarray(values, qd.types.to_numpy_dtype(dtype)))

        @qd.kernel
        def typed(arr: qd.types.ndarray(dtype, 1)):
            for i in range(arr.shape[0]):
                v = x[i]
                for _ in range(arr[i]):
                    v = qd.sin(v) * 0.9 + 0.1
                loss[None] += v
        run(typed, loss, a)
        result = capacities(), stats()["sizer_dispatches"], stats()["tree_evaluations"]
        qd.reset()
        return result

    want = [max(max(values), 0) + 2]
    host, shader = sized("host"), sized("shader")
    assert host == (want, 0, 1), host
    assert shader == (want, 1, 0), shader


def test_two_dimensional_narrow_field_read_walks_the_range(sizer):
    # The place's root offset, both axis strides and the extents come from
    # the host; the column read is the peak of its own column only.
    sizer(qd.vulkan)
    x, loss = recurrence_fields(4)
    table = qd.field(qd.i16, shape=(4, 5))
    values = np.arange(20, dtype=np.int16).reshape(4, 5) * 3 - 10
    values[2, 3] = 77
    values[1, 1] = 90  # another column: not read
    table.from_numpy(values)

    @qd.kernel
    def column():
        for i in range(4):
            v = x[i]
            for _ in range(table[i, 3]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    run(column, loss)
    assert capacities() == [max(values[:, 3].max(), 0) + 2]
    assert stats()["sizer_dispatches"] == 1 and stats()["tree_evaluations"] == 0


def test_unknown_sizer_mode_is_an_error(sizer, monkeypatch):
    reason = runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        pytest.skip(f"arch vulkan unavailable: {reason}")
    monkeypatch.setenv("QD_VULKAN_SIZER", "device")
    with pytest.raises(qd.QuadrantsError, match="QD_VULKAN_SIZER=.device."):
        qd.init(arch=qd.vulkan, **OPTIONS)
