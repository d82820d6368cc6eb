"""Checkpointed reverse mode: under an ad_stack_max_bytes budget that the
exact adstacks of every thread would exceed, stacked range-for loops run in
segments (the forward replay keeps the carried state at segment starts, the
reverse sweep recomputes each segment before sweeping it). Each shape below
runs unbudgeted, then under a quarter of the bytes that the threads the
device runs at once needed: the stats must
show segmented stacks and a heap within budget, and the gradients must equal
the unbudgeted ones (the same operations in the same order per thread; only
the order of atomic adds into gradient fields that several threads share
may differ, hence 1e-12 relative in f64 there)."""
import inspect

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

N = 48
OPTIONS = dict(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
               default_fp=qd.f64, cpu_max_num_threads=2)


def _reinit(budget):
    arch = runtime.state.arch
    qd.reset()
    qd.init(arch=arch, ad_stack_experimental_enabled=True, default_fp=qd.f64,
            cpu_max_num_threads=2, ad_stack_max_bytes=budget)


def _segmented(stats):
    return [k for task in stats["segments"] for k in task if k > 0]


def _check_budget_matches(run, fraction=4):
    """Runs `run()` (returns a dict of gradient arrays) unbudgeted and then
    under 1/fraction of the bytes the threads the device runs at once
    needed; returns both stats."""
    _reinit(0)
    free = run()
    free_stats = qd.lang.runtime.adstack_stats()
    assert not _segmented(free_stats)
    assert free_stats["checkpointed"] == 0
    at_once = free_stats["threads_at_once"]
    assert at_once >= 1
    budget = at_once * max(free_stats["per_thread_stride"]) // fraction
    _reinit(budget)
    bounded = run()
    stats = qd.lang.runtime.adstack_stats()
    assert _segmented(stats), stats
    # The stacks reversed by checkpointing are those of segmented loops.
    assert stats["checkpointed"] == len(_segmented(stats)), stats
    assert stats["budget_bytes"] == budget
    assert stats["heap_bytes"] <= budget
    for name, want in free.items():
        # On cpu a gradient that one thread owns is bit for bit the same;
        # one that threads add into atomically is summed in any order.
        if runtime.state.arch == qd.cpu and name in ("x", "a"):
            np.testing.assert_array_equal(bounded[name], want, err_msg=name)
        else:
            np.testing.assert_allclose(bounded[name], want, rtol=1e-12, atol=1e-300,
                                       err_msg=name)
    return free_stats, stats


def _fields(n=N, extra=()):
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(0.1 + 0.5 * np.arange(n) / n)
    return x, loss


@test_utils.test(**OPTIONS)
def test_recurrence_of_many_ops_matches_and_central_differences():
    steps = 240

    def run():
        x, loss = _fields()

        @qd.kernel
        def recurrence(t: qd.i32):
            for i in x:
                v = x[i]
                w = 0.25
                for _ in range(t):
                    v = qd.sin(v) * 0.9 + x[i] * qd.exp(-w)
                    w = qd.tanh(w + v * v) * 0.5 + qd.sqrt(v * v + 1.0) * 0.1
                loss[None] += v + w

        with qd.ad.Tape(loss=loss):
            recurrence(steps)
        return {"x": x.grad.to_numpy()}

    _, stats = _check_budget_matches(run)
    grad = run()["x"]

    def final(x0):
        v, w = x0, 0.25
        for _ in range(steps):
            v = np.sin(v) * 0.9 + x0 * np.exp(-w)
            w = np.tanh(w + v * v) * 0.5 + np.sqrt(v * v + 1.0) * 0.1
        return v + w

    for i in (0, 17, N - 1):
        x0 = 0.1 + 0.5 * i / N
        h = 1e-6
        fd = (final(x0 + h) - final(x0 - h)) / (2 * h)
        # f64 central differences with h = 1e-6: truncation ~h^2, roundoff
        # ~1e-16 / h; 1e-7 relative bounds both.
        assert abs(grad[i] - fd) <= 1e-7 * max(1.0, abs(fd))


@test_utils.test(**OPTIONS)
def test_branches_in_the_loop():
    def run():
        x, loss = _fields()

        @qd.kernel
        def branchy(t: qd.i32):
            for i in x:
                v = x[i]
                for j in range(t):
                    if v > 0.5:
                        v = v * 0.8 + 0.05 * qd.cos(v)
                    else:
                        v = qd.sin(v + x[i]) + 0.3
                    if j % 3 == 0:
                        v = v + 0.01 * x[i]
                loss[None] += v

        with qd.ad.Tape(loss=loss):
            branchy(150)
        return {"x": x.grad.to_numpy()}

    _check_budget_matches(run)


@test_utils.test(**OPTIONS)
def test_loop_carried_index():
    M = 13

    def run():
        x, loss = _fields()
        y = qd.field(qd.f64, shape=M, needs_grad=True)
        y.from_numpy(np.linspace(-0.4, 0.6, M))

        @qd.kernel
        def gather(t: qd.i32):
            for i in x:
                v = x[i]
                k = i % M
                for _ in range(t):
                    v = qd.sin(v) * 0.7 + y[k] * v
                    k = (k + 5) % M
                loss[None] += v

        with qd.ad.Tape(loss=loss):
            gather(120)
        return {"x": x.grad.to_numpy(), "y": y.grad.to_numpy()}

    _check_budget_matches(run)


@test_utils.test(**OPTIONS)
def test_triangular_trip_counts():
    def run():
        x, loss = _fields()

        @qd.kernel
        def triangle():
            for i in x:
                v = x[i]
                for _ in range(4 * i + 3):
                    v = qd.sin(v) * 0.95 + 0.1
                loss[None] += v * v

        with qd.ad.Tape(loss=loss):
            triangle()
        return {"x": x.grad.to_numpy()}

    _check_budget_matches(run)


@test_utils.test(**OPTIONS)
def test_sibling_loops():
    def run():
        x, loss = _fields()

        @qd.kernel
        def siblings(t: qd.i32, u: qd.i32):
            for i in x:
                v = x[i]
                for _ in range(t):
                    v = qd.sin(v) * 0.9 + x[i]
                w = v
                for _ in range(u):
                    w = qd.cos(w) * 0.5 + v * 0.25
                loss[None] += w

        with qd.ad.Tape(loss=loss):
            siblings(200, 90)
        return {"x": x.grad.to_numpy()}

    _, stats = _check_budget_matches(run)
    # The larger loop is segmented first.
    assert len(set(_segmented(stats))) >= 1


@test_utils.test(**OPTIONS)
def test_nested_loops():
    def run():
        x, loss = _fields()

        @qd.kernel
        def nested(t: qd.i32, u: qd.i32):
            for i in x:
                v = x[i]
                for _ in range(t):
                    w = v
                    for _ in range(u):
                        w = qd.sin(w) * 0.8 + v * 0.1
                    v = w + 0.05 * x[i]
                loss[None] += v

        with qd.ad.Tape(loss=loss):
            nested(150, 10)
        return {"x": x.grad.to_numpy()}

    # The inner loop's stacks (one outer iteration's worth) stay whole: on
    # GPUs, whose fewest threads are all the threads run at once, the budget
    # must leave room for them.
    _check_budget_matches(run, fraction=3)


@pytest.mark.parametrize("bound", ["field", "ndarray", "argument"])
@test_utils.test(**OPTIONS)
def test_bounds_from_fields_ndarrays_and_arguments(bound):
    def run():
        x, loss = _fields()
        steps = qd.field(qd.i32, shape=())
        steps[None] = 130
        per_thread = qd.ndarray(qd.i32, shape=N)
        per_thread.from_numpy((np.arange(N) * 7 % 50 + 80).astype(np.int32))

        @qd.kernel
        def from_field():
            for i in x:
                v = x[i]
                for _ in range(steps[None]):
                    v = qd.sin(v) * 0.9 + x[i]
                loss[None] += v

        @qd.kernel
        def from_ndarray(n: qd.types.ndarray(dtype=qd.i32, ndim=1)):
            for i in x:
                v = x[i]
                for _ in range(n[i]):
                    v = qd.sin(v) * 0.9 + x[i]
                loss[None] += v

        @qd.kernel
        def from_argument(t: qd.i32):
            for i in x:
                v = x[i]
                for _ in range(t):
                    v = qd.sin(v) * 0.9 + x[i]
                loss[None] += v

        with qd.ad.Tape(loss=loss):
            if bound == "field":
                from_field()
            elif bound == "ndarray":
                from_ndarray(per_thread)
            else:
                from_argument(130)
        return {"x": x.grad.to_numpy()}

    _check_budget_matches(run)


@test_utils.test(**OPTIONS)
def test_ndarray_gradients_through_a_checkpointed_loop():
    def run():
        a = qd.ndarray(qd.f64, shape=N, needs_grad=True)
        out = qd.ndarray(qd.f64, shape=N, needs_grad=True)
        a.from_numpy(0.2 + 0.3 * np.arange(N) / N)

        @qd.kernel
        def step(a: qd.types.ndarray(ndim=1), out: qd.types.ndarray(ndim=1), t: qd.i32):
            for i in a:
                v = a[i]
                for _ in range(t):
                    v = qd.sin(v) * 0.9 + a[i]
                out[i] = v

        step(a, out, 160)
        out.grad.from_numpy(np.ones(N))
        step.grad(a, out, 160)
        return {"a": a.grad.to_numpy()}

    _check_budget_matches(run)


def _recurrence_and_x():
    """sum_i v_i after t steps of v = sin(v) * 0.9 + x[i]: the kernel, its
    loss and x, made after the last qd.init."""
    x, loss = _fields()

    @qd.kernel
    def recurrence(t: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(t):
                v = qd.sin(v) * 0.9 + x[i]
            loss[None] += v

    return recurrence, loss, x


def _recurrence():
    recurrence, loss, _ = _recurrence_and_x()
    return recurrence, loss


@test_utils.test(**OPTIONS)
def test_a_budget_too_small_even_for_checkpoints_names_kernel_loop_and_option():
    _reinit(64)
    recurrence, loss = _recurrence()
    with pytest.raises(qd.QuadrantsRuntimeError) as info:
        with qd.ad.Tape(loss=loss):
            recurrence(4000)
    _, line = inspect.getsourcelines(_recurrence_and_x)
    message = str(info.value)
    assert "kernel 'recurrence'" in message
    loop_line = int(message.split("test_adstack_checkpoint.py:")[1].split()[0])
    assert line < loop_line < line + 12
    assert "smallest checkpointed schedule" in message
    assert "64-byte adstack heap budget" in message
    assert "ad_stack_max_bytes" in message and "QD_AD_STACK_MAX_BYTES" in message


@test_utils.test(**OPTIONS)
def test_an_ample_budget_leaves_loops_unsegmented():
    recurrence, loss = _recurrence()
    with qd.ad.Tape(loss=loss):
        recurrence(100)
    stats = qd.lang.runtime.adstack_stats()
    assert not _segmented(stats)
    assert stats["checkpointed"] == 0
    # The checkpoint stacks take no slots when unsegmented (on the CPU the
    # launch runs the kernel compiled without any).
    assert all(c <= 1 for c in stats["checkpoint_capacities"][0])
    assert stats["capacities"][0] == [102]


def _gradient_of_recurrence(recurrence, loss, x, steps):
    x.grad.fill(0)
    with qd.ad.Tape(loss=loss):
        recurrence(steps)
    return x.grad.to_numpy(), qd.lang.runtime.adstack_stats()


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.amdgpu], **OPTIONS)
def test_compiles_checkpointing_only_for_the_launch_that_needs_it():
    """A gradient kernel compiles without checkpointing support; a launch
    whose adstacks exceed the budget runs the kernel compiled with it (built
    then, once), and a later launch that fits goes back to the first."""
    # A GPU launch runs at least one block of 128 threads: the checkpointed
    # schedule of the long loop needs 96 KiB of it.
    budget = (64 if runtime.state.arch == qd.cpu else 256) << 10
    _reinit(budget)
    recurrence, loss, x = _recurrence_and_x()
    small_grad, small = _gradient_of_recurrence(recurrence, loss, x, 20)
    assert small["checkpoint_capacities"][0] == []  # no checkpoint stacks
    assert small["checkpointed"] == 0
    big_grad, big = _gradient_of_recurrence(recurrence, loss, x, 2000)
    assert big["checkpointed"] > 0 and _segmented(big), big
    assert len(big["checkpoint_capacities"][0]) > 0
    assert big["heap_bytes"] <= budget
    again_grad, again = _gradient_of_recurrence(recurrence, loss, x, 20)
    assert again["checkpoint_capacities"][0] == []
    np.testing.assert_array_equal(again_grad, small_grad)
    # The checkpointed launch's gradient is the unbudgeted one.
    _reinit(0)
    free_recurrence, loss2, x2 = _recurrence_and_x()  # the same x
    free_grad, free = _gradient_of_recurrence(free_recurrence, loss2, x2, 2000)
    assert free["checkpointed"] == 0
    if runtime.state.arch == qd.cpu:
        np.testing.assert_array_equal(big_grad, free_grad)
    else:
        # A GPU compiler may fuse a multiply-add differently in the
        # recomputing code: a few f64 ulps after 2000 steps.
        np.testing.assert_allclose(big_grad, free_grad, rtol=1e-12)
