"""qd.BufferView: sub-ranges of 1-D ndarrays made by slicing or by the
constructor, passed to kernels and funcs (one compiled kernel for every
offset), narrowed in kernel code, and checked against their range in debug
mode."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import (QuadrantsArgumentTypeError, QuadrantsAssertionError,
                                      QuadrantsSyntaxError)
from tests import test_utils

N = 20


def _ramp(dtype=qd.f32):
    data = qd.ndarray(dtype, shape=(N,))
    data.from_numpy(np.arange(N).astype(qd.lang.types.to_numpy_dtype(dtype)))
    return data


@test_utils.test(arch=qd.cpu)
def test_host_slices_and_subviews_accumulate_offsets():
    data = _ramp()
    view = data[5:17]
    assert (view.offset, view.size, view.shape) == (5, 12, (12,))
    assert view.get_ndarray() is data
    inner = view[2:-3]
    assert (inner.offset, inner.size) == (7, 7)
    assert (view.subview(10, 2).offset, data[-4:].offset, data[:].size) == (15, 16, N)
    ctor = qd.BufferView(data, 3, 4)
    assert (ctor.offset, ctor.size) == (3, 4)


@test_utils.test(arch=qd.cpu)
def test_host_misuse_is_refused():
    data = _ramp()
    with pytest.raises(ValueError, match="step=1"):
        data[::3]
    with pytest.raises(ValueError, match="out of range"):
        qd.BufferView(data, 15, 6)
    with pytest.raises(ValueError, match="out of range"):
        qd.BufferView(data, -2, 3)
    with pytest.raises(ValueError, match="subview out of range"):
        data[:8].subview(5, 4)
    with pytest.raises(TypeError, match="1D"):
        qd.ndarray(qd.f32, shape=(4, 5))[1:3]
    with pytest.raises(TypeError, match="slice"):
        data[2:6][0]
    with pytest.raises(TypeError, match="needs_grad"):
        qd.ndarray(qd.f32, shape=(N,), needs_grad=True)[2:4]


@test_utils.test()
def test_kernels_write_only_the_view_and_reuse_one_compilation():
    @qd.kernel
    def scale(v: qd.BufferView[qd.f32], by: qd.f32):
        for i in range(v.size):
            v[i] = v[i] * by

    data = _ramp()
    scale(data[3:7], 10.0)
    scale(data[12:20], -1.0)
    expected = np.arange(N, dtype=np.float32)
    expected[3:7] *= 10
    expected[12:20] *= -1
    np.testing.assert_array_equal(data.to_numpy(), expected)
    # Offset and size are launch values, not compile-time constants.
    assert len(scale._cache) == 1


@test_utils.test()
def test_views_in_funcs_subviews_slices_and_kernel_construction():
    @qd.func
    def put(v: qd.BufferView, k: qd.i32, value: qd.i32):
        v[k] = value

    @qd.kernel
    def mark(v: qd.BufferView, arr: qd.types.ndarray(qd.i32, ndim=1), start: qd.i32):
        head = v[1:3]                 # elements 1 and 2 of v
        tail = v.subview(v.size - 2, 2)
        built = qd.BufferView(arr, start, 2)
        for k in range(2):
            put(head, k, 100 + k)
            put(tail, k, 200 + k)
            put(built, k, 300 + k)

    data = _ramp(qd.i32)
    mark(data[4:14], data, 16)
    got = data.to_numpy().tolist()
    want = list(range(N))
    want[5:7] = [100, 101]
    want[12:14] = [200, 201]
    want[16:18] = [300, 301]
    assert got == want


@test_utils.test()
def test_views_of_vector_ndarrays():
    @qd.kernel
    def lift(v: qd.BufferView):
        for i in range(v.size):
            v[i] = v[i] + qd.Vector([1.0, 2.0, 3.0])

    vecs = qd.Vector.ndarray(3, qd.f32, shape=(6,))
    lift(vecs[2:5])
    out = vecs.to_numpy()
    np.testing.assert_array_equal(out[2:5], np.tile([1.0, 2.0, 3.0], (3, 1)))
    assert not out[:2].any() and not out[5:].any()


@test_utils.test(arch=qd.cpu)
def test_kernel_misuse_is_refused():
    @qd.kernel
    def strided(v: qd.BufferView[qd.f32]):
        w = v[::2]
        w[0] = 1.0

    with pytest.raises(QuadrantsSyntaxError, match="explicit step"):
        strided(_ramp()[:8])

    @qd.kernel
    def wants_view(v: qd.BufferView[qd.f32]):
        v[0] = 1.0

    with pytest.raises(QuadrantsArgumentTypeError, match="expects a qd.BufferView"):
        wants_view(_ramp())
    with pytest.raises(qd.QuadrantsTypeError, match="BufferView of f32"):
        wants_view(_ramp(qd.i32)[:3])


@test_utils.test(debug=True)
def test_debug_mode_checks_each_access_against_the_view():
    @qd.func
    def poke(v: qd.BufferView[qd.f32], k: qd.i32):
        v[k] = 5.0

    @qd.kernel
    def touch(v: qd.BufferView[qd.f32], k: qd.i32):
        for _ in range(1):
            poke(v, k)

    data = _ramp()
    touch(data[6:10], 3)  # the last element: fine
    assert data.to_numpy()[9] == 5.0
    with pytest.raises(QuadrantsAssertionError) as info:
        touch(data[6:10], 4)
    message = str(info.value)
    assert "BufferView Out Of Range" in message and "got index 4" in message
    assert "offset=6, size=4" in message
    # The frames from the kernel down to the func that made the access.
    assert "Callstack:" in message and "touch (" in message and "poke (" in message
    with pytest.raises(QuadrantsAssertionError, match="got index -1"):
        touch(data[6:10], -1)

    @qd.kernel
    def narrow(v: qd.BufferView[qd.f32], o: qd.i32):
        for _ in range(1):
            w = v.subview(o, 2)
            w[0] = 1.0

    with pytest.raises(QuadrantsAssertionError, match="subview Out Of Range"):
        narrow(data[0:4], 3)


@test_utils.test(arch=qd.cpu)
def test_without_debug_a_view_index_is_not_checked():
    @qd.kernel
    def past_end(v: qd.BufferView[qd.f32]):
        v[v.size] = -7.0

    data = _ramp()
    past_end(data[2:5])
    # The write lands after the view, inside the ndarray.
    assert data.to_numpy()[5] == -7.0
