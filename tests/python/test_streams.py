"""Streams. qd.stream_parallel(): a kernel's `with qd.stream_parallel():`
blocks are independent work; on CUDA they run as concurrent branches of the
kernel's graph (one node per task plus the join), elsewhere one after
another. qd.create_stream() / qd.create_event() and kernel(...,
qd_stream=s): on CUDA real streams and events, elsewhere no-ops (handle 0)
with launches in order. Results are the same everywhere; the errors are
upstream's."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import QuadrantsSyntaxError
from tests import test_utils

F32 = qd.types.ndarray(qd.f32, ndim=1)


@test_utils.test()
def test_blocks_compute_what_they_would_in_sequence():
    @qd.kernel
    def two_blocks(a: F32, b: F32, scale: qd.f32):
        """A docstring may precede the blocks."""
        with qd.stream_parallel():
            for i in range(a.shape[0]):
                a[i] = i * scale
            for i in range(a.shape[0]):
                a[i] = a[i] + 1.0    # a second loop on the same stream: after the first
        with qd.stream_parallel():
            for j in range(b.shape[0]):
                b[j] = 2.0 * j

    a = qd.ndarray(qd.f32, shape=(1000,))
    b = qd.ndarray(qd.f32, shape=(3000,))
    for scale in (1.0, 0.5):
        two_blocks(a, b, scale)
        np.testing.assert_allclose(a.to_numpy(), np.arange(1000) * scale + 1.0)
        np.testing.assert_allclose(b.to_numpy(), 2.0 * np.arange(3000))


@test_utils.test(arch=qd.cuda)
def test_cuda_runs_the_blocks_as_graph_branches():
    @qd.kernel
    def three_blocks(a: F32, b: F32, c: F32):
        with qd.stream_parallel():
            for i in range(a.shape[0]):
                a[i] = 1.0
        with qd.stream_parallel():
            for i in range(b.shape[0]):
                b[i] = 2.0
        with qd.stream_parallel():
            for i in range(c.shape[0]):
                c[i] = 3.0

    arrays = [qd.ndarray(qd.f32, shape=(256,)) for _ in range(3)]
    three_blocks(*arrays)
    prog = qd.lang.runtime.program()
    assert prog.get_graph_cache_used_on_last_call()
    tasks = prog.get_num_offloaded_tasks_on_last_call()
    assert tasks == 3 and prog.get_graph_num_nodes_on_last_call() == tasks + 1
    for value, array in enumerate(arrays, 1):
        np.testing.assert_allclose(array.to_numpy(), float(value))


@test_utils.test()
def test_misuse_is_reported():
    x = qd.ndarray(qd.f32, shape=(8,))

    @qd.kernel
    def mixed(a: F32):
        with qd.stream_parallel():
            for i in range(8):
                a[i] = 1.0
        for i in range(8):
            a[i] = 2.0

    with pytest.raises(QuadrantsSyntaxError, match="all top-level statements"):
        mixed(x)

    @qd.kernel
    def nested(a: F32):
        with qd.stream_parallel():
            with qd.stream_parallel():
                for i in range(8):
                    a[i] = 1.0

    with pytest.raises(QuadrantsSyntaxError, match="cannot be nested"):
        nested(x)

    @qd.kernel(graph=True)
    def in_graph(a: F32):
        with qd.stream_parallel():
            for i in range(8):
                a[i] = 1.0

    with pytest.raises(QuadrantsSyntaxError, match="not compatible with graph=True"):
        in_graph(x)

    @qd.func
    def helper(a: qd.template()):
        with qd.stream_parallel():
            for i in range(8):
                a[i] = 1.0

    @qd.kernel
    def calls_helper(a: F32):
        helper(a)

    with pytest.raises(QuadrantsSyntaxError, match="not @qd.func"):
        calls_helper(x)


def test_outside_kernels_it_is_a_no_op():
    ran = []
    with qd.stream_parallel():
        ran.append(1)
    assert ran == [1]


@test_utils.test()
def test_kernels_on_streams_ordered_by_events():
    """consume() on s2 waits, through the event, for a slow produce() on s1:
    without the wait it would read y before x is written."""
    n = 1 << 16
    x = qd.ndarray(qd.f32, shape=(n,))
    y = qd.ndarray(qd.f32, shape=(n,))

    @qd.kernel
    def produce(a: F32, rounds: qd.i32):
        for i in range(a.shape[0]):
            v = 0.0
            for r in range(rounds):
                v = v * 0.5 + 1.0   # converges to 2.0
            a[i] = v + i

    @qd.kernel
    def consume(a: F32, b: F32):
        for i in range(a.shape[0]):
            b[i] = a[i] * 3.0

    with qd.create_stream() as s1, qd.create_stream() as s2, qd.create_event() as e:
        on_gpu = s1.handle != 0
        assert on_gpu == (qd.lang.runtime.state.arch == qd.cuda)
        for rounds in (2000, 3000):
            x.fill(0)
            y.fill(0)
            produce(x, rounds, qd_stream=s1)
            e.record(s1)
            e.wait(qd_stream=s2)
            consume(x, y, qd_stream=s2)
            s2.synchronize()
            np.testing.assert_allclose(y.to_numpy(), (2.0 + np.arange(n)) * 3.0, rtol=1e-6)
        e.synchronize()
    assert s1.handle == 0 and e.handle == 0  # destroyed by the with blocks


@test_utils.test(arch=qd.cuda)
def test_stream_launches_refuse_what_they_cannot_do():
    x = qd.ndarray(qd.f32, shape=(8,), needs_grad=True)
    loss = qd.ndarray(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def square(a: F32, out: qd.types.ndarray(qd.f32, ndim=0)):
        for i in range(8):
            out[()] += a[i] ** 2

    @qd.kernel(graph=True)
    def in_graph(a: F32):
        for i in range(8):
            a[i] = 1.0

    s = qd.create_stream()
    with pytest.raises(RuntimeError, match="not compatible with graph=True"):
        in_graph(x, qd_stream=s)
    with pytest.raises(RuntimeError, match="not compatible with autodiff"):
        square.grad(x, loss, qd_stream=s)
    f = qd.field(qd.f32, shape=(), needs_grad=True)
    f_loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def field_square():
        f_loss[None] = f[None] ** 2

    with pytest.raises(RuntimeError, match="not compatible with autograd Tape"):
        with qd.ad.Tape(f_loss):
            field_square(qd_stream=s)
    s.destroy()


@test_utils.test()
def test_blocks_may_reuse_a_local_name():
    """Each block's loops are top-level tasks with locals of their own."""
    @qd.kernel
    def spin(a: F32, rounds: qd.i32):
        with qd.stream_parallel():
            for _ in range(1):
                v = a[0]
                for _r in range(rounds):
                    v = v * 0.5 + 1.0
                a[0] = v
        with qd.stream_parallel():
            for _ in range(1):
                v = a[1]
                for _r in range(rounds):
                    v = v * 0.5 + 3.0
                a[1] = v

    a = qd.ndarray(qd.f32, shape=(2,))
    a.fill(0)
    spin(a, 60)
    np.testing.assert_allclose(a.to_numpy(), [2.0, 6.0], rtol=1e-6)
