"""qd.stream_parallel(): a kernel's `with qd.stream_parallel():` blocks are
independent work. On CUDA they run as concurrent branches of the kernel's
graph (one node per task plus the join); elsewhere one after another. The
results are the same everywhere; the errors are upstream's."""
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
