"""@qd.kernel(graph=True): same results as plain launches; adstack kernels
are rejected (their heap is sized on the host at every launch)."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_graph_kernel_gives_the_plain_results():
    n = 64
    x = qd.field(qd.f32, shape=n)
    y = qd.field(qd.f32, shape=n)

    @qd.kernel(graph=True)
    def ten_tasks(scale: qd.f32):
        for i in x:
            x[i] = i * scale
        for _ in qd.static(range(9)):
            for i in y:
                y[i] += x[i]

    @qd.kernel
    def plain(scale: qd.f32):
        for i in x:
            x[i] = i * scale
        for _ in qd.static(range(9)):
            for i in y:
                y[i] += x[i]

    ten_tasks(0.5)
    ten_tasks(2.0)  # other arguments: the replay must see them
    graph_result = y.to_numpy()
    y.fill(0)
    plain(0.5)
    plain(2.0)
    np.testing.assert_array_equal(graph_result, y.to_numpy())
    assert graph_result[3] == pytest.approx(9 * 3 * (0.5 + 2.0))


@test_utils.test(ad_stack_experimental_enabled=True)
def test_graph_kernel_with_adstack_raises():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel(graph=True)
    def dynamic(steps: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(steps):
                v = qd.sin(v)
            loss[None] += v

    dynamic(3)  # the forward kernel has no adstack
    with pytest.raises(qd.QuadrantsRuntimeError, match="graph=True"):
        dynamic.grad(3)


@test_utils.test()
def test_graph_option_must_be_a_bool():
    with pytest.raises(qd.QuadrantsTypeError, match="graph"):
        @qd.kernel(graph="yes")
        def k():
            pass
