"""A kernel called again with the same arguments replays its last launch
(skipping binding and checks); any difference in the arguments takes the
full path, so results never depend on the replay."""
import gc
import sys
import weakref

import numpy as np

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_alternating_ndarrays_each_get_their_own_launch():
    a, b = qd.ndarray(qd.i32, 8), qd.ndarray(qd.i32, 8)

    @qd.kernel
    def add(arr: qd.types.ndarray(qd.i32, 1), v: qd.i32):
        for i in range(arr.shape[0]):
            arr[i] += v

    for _ in range(3):
        add(a, 1)
        add(a, 1)  # replayed
        add(b, 5)
    add(a, 2)
    np.testing.assert_array_equal(a.to_numpy(), np.full(8, 8))
    np.testing.assert_array_equal(b.to_numpy(), np.full(8, 15))


@test_utils.test()
def test_equal_floats_of_other_sign_are_other_arguments():
    x = qd.field(qd.f32, shape=2)

    @qd.kernel
    def reciprocal(v: qd.f32):
        for i in x:
            x[i] = 1.0 / v

    reciprocal(0.0)
    assert x[0] == np.inf
    reciprocal(-0.0)
    assert x[0] == -np.inf
    reciprocal(2.0)
    reciprocal(2.0)
    assert x[1] == 0.5


@test_utils.test()
def test_template_fields_by_identity():
    x, y = qd.field(qd.f32, shape=4), qd.field(qd.f32, shape=4)

    @qd.kernel
    def put(f: qd.template(), v: qd.f32):
        for i in f:
            f[i] = v

    v = 3.0
    put(x, v)
    put(y, v)
    put(x, v)
    np.testing.assert_array_equal(x.to_numpy(), np.full(4, 3.0))
    np.testing.assert_array_equal(y.to_numpy(), np.full(4, 3.0))


@test_utils.test()
def test_the_last_launch_keeps_no_ndarray_alive():
    @qd.kernel
    def touch(arr: qd.types.ndarray(qd.f32, 1)):
        for i in range(arr.shape[0]):
            arr[i] = 1.0

    a = qd.ndarray(qd.f32, 16)
    core = a._core  # what holds the array's memory
    references = sys.getrefcount(core)
    touch(a)
    touch(a)
    assert sys.getrefcount(core) == references
    del core
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None
    b = qd.ndarray(qd.f32, 16)
    touch(b)
    np.testing.assert_array_equal(b.to_numpy(), np.ones(16))
