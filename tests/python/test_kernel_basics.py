"""Kernels, funcs and fields end to end: the shapes most programs start with."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_saxpy_on_numpy_arrays():
    @qd.kernel
    def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    saxpy(2.0, x, y)
    np.testing.assert_array_equal(y, 2.0 * np.arange(100, dtype=np.float32) + 1.0)


@test_utils.test()
def test_struct_for_over_2d_field():
    f = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def fill():
        for i, j in f:
            f[i, j] = i * 10 + j

    fill()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(3)[:, None] * 10 + np.arange(4))


@test_utils.test()
def test_func_with_python_scoped_local():
    total = qd.field(qd.f64, shape=())

    @qd.func
    def square(v):
        return v * v

    @qd.kernel
    def accumulate(n: qd.i32):
        for i in range(n):
            if i % 2 == 0:
                s = square(i)
            else:
                s = -1
            total[None] += s

    accumulate(10)
    assert total[None] == sum(i * i for i in range(0, 10, 2)) - 5


@test_utils.test(debug=True)
def test_assert_fails_at_the_call_under_debug():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def check(limit: qd.i32):
        for i in x:
            assert x[i] < limit, "too big"

    x[2] = 7
    check(10)
    with pytest.raises(qd.QuadrantsAssertionError, match="too big"):
        check(5)  # debug mode waits for the kernel and reports at its call
    qd.sync()  # nothing left over


@test_utils.test()
def test_implicit_casts_keep_statement_order():
    # Storing a float into an int field inserts a cast; the load after it
    # must still see the stored value.
    a = qd.field(qd.i32, shape=4)
    b = qd.field(qd.i32, shape=4)

    @qd.kernel
    def store_then_load():
        for i in a:
            a[i] = i * 2.5
            b[i] = a[i] + 1

    store_then_load()
    np.testing.assert_array_equal(a.to_numpy(), [0, 2, 5, 7])
    np.testing.assert_array_equal(b.to_numpy(), [1, 3, 6, 8])


@test_utils.test()
def test_a_grouped_index_spreads_into_a_subscript_tuple():
    """value[(*I, j)]: the components of a qd.grouped index, then j."""
    src = qd.ndarray(qd.f32, shape=(2, 3, 4))
    dst = qd.ndarray(qd.f32, shape=(2, 3, 4))
    src.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 4))

    @qd.kernel
    def copy(a: qd.types.ndarray(qd.f32, ndim=3), b: qd.types.ndarray(qd.f32, ndim=3)):
        for I in qd.grouped(qd.ndrange(2, 3)):
            for j in qd.static(range(4)):
                b[(*I, j)] = a[(*I, j)] * 2.0

    copy(src, dst)
    np.testing.assert_array_equal(dst.to_numpy(), 2 * src.to_numpy())
