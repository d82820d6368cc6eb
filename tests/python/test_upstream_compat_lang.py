"""Upstream-compatibility audit of kernel-language features used with
autodiff: serial execution with cpu_max_num_threads=1 (upstream
test_serial_execution), qd.loop_config's upstream options, and struct-for
over ndarrays."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


# CPU-specific by nature: cpu_max_num_threads bounds the CPU thread pool only.
@pytest.mark.parametrize("struct_for", [False, True])
@test_utils.test(arch=qd.cpu, cpu_max_num_threads=1)
def test_single_thread_runs_iterations_in_order(struct_for):
    n = 1024 * 32
    s = qd.field(dtype=qd.i32, shape=n)
    counter = qd.field(dtype=qd.i32, shape=())

    @qd.kernel
    def by_range():
        counter[None] = 0
        for i in range(n):
            s[qd.atomic_add(counter[None], 1)] = i

    @qd.kernel
    def by_struct():
        counter[None] = 0
        for i in s:
            s[qd.atomic_add(counter[None], 1)] = i

    (by_struct if struct_for else by_range)()
    np.testing.assert_array_equal(s.to_numpy(), np.arange(n))


@test_utils.test()
def test_loop_config_parallelize_one_is_serial_and_ordered():
    n = 4096
    s = qd.field(dtype=qd.i32, shape=n)
    counter = qd.field(dtype=qd.i32, shape=())

    @qd.kernel
    def fill():
        counter[None] = 0
        qd.loop_config(parallelize=1)
        for i in range(n):
            s[qd.atomic_add(counter[None], 1)] = i

    fill()
    np.testing.assert_array_equal(s.to_numpy(), np.arange(n))


@test_utils.test()
def test_loop_config_upstream_options_are_accepted():
    n = 64
    out = qd.field(dtype=qd.f32, shape=n)

    @qd.kernel
    def fill():
        qd.loop_config(parallelize=8, block_dim=128, block_dim_adaptive=False)
        for i in range(n):
            out[i] = i * 0.5

    fill()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(n) * 0.5)


@test_utils.test()
def test_loop_config_parallelize_rejects_non_positive():
    out = qd.field(dtype=qd.f32, shape=4)

    @qd.kernel
    def bad():
        qd.loop_config(parallelize=0)
        for i in range(4):
            out[i] = 1.0

    with pytest.raises(qd.QuadrantsTypeError, match=r"parallelize"):
        bad()


@test_utils.test()
def test_struct_for_over_2d_ndarray_visits_every_index():
    a = qd.ndarray(qd.i32, shape=(3, 5))

    @qd.kernel
    def fill(arr: qd.types.ndarray()):
        for i, j in arr:
            arr[i, j] = i * 10 + j

    fill(a)
    expected = np.arange(3)[:, None] * 10 + np.arange(5)[None, :]
    np.testing.assert_array_equal(a.to_numpy(), expected)


@test_utils.test()
def test_grouped_loop_over_a_0d_field_runs_once_at_the_empty_index():
    x = qd.field(qd.f32)
    y = qd.field(qd.f32)
    qd.root.place(x, x.grad, y, y.grad)

    @qd.kernel
    def twice():
        for I in qd.grouped(x):
            y[I] += x[I] * 2

    x[None] = 0.75
    twice()
    assert y[None] == 1.5
    with qd.ad.Tape(loss=y):
        twice()
    assert x.grad[None] == 2.0
