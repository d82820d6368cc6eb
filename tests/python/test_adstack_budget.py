"""ad_stack_max_bytes: a launch whose adstacks for the threads the device
runs at once exceed the budget checkpoints its loops (test_adstack_checkpoint)
and, if they still do not fit, runs fewer threads at once over the same
iterations, with the same gradients; a budget below the fewest threads a
launch runs, even checkpointed, raises, naming the kernel, the loop, the
bytes and the option."""
import inspect

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

THREADS = 4096
STEPS = 200


def _gradient():
    """x.grad of sum_i v_i after STEPS steps of v = sin(v) * 0.9 + x[i] (f64),
    and the adstack stats."""
    x = qd.field(qd.f64, shape=THREADS, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(0.1 + 0.5 * np.arange(THREADS) / THREADS)

    @qd.kernel
    def recurrence(steps: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(steps):
                v = qd.sin(v) * 0.9 + x[i]
            loss[None] += v

    with qd.ad.Tape(loss=loss):
        recurrence(STEPS)
    return x.grad.to_numpy(), qd.lang.runtime.adstack_stats(), recurrence


def _reinit(budget):
    arch = runtime.state.arch
    qd.reset()
    qd.init(arch=arch, ad_stack_experimental_enabled=True, default_fp=qd.f64,
            cpu_max_num_threads=2, ad_stack_max_bytes=budget)


@test_utils.test(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
                 default_fp=qd.f64, cpu_max_num_threads=2)
def test_a_budget_checkpoints_or_runs_fewer_threads_with_the_same_gradient():
    free, stats, _ = _gradient()
    stride = stats["per_thread_stride"][0]
    assert stride >= (STEPS + 2) * 8
    # Room for half the threads the launch ran (two CPU threads' SIMD
    # lanes, the GPU's resident blocks, Vulkan's invocations).
    budget = stats["bytes_needed"] // 2 + stride // 2
    assert budget >= 4 * stride
    _reinit(budget)
    bounded, stats, _ = _gradient()
    assert stats["budget_bytes"] == budget
    assert stats["heap_bytes"] <= budget
    # The same operations in the same order: bit for bit on cpu; a GPU
    # compiler may fuse a multiply and add differently in the recomputing
    # code than in the replay (1 ulp in f64).
    if runtime.state.arch == qd.cpu:
        np.testing.assert_array_equal(bounded, free)
    else:
        np.testing.assert_allclose(bounded, free, rtol=1e-12)
    # The recurrence's gradient, against f64 central differences at a few
    # threads (the loop is the same for each thread, so any i will do).
    for i in (0, 1000, THREADS - 1):
        x0 = 0.1 + 0.5 * i / THREADS

        def final(x):
            v = x
            for _ in range(STEPS):
                v = np.sin(v) * 0.9 + x
            return v
        h = 1e-6
        fd = (final(x0 + h) - final(x0 - h)) / (2 * h)
        assert abs(bounded[i] - fd) <= 1e-7 * max(1.0, abs(fd))


@test_utils.test(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
                 default_fp=qd.f64, ad_stack_max_bytes=64)
def test_a_budget_below_the_fewest_threads_raises_naming_kernel_loop_and_option():
    with pytest.raises(qd.QuadrantsRuntimeError) as info:
        _gradient()
    _, line = inspect.getsourcelines(_gradient)
    message = str(info.value)
    assert "kernel 'recurrence'" in message
    assert "test_adstack_budget.py:" in message
    loop_line = int(message.split("test_adstack_budget.py:")[1].split()[0])
    assert line < loop_line < line + 20
    assert "64-byte adstack heap budget" in message
    assert "ad_stack_max_bytes" in message and "QD_AD_STACK_MAX_BYTES" in message
    # The session goes on: a budget that fits runs.
    _reinit(0)
    grad, _, _ = _gradient()
    assert np.all(np.isfinite(grad))
