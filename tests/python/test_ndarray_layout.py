"""Ndarrays with a layout: qd.tensor(..., backend=NDARRAY, layout=...) keeps
the shape and indices users give while the memory holds the axes in the
layout's order. Kernels (indices, loops, x.shape, x.grad, gradients), host
copies and indexing, DLPack, copies between layouts and pickling all see the
users' axis order; only the memory (DLPack strides) shows the layout."""
import copy
import itertools
import pickle

import numpy as np
import pytest

import quadrants as qd
from quadrants._tensor import _with_layout
from quadrants.lang.exception import QuadrantsGradientError

from tests import test_utils

NDARRAY = qd.Backend.NDARRAY
PERMUTATIONS_3D = list(itertools.permutations(range(3)))


def _pattern(shape):
    """Distinct values by index: a transposition anywhere shows up."""
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 0.5 + 1.0


@qd.kernel
def _scale_and_shift(x: qd.types.ndarray(), y: qd.types.ndarray()):
    for i, j, k in qd.ndrange(x.shape[0], x.shape[1], x.shape[2]):
        y[i, j, k] = x[i, j, k] * 2.0 + i * 100 + j * 10 + k


@pytest.mark.parametrize("layout", PERMUTATIONS_3D)
@test_utils.test()
def test_kernels_over_a_permuted_3d_ndarray_match_the_row_major_one(layout):
    shape = (3, 4, 5)
    src = _pattern(shape)
    x_row, y_row = qd.tensor(qd.f32, shape), qd.tensor(qd.f32, shape)
    x_lay = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=layout)
    y_lay = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=layout)
    assert x_lay.shape == shape
    assert tuple(x_lay._unwrap()._physical_shape) == tuple(shape[a] for a in layout)
    x_row.from_numpy(src)
    x_lay.from_numpy(src)
    _scale_and_shift(x_row, y_row)
    _scale_and_shift(x_lay, y_lay)
    expected = src * 2 + np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k, shape)
    np.testing.assert_array_equal(y_row.to_numpy(), expected.astype(np.float32))
    np.testing.assert_array_equal(y_lay.to_numpy(), y_row.to_numpy())


@test_utils.test()
def test_a_column_major_matrix_reads_and_writes_like_a_row_major_one():
    a = qd.tensor(qd.i32, (3, 4), backend=NDARRAY, layout=(1, 0))
    assert a.layout == (1, 0) and a.shape == (3, 4)

    @qd.kernel
    def fill(x: qd.types.ndarray()):
        for i, j in qd.ndrange(3, 4):
            x[i, j] = i * 10 + j

    fill(a)
    np.testing.assert_array_equal(a.to_numpy(), np.fromfunction(lambda i, j: i * 10 + j,
                                                                (3, 4)).astype(np.int32))
    assert a[2, 1] == 21
    a[0, 3] = -5
    assert a.to_numpy()[0, 3] == -5


@pytest.mark.parametrize("layout", PERMUTATIONS_3D)
@test_utils.test()
def test_loops_over_the_ndarray_bind_the_users_axes(layout):
    shape = (2, 3, 4)
    x = qd.tensor(qd.i32, shape, backend=NDARRAY, layout=layout)
    y = qd.tensor(qd.i32, shape, backend=NDARRAY, layout=layout)
    s = qd.ndarray(qd.i32, 3)

    @qd.kernel
    def by_names(x: qd.types.ndarray()):
        for i, j, k in x:
            x[i, j, k] = i * 100 + j * 10 + k

    @qd.kernel
    def grouped(x: qd.types.ndarray(), y: qd.types.ndarray(), s: qd.types.ndarray()):
        for I in qd.grouped(x):
            y[I] = x[I] + 1
        for a in qd.static(range(3)):
            s[a] = x.shape[a]

    by_names(x)
    grouped(x, y, s)
    expected = np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k, shape).astype(np.int32)
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(y.to_numpy(), expected + 1)
    np.testing.assert_array_equal(s.to_numpy(), shape)


@test_utils.test()
def test_one_kernel_mixes_layouts_and_compiles_per_layout():
    src = _pattern((4, 6))
    arrays = {layout: qd.tensor(qd.f32, (4, 6), backend=NDARRAY, layout=layout)
              for layout in [None, (1, 0)]}
    for a in arrays.values():
        a.from_numpy(src)

    @qd.kernel
    def transpose_add(x: qd.types.ndarray(), y: qd.types.ndarray(), out: qd.types.ndarray()):
        for i, j in qd.ndrange(4, 6):
            out[j, i] = x[i, j] + y[i, j] * 10

    for lx, ly in itertools.product(arrays, repeat=2):
        out = qd.tensor(qd.f32, (6, 4), backend=NDARRAY, layout=(1, 0) if lx else None)
        transpose_add(arrays[lx], arrays[ly], out)
        np.testing.assert_allclose(out.to_numpy(), (src + src * 10).T)


@test_utils.test()
def test_gradients_through_a_permuted_ndarray_match_the_row_major_ones():
    shape = (3, 4, 5)
    rng = np.random.default_rng(3)
    x_np = rng.uniform(-1.5, 1.5, shape).astype(np.float32)
    w_np = rng.uniform(-1.0, 1.0, shape).astype(np.float32)

    @qd.kernel
    def energy(x: qd.types.ndarray(), w: qd.types.ndarray(), loss: qd.types.ndarray()):
        for i, j, k in x:
            loss[None] += qd.sin(x[i, j, k]) * w[i, j, k] + x[i, j, k] * x[i, j, k] * (i + 1)

    grads = {}
    for layout in [None, (2, 0, 1), (1, 2, 0)]:
        x = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=layout, needs_grad=True)
        w = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=layout)
        loss = qd.ndarray(qd.f32, (), needs_grad=True)
        x.from_numpy(x_np)
        w.from_numpy(w_np)
        loss.grad.fill(1.0)
        energy(x, w, loss)
        energy.grad(x, w, loss)
        grads[layout] = x.grad.to_numpy()
    # d/dx (sin x * w + x^2 (i + 1)) in f64; f32 arithmetic: a few ulps.
    i = np.arange(shape[0]).reshape(-1, 1, 1)
    reference = np.cos(x_np.astype(np.float64)) * w_np + 2 * x_np.astype(np.float64) * (i + 1)
    for layout, grad in grads.items():
        assert grad.shape == shape, layout
        np.testing.assert_allclose(grad, reference, rtol=1e-5, atol=1e-5, err_msg=str(layout))


@test_utils.test()
def test_tape_gradient_of_a_column_major_ndarray():
    x = qd.tensor(qd.f32, (5, 3), backend=NDARRAY, layout=(1, 0), needs_grad=True)
    loss = qd.field(qd.f32, (), needs_grad=True)
    src = _pattern((5, 3))
    x.from_numpy(src)

    @qd.kernel
    def weighted(x: qd.types.ndarray()):
        for i, j in x:
            loss[None] += x[i, j] * x[i, j] * (j + 1)

    with qd.ad.Tape(loss=loss):
        weighted(x)
    j = np.arange(3).reshape(1, -1)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * src * (j + 1), rtol=1e-6)


@test_utils.test()
def test_grad_of_an_ndarray_argument_is_written_in_the_users_axis_order():
    x = qd.tensor(qd.f32, (2, 3, 4), backend=NDARRAY, layout=(2, 0, 1), needs_grad=True)
    assert x.grad._unwrap()._qd_layout == (2, 0, 1)

    @qd.kernel
    def seed(x: qd.types.ndarray()):
        for i, j, k in qd.ndrange(2, 3, 4):
            x.grad[i, j, k] = i * 100 + j * 10 + k
            x.grad[i, j, k] += 0.5

    seed(x)
    expected = np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k + 0.5, (2, 3, 4))
    np.testing.assert_array_equal(x.grad.to_numpy(), expected.astype(np.float32))

    plain = qd.ndarray(qd.f32, (2, 3, 4))
    with pytest.raises(QuadrantsGradientError, match="needs_grad=True"):
        seed(plain)


@test_utils.test()
def test_host_copies_indexing_fill_and_copy_between_layouts():
    shape = (2, 3, 4)
    src = _pattern(shape)
    a = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=(1, 2, 0))
    a.from_numpy(src)
    for index in itertools.product(*map(range, shape)):
        assert a[index] == src[index]
    a[1, 2, 3] = -1.0
    src[1, 2, 3] = -1.0
    np.testing.assert_array_equal(a.to_numpy(), src)
    with pytest.raises((ValueError, RuntimeError)):
        a.from_numpy(np.zeros((3, 4, 2), np.float32))  # the memory's order is not the shape
    b = qd.tensor(qd.f32, shape, backend=NDARRAY, layout=(2, 1, 0))
    b.copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), src)
    c = copy.deepcopy(a)
    assert c.layout == (1, 2, 0)
    np.testing.assert_array_equal(c.to_numpy(), src)
    a.fill(7.0)
    np.testing.assert_array_equal(a.to_numpy(), np.full(shape, 7.0, np.float32))


@test_utils.test(arch=[qd.cpu])
def test_pickling_keeps_shape_layout_and_values():
    src = _pattern((2, 3, 4))
    a = qd.tensor(qd.f32, (2, 3, 4), backend=NDARRAY, layout=(2, 0, 1))
    a.from_numpy(src)
    b = pickle.loads(pickle.dumps(a))
    assert b.shape == (2, 3, 4) and b.layout == (2, 0, 1)
    np.testing.assert_array_equal(b.to_numpy(), src)


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_dlpack_shows_the_layout_as_strides_with_zero_copies():
    torch = pytest.importorskip("torch")
    a = qd.tensor(qd.f32, (3, 4), backend=NDARRAY, layout=(1, 0))
    src = _pattern((3, 4))
    a.from_numpy(src)
    t = torch.utils.dlpack.from_dlpack(a.to_dlpack())
    assert tuple(t.shape) == (3, 4) and t.stride() == (1, 3) and not t.is_contiguous()
    np.testing.assert_array_equal(t.cpu().numpy(), src)

    @qd.kernel
    def bump(x: qd.types.ndarray()):
        for i, j in x:
            x[i, j] += 100.0

    bump(a)
    qd.sync()
    # The tensor views the ndarray's memory: the kernel's writes show in it.
    np.testing.assert_array_equal(t.cpu().numpy(), src + 100)
    three = qd.tensor(qd.f32, (2, 3, 4), backend=NDARRAY, layout=(2, 0, 1))
    t3 = torch.utils.dlpack.from_dlpack(three.to_dlpack())
    # Memory levels (axis 2, axis 0, axis 1) of extents (4, 2, 3).
    assert tuple(t3.shape) == (2, 3, 4) and t3.stride() == (3, 1, 6)


@test_utils.test(arch=[qd.cpu])
def test_tagging_an_ndarray_allocated_in_memory_order():
    a = qd.tensor(qd.f32, (4, 3), backend=NDARRAY, needs_grad=True)
    a.from_numpy(_pattern((4, 3)))
    _with_layout(a, (1, 0))
    assert a.shape == (3, 4) and a.grad.shape == (3, 4)
    np.testing.assert_array_equal(a.to_numpy(), _pattern((4, 3)).T)
    with pytest.raises(ValueError, match="layout has"):
        _with_layout(qd.tensor(qd.f32, (3, 4)), (0, 1, 2))
    with pytest.raises(ValueError, match="not a permutation"):
        _with_layout(qd.tensor(qd.f32, (3, 4)), (0, 0))


@test_utils.test(arch=[qd.cpu])
def test_layout_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="layout has 3 entries but shape has 2"):
        qd.tensor(qd.f32, (4, 5), backend=NDARRAY, layout=(0, 1, 2))
    with pytest.raises(ValueError, match=r"layout=\(1, 2\) is not a permutation"):
        qd.tensor(qd.f32, (4, 5), backend=NDARRAY, layout=(1, 2))
    with pytest.raises(TypeError, match="layout= is not supported with compound"):
        qd.tensor(qd.types.vector(3, qd.f32), (4,), backend=NDARRAY, layout=(0,))
    with pytest.raises(TypeError, match="order="):
        qd.tensor(qd.f32, (4, 5), backend=NDARRAY, order="ji")


@test_utils.test(arch=[qd.cpu])
def test_a_field_gives_a_dlpack_view_in_its_own_axis_order():
    torch = pytest.importorskip("torch")
    f = qd.field(qd.f32, (3, 4), order="ji")
    assert f._qd_layout == (1, 0) and f.layout == (1, 0)
    f.from_numpy(_pattern((3, 4)))
    t = torch.utils.dlpack.from_dlpack(f.to_dlpack())
    # Axis i is the innermost memory level (its dense level may be padded).
    assert tuple(t.shape) == (3, 4) and t.stride()[0] == 1 and t.stride()[1] >= 3
    np.testing.assert_array_equal(t.numpy(), _pattern((3, 4)))


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_from_dlpack_imports_a_transposed_tensor_as_a_layout_without_copying():
    torch = pytest.importorskip("torch")
    device = "cuda" if qd.lang.impl.current_cfg().arch == qd.cuda else "cpu"
    t = torch.arange(12, dtype=torch.float32, device=device).reshape(4, 3).T
    a = qd.from_dlpack(t)
    assert a.shape == (3, 4) and a.layout == (1, 0)
    np.testing.assert_array_equal(a.to_numpy(), t.cpu().numpy())

    @qd.kernel
    def bump(x: qd.types.ndarray()):
        for i, j in x:
            x[i, j] += 100 * i

    bump(a)
    qd.sync()
    expected = np.arange(12, dtype=np.float32).reshape(4, 3).T + 100 * np.arange(3)[:, None]
    np.testing.assert_array_equal(t.cpu().numpy(), expected)  # the tensor's own memory
    n = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(2, 0, 1)
    if device == "cpu":
        b = qd.from_dlpack(n)
        assert b.layout == (1, 2, 0)
        np.testing.assert_array_equal(b.to_numpy(), n)


@test_utils.test()
def test_twelve_axes_for_ndarrays_and_fields():
    # Upstream's limit is 12 axes; a 13th is refused with the limit named.
    shape = (2, 1, 2, 1, 2, 1, 1, 2, 1, 1, 2, 3)
    arr = qd.ndarray(qd.i32, shape=shape)
    fld = qd.field(qd.i32, shape=shape)
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]

    @qd.kernel
    def number(a: qd.types.ndarray(qd.i32, 12)):
        for I in qd.grouped(a):
            flat = 0
            for k in qd.static(range(12)):
                flat += I[k] * qd.static(int(strides[k]))
            a[I] = flat
            fld[I] = flat * 2

    number(arr)
    expected = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(arr.to_numpy(), expected)
    np.testing.assert_array_equal(fld.to_numpy(), expected * 2)
    with pytest.raises(qd.QuadrantsTypeError, match="at most 12 dimensions, got 13"):
        qd.ndarray(qd.i32, shape=(1,) * 13)
