"""Upstream's field layout options: offset= (the index range starts at the
offset on every axis, in kernels, on the host and in debug bounds checks)
and order= (the memory order of the axes; results do not change), on
qd.field, qd.Vector.field, qd.Matrix.field, struct fields and
qd.root...place(..., offset=)."""
import ctypes
import itertools

import numpy as np
import pytest

import quadrants as qd

from tests import test_utils


# ---- offset -----------------------------------------------------------------------------

@test_utils.test()
def test_place_with_offset_shifts_host_indices():
    a = qd.field(qd.i32)
    qd.root.dense(qd.ijk, 8).place(a, offset=(1024, 2048, 2100))
    a[1029, 2050, 2107] = 1
    assert a[1029, 2050, 2107] == 1
    assert a.to_numpy()[5, 2, 7] == 1
    assert a.offset == (1024, 2048, 2100)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"\[1024, 1032\)"):
        a[0, 2048, 2100]


@test_utils.test()
def test_struct_for_over_large_offsets():
    a = qd.field(qd.i32)
    offset = (1024, 2048, 2100, 2200)
    qd.root.dense(qd.ijkl, 3).place(a, offset=offset)

    @qd.kernel
    def fill():
        for i, j, k, l in a:
            a[i, j, k, l] = i + j * 10 + k * 100 + l * 1000

    fill()
    for index in itertools.product(*[range(o, o + 3) for o in offset]):
        i, j, k, l = index
        assert a[index] == i + j * 10 + k * 100 + l * 1000


@test_utils.test()
def test_struct_for_with_negative_offset():
    a = qd.field(qd.i32)
    qd.root.dense(qd.ij, 32).place(a, offset=(16, -16))

    @qd.kernel
    def fill():
        for i, j in a:
            a[i, j] = i + j * 10

    fill()
    expected = np.arange(16, 48)[:, None] + np.arange(-16, 16)[None, :] * 10
    np.testing.assert_array_equal(a.to_numpy(), expected)


@test_utils.test()
def test_offset_argument_forms():
    a = qd.field(qd.i32, shape=16, offset=-48)
    b = qd.field(qd.i32, shape=(16,), offset=(16,))
    c = qd.field(qd.i32, shape=(4, 6), offset=None)
    d = qd.field(qd.i32, shape=(4, 6), offset=(0, 0))
    assert a.offset == (-48,) and b.offset == (16,)
    assert c.offset == (0, 0) and d.offset == (0, 0)
    e = qd.field(qd.i32, shape=(16, 16), offset=(4, -4))

    @qd.kernel
    def fill():
        for i, j in e:
            e[i, j] = i * j
        for i in a:
            a[i] = i

    fill()
    np.testing.assert_array_equal(e.to_numpy(), np.arange(4, 20)[:, None] * np.arange(-4, 12))
    np.testing.assert_array_equal(a.to_numpy(), np.arange(-48, -32))
    assert e[19, 11] == 209 and a[-33] == -33


@test_utils.test()
def test_vector_field_offset():
    c = qd.Vector.field(n=2, dtype=qd.i32, shape=16, offset=16)

    @qd.kernel
    def fill():
        for i in c:
            c[i][0] = 2 * i
            c[i][1] = -i

    fill()
    for i in range(16, 32):
        np.testing.assert_array_equal(c[i], [2 * i, -i])
    assert c.offset == (16,)


@test_utils.test()
def test_matrix_field_offset():
    a = qd.Matrix.field(3, 3, shape=(8, 8), offset=(-8, 16), dtype=qd.f32)

    @qd.kernel
    def fill():
        for i, j in a:
            a[i, j][0, 0] = i + j
            a[i, j][2, 1] = i - j

    fill()
    for i in range(-8, 0):
        for j in range(16, 24):
            assert a[i, j][0, 0] == i + j and a[i, j][2, 1] == i - j
    with pytest.raises(qd.QuadrantsRuntimeError, match="out of bounds"):
        a[0, 0]


@test_utils.test()
def test_grouped_loop_and_struct_field_with_offset():
    x = qd.field(qd.f32, shape=(3, 4), offset=(10, -2))

    @qd.dataclass
    class P:
        a: qd.i32
        v: qd.types.vector(2, qd.f32)

    p = P.field(shape=5, offset=-2)

    @qd.kernel
    def fill():
        for I in qd.grouped(x):
            x[I] = I[0] * 100 + I[1]
        for i in p:
            p[i].a = i
            p[i].v = qd.Vector([i, 2 * i])

    fill()
    np.testing.assert_array_equal(x.to_numpy(),
                                  np.arange(10, 13)[:, None] * 100 + np.arange(-2, 2))
    assert p[-2].a == -2 and p[2].a == 2
    np.testing.assert_array_equal(p[1].v, [1, 2])


@test_utils.test()
def test_offset_fields_to_numpy_and_print():
    for offset in (None, (0, 0), (-1, -1), (2, 2), (-23333, -23333), (23333, 23333)):
        val = qd.field(qd.f32, shape=(3, 3), offset=offset)
        val.fill(1.0)
        np.testing.assert_array_equal(val.to_numpy(), np.ones((3, 3), dtype=np.float32))
        print(val)
        val.from_numpy(np.arange(9, dtype=np.float32).reshape(3, 3))
        first = offset or (0, 0)
        assert val[first[0] + 2, first[1] + 1] == 7.0


@test_utils.test()
def test_gradient_through_an_offset_field():
    """y = sum_i x_i**2 / 2 over x indexed from -3, so x.grad == x."""
    x = qd.field(qd.f32, shape=6, offset=-3, needs_grad=True)
    y = qd.field(qd.f32, shape=(), needs_grad=True)
    xs = np.linspace(-1, 2, 6).astype(np.float32)
    x.from_numpy(xs)

    @qd.kernel
    def energy():
        for i in x:
            y[None] += 0.5 * x[i] ** 2

    with qd.ad.Tape(loss=y):
        energy()
    np.testing.assert_allclose(x.grad.to_numpy(), xs, rtol=1e-6)
    assert x.grad[-3] == pytest.approx(xs[0])
    assert x.grad.offset == (-3,)


@test_utils.test()
def test_lazy_grad_keeps_offset_and_order():
    x = qd.field(qd.f32)
    qd.root.dense(qd.ij, (2, 3)).place(x, offset=(5, 5))
    z = qd.field(qd.f32, shape=(2, 3), order="ji")
    qd.root.lazy_grad()

    @qd.kernel
    def seed():
        for i, j in x:
            x.grad[i, j] = i * 10 + j
        for i, j in z:
            z.grad[i, j] = i * 10 + j

    seed()
    assert x.grad[6, 7] == 67 and x.grad.offset == (5, 5)
    np.testing.assert_array_equal(z.grad.to_numpy(), np.arange(2)[:, None] * 10 + np.arange(3))
    assert z.grad.layout == (1, 0)


@test_utils.test(debug=True)
def test_debug_bounds_check_uses_the_offset_range():
    x = qd.field(qd.i32, shape=4, offset=16)

    @qd.kernel
    def write_at(k: qd.i32):
        for _ in range(1):
            x[k] = 1

    write_at(16)
    write_at(19)
    qd.sync()
    np.testing.assert_array_equal(x.to_numpy(), [1, 0, 0, 1])
    for bad in (3, 20):
        with pytest.raises(qd.QuadrantsAssertionError, match=rf"index {bad} is outside "
                                                             r"\[16, 20\)"):
            write_at(bad)


@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_check_accepts_offset_indices():
    x = qd.field(qd.i32, shape=(3, 4), offset=(-1, 10))

    @qd.kernel
    def write_at(i: qd.i32, j: qd.i32):
        for _ in range(1):
            x[i, j] = 5

    write_at(-1, 10)
    write_at(1, 13)
    qd.sync()
    assert x[-1, 10] == 5 and x[1, 13] == 5
    with pytest.raises(qd.QuadrantsAssertionError, match="write_at"):
        write_at(2, 10)
        qd.sync()


@test_utils.test()
def test_offset_errors():
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="The dimensionality of shape and offset must be the same"):
        qd.field(qd.f32, shape=3, offset=(3, 4))
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="shape cannot be None when offset is set"):
        qd.field(qd.f32, shape=None, offset=(3, 4))
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="The dimensionality of shape and offset must be the same"):
        qd.Vector.field(3, qd.f32, shape=3, offset=(3, 4))
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="shape cannot be None when offset is set"):
        qd.Vector.field(3, qd.f32, shape=None, offset=(3,))
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="The dimensionality of shape and offset must be the same"):
        qd.Matrix.field(3, 3, qd.i32, shape=(32, 16, 8), offset=(32, 16))
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="shape cannot be None when offset is set"):
        qd.Matrix.field(3, 3, qd.i32, shape=None, offset=(32, 16))
    with pytest.raises(qd.QuadrantsTypeError, match="integers"):
        qd.field(qd.f32, shape=3, offset=1.5)
    with pytest.raises(qd.QuadrantsCompilationError, match="dimensionality"):
        qd.root.dense(qd.ij, 4).place(qd.field(qd.f32), offset=3)
    x = qd.field(qd.f32)
    qd.root.dense(qd.i, 4).place(x, offset=2)
    with pytest.raises(qd.QuadrantsCompilationError, match="primal"):
        qd.root.dense(qd.i, 4).place(x.grad, offset=7)


# ---- order ------------------------------------------------------------------------------

@test_utils.test()
def test_every_order_of_three_axes_gives_the_same_values():
    shape = (5, 3, 4)
    orders = ["".join(p) for p in itertools.permutations("ijk")]
    fields = [qd.field(qd.i32, shape=shape, order=o) for o in orders]

    @qd.kernel
    def fill(f: qd.template()):
        for i, j, k in f:
            f[i, j, k] = i * 100 + j * 10 + k

    expected = np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k, shape, dtype=int)
    for order, f in zip(orders, fields):
        fill(f)
        assert f.shape == shape
        np.testing.assert_array_equal(f.to_numpy(), expected)
        assert f[4, 2, 3] == 423
        layout = tuple(ord(c) - ord("i") for c in order)
        assert f.layout == (None if order == "ijk" else layout)


@test_utils.test()
def test_vector_field_orders_and_layouts_agree():
    fields = [qd.Vector.field(2, qd.i32, shape=(4, 3), order=order, layout=layout)
              for order in ("ij", "ji") for layout in (qd.Layout.AOS, qd.Layout.SOA)]

    @qd.kernel
    def fill():
        for i, j in fields[0]:
            for f in qd.static(fields):
                f[i, j] = [i, j]

    fill()
    expected = np.stack(np.meshgrid(np.arange(4), np.arange(3), indexing="ij"), axis=-1)
    for f in fields:
        np.testing.assert_array_equal(f.to_numpy(), expected)
        np.testing.assert_array_equal(f[3, 1], [3, 1])
    assert fields[2].layout == (1, 0) and fields[0].layout is None


@test_utils.test()
def test_order_and_offset_together_with_gradients():
    """loss = sum x[i, j] * (i - j) over x of shape (3, 5) from (1, -2), laid
    out column-major: dloss/dx[i, j] = i - j."""
    x = qd.field(qd.f32, shape=(3, 5), order="ji", offset=(1, -2), needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.fill(1.0)

    @qd.kernel
    def compute():
        for i, j in x:
            loss[None] += x[i, j] * (i - j)

    with qd.ad.Tape(loss=loss):
        compute()
    rows, cols = np.arange(1, 4)[:, None], np.arange(-2, 3)[None, :]
    np.testing.assert_allclose(x.grad.to_numpy(), (rows - cols).astype(np.float32))
    assert loss[None] == pytest.approx(float(np.sum(rows - cols)))
    assert x.grad[3, 2] == 1.0 and x.grad.layout == (1, 0)


@test_utils.test()
def test_matrix_and_struct_field_order():
    m = qd.Matrix.field(2, 2, qd.f32, shape=(3, 2), order="ji")

    @qd.dataclass
    class S:
        a: qd.f32

    s = S.field(shape=(2, 3), order="ji", layout=qd.Layout.SOA)

    @qd.kernel
    def fill():
        for i, j in m:
            m[i, j] = qd.Matrix([[i, j], [j, i]])
        for i, j in s:
            s[i, j].a = i * 10 + j

    fill()
    np.testing.assert_array_equal(m[2, 1], [[2, 1], [1, 2]])
    np.testing.assert_array_equal(s.a.to_numpy(), np.arange(2)[:, None] * 10 + np.arange(3))


@test_utils.test()
def test_order_errors():
    for make in (lambda **kw: qd.field(qd.f32, **kw),
                 lambda **kw: qd.Vector.field(3, qd.f32, **kw)):
        with pytest.raises(qd.QuadrantsCompilationError,
                           match="The dimensionality of shape and order must be the same"):
            make(shape=3, order="ij")
        with pytest.raises(qd.QuadrantsCompilationError,
                           match="shape cannot be None when order is set"):
            make(shape=None, order="i")
        with pytest.raises(qd.QuadrantsCompilationError,
                           match="The axes in order must be different"):
            make(shape=(3, 4, 3), order="iji")
        with pytest.raises(qd.QuadrantsCompilationError, match="Invalid axis"):
            make(shape=(3, 4, 3), order="ijl")
    with pytest.raises(qd.QuadrantsTypeError, match="order"):
        qd.field(qd.f32, shape=(3, 4), order=(1, 0))
    with pytest.raises(qd.QuadrantsTypeError, match="layout"):
        qd.Vector.field(3, qd.f32, shape=4, layout="columns")


@test_utils.test()
def test_levels_on_the_same_axis_make_a_blocked_layout():
    # dense(ij, (4, 3)).dense(ij, (8, 2)): x and y are 32 x 6, stored in
    # blocks of 8 x 2 cells; kernels, host access and struct-fors index them
    # as any 32 x 6 field.
    x, y = qd.field(qd.f32), qd.field(qd.i32)
    block = qd.root.dense(qd.ij, (4, 3))
    block.dense(qd.ij, (8, 2)).place(x, y)
    assert x.shape == (32, 6) and block.shape == (4, 3)
    assert x.snode.parent(2) == block

    @qd.kernel
    def fill():
        for i, j in x:
            x[i, j] = i * 100 + j
            y[i, j] = qd.rescale_index(x, block, [i, j])[0] * 10 + j // 2

    fill()
    rows, cols = np.meshgrid(np.arange(32), np.arange(6), indexing="ij")
    np.testing.assert_array_equal(x.to_numpy(), rows * 100 + cols)
    np.testing.assert_array_equal(y.to_numpy(), rows // 8 * 10 + cols // 2)
    assert x[17, 5] == 1705
    x[3, 4] = -1.0
    values = np.random.default_rng(3).random((32, 6)).astype(np.float32)
    assert x.to_numpy()[3, 4] == -1.0
    x.from_numpy(values)

    @qd.kernel
    def total() -> qd.f64:
        s = qd.f64(0.0)
        for i, j in qd.ndrange(32, 6):
            s += qd.f64(x[i, j])
        return s

    assert total() == pytest.approx(values.astype(np.float64).sum(), rel=1e-12)


@test_utils.test(require=qd.extension.adstack)
def test_blocked_layout_gradients_through_a_dynamic_loop():
    # d/dx of sum over cells of sin^k(x), k from a field, against the chain
    # rule in f64; f32 steps keep 1e-5 relative.
    x = qd.field(qd.f32, needs_grad=True)
    qd.root.dense(qd.i, 4).dense(qd.i, 16).place(x, x.grad)  # both blocked
    k = qd.field(qd.i32, shape=())
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def run():
        for i in x:
            v = x[i]
            for _ in range(k[None]):
                v = qd.sin(v)
            loss[None] += v

    start = np.linspace(0.1, 1.3, 64)
    x.from_numpy(start.astype(np.float32))
    k[None] = 5
    with qd.ad.Tape(loss=loss):
        run()
    v, grad = start.copy(), np.ones(64)
    for _ in range(5):
        grad *= np.cos(v)
        v = np.sin(v)
    np.testing.assert_allclose(x.grad.to_numpy(), grad, rtol=1e-5)
    assert loss[None] == pytest.approx(v.sum(), rel=1e-5)


# ---- dimensions are the axes the levels index ---------------------------------------

@test_utils.test()
def test_fields_take_the_dimensions_of_the_axes_their_levels_index():
    # As upstream: a field laid out on axis k alone is 1-D; on axes k and i
    # it is 2-D, indexed (i, k).
    x = qd.field(qd.i32, needs_grad=False)
    qd.root.dense(qd.k, 10).place(x)
    y = qd.field(qd.f32, needs_grad=True)
    qd.root.dense(qd.k, 4).dense(qd.i, 3).place(y)
    total = qd.field(qd.i32, shape=())
    assert x.shape == (10,) and y.shape == (3, 4) and y.grad.shape == (3, 4)
    # A launch needs the adjoint y asked for placed, as upstream checks.
    qd.root.lazy_grad()  # y.grad is laid out on y's axes

    @qd.kernel
    def fill():
        for i in x:
            x[i] = 2 * i
            total[None] += i
        for i, k in y:
            y[i, k] = 10.0 * i + k

    fill()
    assert x.to_numpy().tolist() == list(range(0, 20, 2)) and total[None] == 45
    assert y.to_numpy().tolist() == [[10.0 * i + k for k in range(4)] for i in range(3)]
    x[4] = 100
    assert x[4] == 100 and x.to_numpy()[4] == 100
    y.from_numpy(np.ones((3, 4), np.float32))
    assert y[2, 3] == 1.0
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def energy():
        for i, k in y:
            loss[None] += y[i, k] * y[i, k] * (i + 1)

    with qd.ad.Tape(loss=loss):
        energy()
    assert y.grad.to_numpy().tolist() == [[2.0 * (i + 1)] * 4 for i in range(3)]


@test_utils.test()
def test_members_of_a_vector_field_placed_one_by_one():
    v = qd.Vector.field(2, qd.i32)
    x, y = v.get_scalar_field(0), v.get_scalar_field(1)
    qd.root.dense(qd.i, 8).place(x)
    qd.root.dense(qd.i, 2).dense(qd.i, 4).place(y)  # another path, same shape

    @qd.kernel
    def fill():
        for i in range(8):
            for j in range(2):  # a run-time member index
                v[i][j] = i * 10 + j

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(8) * 10)
    np.testing.assert_array_equal(v.to_numpy()[:, 1], np.arange(8) * 10 + 1)
    m = qd.Matrix.field(2, 3, qd.f32, shape=4)
    assert m.get_scalar_field(1, 2).shape == (4,)
    with pytest.raises(IndexError, match=r"outside the \(2, 3\) elements"):
        m.get_scalar_field(2, 0)
    with pytest.raises(qd.QuadrantsTypeError, match=r"takes 2 int index"):
        m.get_scalar_field(1)


@test_utils.test(arch=qd.cpu)
def test_a_permuted_field_packs_its_axes_without_padding():
    # Nested dense levels pack like upstream's: a (11, 7) field stored
    # column-major has the bytes of the (7, 11) row-major one, strides
    # (1, 11) elements, no padding of the inner axis.
    pytest.importorskip("torch")
    import torch.utils.dlpack  # pylint: disable=import-outside-toplevel
    plain = qd.field(qd.f32, shape=(7, 11))
    rotated = qd.field(qd.f32, shape=(11, 7), order="ji")
    values = np.arange(77, dtype=np.float32).reshape(7, 11)
    plain.from_numpy(values)
    rotated.from_numpy(values.T)
    views = [torch.utils.dlpack.from_dlpack(f.to_dlpack()) for f in (plain, rotated)]
    assert views[0].stride() == (11, 1)
    assert views[1].stride() == (1, 11)
    raw = [np.ctypeslib.as_array(
        (ctypes.c_float * 77).from_address(v.data_ptr())) for v in views]
    np.testing.assert_array_equal(raw[0], raw[1])
    np.testing.assert_array_equal(raw[0], values.ravel())
