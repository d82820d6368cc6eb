"""Vector/matrix fields and ndarrays: placement, host access round trips,
kernel parameters, augmented assignment and atomics on elements, and the
shape errors."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_vector_field_host_round_trip():
    x = qd.Vector.field(3, qd.f32, shape=(4, 5))
    assert x.shape == (4, 5)
    assert x.to_numpy().shape == (4, 5, 3)
    data = np.random.default_rng(0).uniform(-1, 1, (4, 5, 3)).astype(np.float32)
    x.from_numpy(data)
    np.testing.assert_array_equal(x.to_numpy(), data)
    np.testing.assert_array_equal(x[2, 3], data[2, 3])
    assert x[2, 3].shape == (3,)
    assert x[2, 3].y == data[2, 3, 1]
    x[1, 1] = [7, 8, 9]
    np.testing.assert_array_equal(x[1, 1], [7, 8, 9])
    x.fill(0.5)
    assert np.all(x.to_numpy() == 0.5)
    x.fill([1, 2, 3])
    np.testing.assert_array_equal(x.to_numpy()[3, 4], [1, 2, 3])


@test_utils.test()
def test_matrix_field_host_round_trip():
    m = qd.Matrix.field(2, 3, qd.f32, shape=6)
    assert m.to_numpy().shape == (6, 2, 3)
    data = np.arange(36, dtype=np.float32).reshape(6, 2, 3)
    m.from_numpy(data)
    np.testing.assert_array_equal(m.to_numpy(), data)
    np.testing.assert_array_equal(m[4], data[4])
    m[0] = [[1, 2, 3], [4, 5, 6]]
    np.testing.assert_array_equal(m.to_numpy()[0], [[1, 2, 3], [4, 5, 6]])
    scalar0d = qd.Matrix.field(2, 2, qd.i32, shape=())
    scalar0d[None] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(scalar0d.to_numpy(), [[1, 2], [3, 4]])


@test_utils.test()
def test_from_numpy_wrong_shape():
    x = qd.Vector.field(3, qd.f32, shape=4)
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(4, 2\)"):
        x.from_numpy(np.zeros((4, 2), np.float32))
    m = qd.Matrix.field(2, 2, qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsTypeError, match=r"\(4, 2, 2\).*\(4, 4\)"):
        m.from_numpy(np.zeros((4, 4), np.float32))
    a = qd.ndarray(qd.math.vec3, 4)
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(4,\)"):
        a.from_numpy(np.zeros(4, np.float32))
    with pytest.raises(ValueError):
        x[0] = [1, 2]


@test_utils.test()
def test_placement_through_root():
    x = qd.Vector.field(2, qd.f32)
    m = qd.Matrix.field(2, 2, qd.f32)
    s = qd.field(qd.f32)
    qd.root.dense(qd.i, 8).place(x, m, s)
    qd.root.dense(qd.i, 8).place(x.grad)

    @qd.kernel
    def fill():
        for i in x:
            x[i] = qd.Vector([i, 2 * i])
            m[i] = x[i].outer_product(x[i])
            s[i] = m[i].trace()

    fill()
    xs = np.stack([np.arange(8), 2 * np.arange(8)], -1).astype(np.float32)
    np.testing.assert_array_equal(x.to_numpy(), xs)
    np.testing.assert_array_equal(m.to_numpy(), np.einsum("ni,nj->nij", xs, xs))
    np.testing.assert_array_equal(s.to_numpy(), (xs ** 2).sum(-1))
    assert x.grad.to_numpy().shape == (8, 2)


@test_utils.test()
def test_ndarray_of_vectors_round_trip_and_kernel():
    a = qd.ndarray(qd.math.vec3, (2, 3))
    assert a.shape == (2, 3)
    data = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    a.from_numpy(data)
    np.testing.assert_array_equal(a.to_numpy(), data)
    np.testing.assert_array_equal(a[1, 2], data[1, 2])
    a[0, 0] = [9, 9, 9]
    m = qd.Matrix.ndarray(2, 2, qd.f32, 3)
    assert m.to_numpy().shape == (3, 2, 2)

    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.math.vec3, ndim=2),
          m: qd.types.ndarray(dtype=qd.math.mat2, ndim=1)):
        for i, j in a:
            a[i, j] = a[i, j].zyx + qd.Vector([a.shape[0], a.shape[1], 0.0])
        for i in m:
            m[i] = qd.Matrix([[i, 1.0], [2.0, i * i]])

    k(a, m)
    expect = data.copy()
    expect[0, 0] = 9
    expect = expect[..., ::-1] + [2, 3, 0]
    np.testing.assert_array_equal(a.to_numpy(), expect)
    np.testing.assert_array_equal(m.to_numpy()[2], [[2, 1], [2, 4]])
    # numpy arrays work for vector ndarray parameters: trailing axes are the element
    arr = np.zeros((2, 2, 3), np.float32)
    k(arr, np.zeros((3, 2, 2), np.float32))
    np.testing.assert_array_equal(arr[1, 1], [2, 2, 0])
    with pytest.raises(ValueError, match="trailing shape"):
        k(np.zeros((2, 2, 2), np.float32), np.zeros((3, 2, 2), np.float32))


@test_utils.test()
def test_vector_kernel_arguments_and_func_returns():
    out = qd.Vector.field(3, qd.f32, shape=())
    total = qd.field(qd.f32, shape=())

    @qd.func
    def rotate(v: qd.math.vec3, m: qd.math.mat3) -> qd.math.vec3:
        return m @ v

    @qd.func
    def split(v):
        return v.x, v.yz

    @qd.kernel
    def k(v: qd.math.vec3, m: qd.math.mat3, s: qd.f32):
        w = rotate(v, m) * s
        a, bc = split(w)
        out[None] = w
        total[None] = a + bc.sum()

    m = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 2]], np.float32)
    k([1, 2, 3], m, 2.0)
    np.testing.assert_allclose(out.to_numpy(), (m @ [1, 2, 3]) * 2)
    assert total[None] == pytest.approx(((m @ [1, 2, 3]) * 2).sum())
    k(qd.Vector([1, 0, 0]), qd.Matrix(m), 1.0)
    np.testing.assert_allclose(out.to_numpy(), m[:, 0])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        k([1, 2], m, 1.0)


@test_utils.test()
def test_locals_static_loops_and_dynamic_index():
    out = qd.Vector.field(4, qd.i32, shape=3)

    @qd.kernel
    def k():
        for i in range(3):
            v = qd.Vector([0, 0, 0, 0])
            for c in qd.static(range(4)):
                v[c] = c * 10 + i
            w = v
            w[0] = -1                 # w is a copy: v keeps its value
            j = (i + 1) % 4
            v[j] += 100               # a run-time index
            out[i] = v + w[j] * 0
            out[i][3] += v[j] // 100  # augmented assignment on an element
        for _ in range(1):
            z = qd.Vector([1, 2, 3, 4])
            z.fill(7)
            w = z * 0
            w = 5                     # a scalar is broadcast to every component
            out[2][0] += z.sum() - w.sum()

    k()
    exp = np.array([[c * 10 + i for c in range(4)] for i in range(3)])
    for i in range(3):
        exp[i, (i + 1) % 4] += 100
        exp[i, 3] += 1
    exp[2, 0] += 28 - 20
    np.testing.assert_array_equal(out.to_numpy(), exp)


@test_utils.test()
def test_atomics_on_vector_elements():
    acc = qd.Vector.field(2, qd.f32, shape=2)
    hits = qd.Vector.field(3, qd.i32, shape=())

    @qd.kernel
    def k():
        for i in range(100):
            acc[i % 2] += qd.Vector([1.0, i])
            qd.atomic_add(hits[None], qd.Vector([1, 2, 3]))
            qd.atomic_max(hits[None][2], i)
            acc[i % 2].y -= 0.5

    k()
    np.testing.assert_allclose(acc.to_numpy(), [[50, sum(range(0, 100, 2)) - 25],
                                                [50, sum(range(1, 100, 2)) - 25]])
    np.testing.assert_array_equal(hits.to_numpy(), [100, 200, 300])


@test_utils.test()
def test_grouped_and_struct_for_over_vector_field():
    x = qd.Vector.field(2, qd.i32, shape=(3, 4))

    @qd.kernel
    def k():
        for I in qd.grouped(x):
            x[I] = I * 2
        for i, j in x:
            x[i, j].y += 1

    k()
    ii, jj = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(x.to_numpy(), np.stack([2 * ii, 2 * jj + 1], -1))


@test_utils.test()
def test_python_scope_values():
    v = qd.Vector([1.0, 2.0, 3.0])
    m = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert (v + 1).to_list() == [2.0, 3.0, 4.0]
    assert v.dot(v) == 14.0
    np.testing.assert_allclose((m @ m.inverse()).to_numpy(), np.eye(2), atol=1e-12)
    assert m.determinant() == pytest.approx(-2.0)
    assert v.xy.to_list() == [1.0, 2.0]
    assert qd.math.vec3(1).to_list() == [1.0, 1.0, 1.0]
    assert qd.math.ivec2(3, 4).to_list() == [3, 4]
    assert np.asarray(m).shape == (2, 2)


@test_utils.test()
def test_dynamic_component_atomics_swaps_and_printing(capfd):
    x = qd.Vector.field(3, qd.i32, shape=())
    y = qd.Vector.field(2, qd.i32, shape=2)

    @qd.kernel
    def k():
        for i in range(300):
            x[None][i % 3] += 1           # run-time component: atomic
        for _ in range(1):
            a = qd.Vector([1, 2])
            b = qd.Vector([3, 4])
            a, b = b, a                   # both read before either is written
            y[0], y[1] = a, b
            print("a =", a, qd.Matrix([[1, 2], [3, 4]]))

    k()
    qd.sync()
    np.testing.assert_array_equal(x.to_numpy(), [100, 100, 100])
    np.testing.assert_array_equal(y.to_numpy(), [[3, 4], [1, 2]])
    assert "a = [3, 4] [[1, 2], [3, 4]]" in capfd.readouterr().out


@test_utils.test()
def test_field_of_vector_and_struct_dtypes_and_host_write_through():
    vec3f = qd.types.vector(3, qd.f32)
    pos = qd.field(vec3f, shape=4)
    rot = qd.field(qd.types.matrix(2, 2, qd.f32), shape=4)
    S = qd.types.struct(a=qd.i32, v=vec3f)
    s = qd.field(S, shape=2)
    assert pos.to_numpy().shape == (4, 3) and rot.to_numpy().shape == (4, 2, 2)

    @qd.kernel
    def init(p: qd.Template, r: qd.template()):
        for i in range(4):
            p[i] = qd.Vector([0.0, 0.0, i])
            r[i] = qd.Matrix.diag(2, 2.0)

    init(pos, rot)
    np.testing.assert_array_equal(rot.to_numpy()[3], [[2, 0], [0, 2]])
    element = pos[2]
    element[0] = 7.0          # writes through to the field, as upstream's proxies do
    element.y = 8.0
    np.testing.assert_array_equal(pos.to_numpy()[2], [7, 8, 2])
    s[1].a = 5
    s[1].v[2] = 9.0
    assert s.to_numpy()["a"].tolist() == [0, 5]
    assert s.to_numpy()["v"][1].tolist() == [0, 0, 9]


@test_utils.test(arch=qd.cpu)
def test_host_elements_have_upstreams_vector_and_matrix_math():
    v = qd.Vector.field(3, qd.f32, ())
    v[None] = [3, 4, 0]
    e = v[None]
    assert e.norm() == 5.0 and e.norm_sqr() == 25.0 and e.norm_inv() == 0.2
    np.testing.assert_allclose(e.normalized(), [0.6, 0.8, 0.0], rtol=1e-7)
    np.testing.assert_array_equal(e.cross([0, 0, 1]), [4, -3, 0])
    assert e.outer_product([1, 2, 3]).shape == (3, 3)
    m = qd.Matrix.field(2, 2, qd.f64, ())
    m[None] = [[1, 2], [3, 4]]
    assert m[None].determinant() == pytest.approx(-2.0)
    np.testing.assert_allclose(m[None].inverse() @ np.array([[1, 2], [3, 4]]), np.eye(2),
                               atol=1e-12)


@test_utils.test()
def test_a_one_by_one_matrix_field_round_trips_through_numpy():
    m = qd.Matrix.field(1, 1, qd.f32, shape=(3,))
    m.from_numpy(np.array([[[1.5]], [[2.5]], [[-4.0]]], dtype=np.float32))
    np.testing.assert_array_equal(m.to_numpy()[:, 0, 0], [1.5, 2.5, -4.0])
    scalar = qd.Matrix.field(1, 1, qd.f32, shape=())

    @qd.kernel
    def invert():
        scalar[None] = qd.Matrix([[4.0]]).inverse()

    invert()
    assert scalar.to_numpy()[0, 0] == 0.25
