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


@test_utils.test()
def test_graph_replay_sees_new_arrays_and_device_side_ranges():
    n = qd.field(qd.i32, shape=())

    @qd.kernel(graph=True)
    def two_tasks(a: qd.types.ndarray(qd.f32, 1), b: qd.types.ndarray(qd.f32, 1), k: qd.f32):
        for i in range(n[None]):  # the range is read on the device at replay
            a[i] = a[i] * k
        for i in range(b.shape[0]):
            b[i] += a[i % a.shape[0]]

    prog = qd.lang.runtime.program()
    a1 = qd.ndarray(qd.f32, shape=8)
    b1 = qd.ndarray(qd.f32, shape=8)
    a1.from_numpy(np.arange(8, dtype=np.float32))
    n[None] = 4
    two_tasks(a1, b1, 2.0)
    assert prog.last_launch_replayed_graph == (qd.lang.impl.current_cfg().arch == qd.cuda)
    np.testing.assert_array_equal(a1.to_numpy(), [0, 2, 4, 6, 4, 5, 6, 7])
    np.testing.assert_array_equal(b1.to_numpy(), [0, 2, 4, 6, 4, 5, 6, 7])

    a2 = np.ones(3, dtype=np.float32)  # numpy: staged to a new address
    b2 = np.zeros(5, dtype=np.float32)
    n[None] = 2
    two_tasks(a2, b2, 3.0)
    np.testing.assert_array_equal(a2, [3, 3, 1])
    np.testing.assert_array_equal(b2, [3, 3, 1, 3, 3])
    n[None] = 0  # an empty range replays as nothing
    two_tasks(a2, b2, 100.0)
    np.testing.assert_array_equal(a2, [3, 3, 1])
    np.testing.assert_array_equal(b2, [6, 6, 2, 6, 6])


@test_utils.test(debug=True)
def test_graph_replay_reports_out_of_bound_access():
    a = qd.ndarray(qd.f32, shape=4)

    @qd.kernel(graph=True)
    def oob(a: qd.types.ndarray(qd.f32, 1), m: qd.i32):
        for i in range(m):
            a[i] = 1.0

    oob(a, 4)
    qd.sync()
    with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound access"):
        oob(a, 5)
        qd.sync()
    oob(a, 4)  # the error was cleared
    qd.sync()


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
