"""Fields, the SNode layout API, ndarrays, numpy interop and atomics."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@qd.kernel
def _fill_2d_with_index(arr: qd.types.ndarray()):
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            arr[i, j] = i * 100 + j


@qd.kernel
def _weighted_rows(src: qd.types.ndarray(qd.f32, 2), w: qd.types.ndarray(qd.f32, 1),
                   out: qd.types.ndarray(qd.f32, 1)):
    for i in range(src.shape[0]):
        s = 0.0
        for j in range(src.shape[1]):
            s += src[i, j] * w[j]
        out[i] = s


def _index_grid(shape):
    return np.arange(shape[0])[:, None] * 100 + np.arange(shape[1])[None, :]


# ---- fields: shapes, host access -----------------------------------------------------

@test_utils.test()
def test_0d_field_host_access_and_kernel():
    x = qd.field(qd.f32, shape=())
    assert x.shape == ()
    assert x.dtype == qd.f32
    assert x[None] == 0.0
    x[None] = 1.5

    @qd.kernel
    def triple():
        for _ in range(1):
            x[None] = x[None] * 3.0

    triple()
    assert x[None] == 4.5
    assert x.to_numpy().shape == ()
    assert float(x.to_numpy()) == 4.5


@test_utils.test()
def test_1d_field_host_read_write():
    x = qd.field(qd.i32, shape=7)
    assert x.shape == (7,)
    assert x.dtype == qd.i32
    for i in range(7):
        x[i] = i * i - 3
    assert [x[i] for i in range(7)] == [i * i - 3 for i in range(7)]
    np.testing.assert_array_equal(x.to_numpy(), np.arange(7) ** 2 - 3)
    assert x.to_numpy().dtype == np.int32


@test_utils.test()
def test_2d_field_host_read_write_and_kernel_sees_it():
    x = qd.field(qd.f64, shape=(3, 5))
    assert x.shape == (3, 5)
    assert x.dtype == qd.f64
    x[2, 4] = 0.1
    x[0, 1] = -7.25
    out = qd.field(qd.f64, shape=())

    @qd.kernel
    def total():
        for i, j in x:
            out[None] += x[i, j]

    total()
    assert out[None] == 0.1 + -7.25
    assert x[2, 4] == 0.1        # f64 keeps all bits through the host
    assert x[1, 1] == 0.0


@test_utils.test()
def test_field_to_numpy_from_numpy_round_trip():
    x = qd.field(qd.i64, shape=(4, 3))
    src = (np.arange(12, dtype=np.int64).reshape(4, 3) - 6) * (2 ** 35 + 1)
    x.from_numpy(src)

    @qd.kernel
    def negate():
        for i, j in x:
            x[i, j] = -x[i, j]

    negate()
    got = x.to_numpy()
    assert got.dtype == np.int64
    assert got.shape == (4, 3)
    np.testing.assert_array_equal(got, -src)


@test_utils.test()
def test_field_from_numpy_converts_dtype():
    x = qd.field(qd.f32, shape=4)
    x.from_numpy(np.array([1, 2, 3, 4], dtype=np.int64))
    np.testing.assert_array_equal(x.to_numpy(), np.array([1, 2, 3, 4], dtype=np.float32))


@test_utils.test()
def test_field_fill():
    x = qd.field(qd.f32, shape=(2, 3))
    x.fill(2.5)
    np.testing.assert_array_equal(x.to_numpy(), np.full((2, 3), 2.5, dtype=np.float32))
    y = qd.field(qd.i32, shape=())
    y.fill(-9)
    assert y[None] == -9


@pytest.mark.parametrize("layout", ["aos", "soa"])
@test_utils.test()
def test_matrix_fields_copy_every_component_in_one_pass(layout):
    """Vector and matrix fields move all their components at once: packed
    (AoS) by one copy, SoA by a strided loop; kernels see what the host
    wrote, and the host what kernels wrote, component by component."""
    layout = qd.Layout.SOA if layout == "soa" else qd.Layout.AOS
    m = qd.Matrix.field(2, 3, qd.f64, shape=(5, 7), layout=layout)
    v = qd.Vector.field(3, qd.i16, shape=40, layout=layout)
    mv = np.arange(5 * 7 * 6, dtype=np.float64).reshape(5, 7, 2, 3) - 50.5
    vv = (np.arange(40 * 3).reshape(40, 3) * 7 - 300).astype(np.int16)
    m.from_numpy(mv)
    v.from_numpy(vv.astype(np.int64))  # converted to the field's dtype

    @qd.kernel
    def bump():
        for i, j in m:
            for a, b in qd.static(qd.ndrange(2, 3)):
                m[i, j][a, b] += 1000.0 * a + 100.0 * b + 10.0 * i + j
        for i in v:
            v[i][2] = v[i][0] - v[i][1]

    bump()
    a, b, i, j = np.ix_(np.arange(5), np.arange(7), np.arange(2), np.arange(3))
    want = mv + 10.0 * a.reshape(5, 1, 1, 1) + b.reshape(1, 7, 1, 1) + \
        1000.0 * i.reshape(1, 1, 2, 1) + 100.0 * j.reshape(1, 1, 1, 3)
    np.testing.assert_array_equal(m.to_numpy(), want)
    vv[:, 2] = vv[:, 0] - vv[:, 1]
    got = v.to_numpy()
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, vv)
    m.fill(-2.0)
    np.testing.assert_array_equal(m.to_numpy(), np.full((5, 7, 2, 3), -2.0))
    assert m[4, 6][1, 2] == -2.0
    c = qd.Matrix.field(2, 3, qd.f64, shape=(5, 7), layout=qd.Layout.AOS)
    c.copy_from(m)
    np.testing.assert_array_equal(c.to_numpy(), m.to_numpy())


@test_utils.test()
def test_field_dtypes_round_trip_host_values():
    cases = [(qd.i8, -128), (qd.i16, -32768), (qd.u8, 255), (qd.u16, 65535),
             (qd.u32, 2 ** 32 - 1), (qd.i64, -(2 ** 62) - 3), (qd.u64, 2 ** 64 - 1),
             (qd.f32, 0.5), (qd.f64, 1.0 / 3.0)]
    for dtype, value in cases:
        f = qd.field(dtype, shape=2)
        f[1] = value
        assert f[1] == value, dtype
        assert f[0] == 0, dtype


# ---- the SNode layout API ------------------------------------------------------------

@test_utils.test()
def test_root_dense_i_place():
    x = qd.field(qd.i32)
    qd.root.dense(qd.i, 9).place(x)
    assert x.shape == (9,)

    @qd.kernel
    def fill():
        for i in x:
            x[i] = 3 * i

    fill()
    np.testing.assert_array_equal(x.to_numpy(), 3 * np.arange(9))


@test_utils.test()
def test_root_dense_ij_places_two_fields_sharing_layout():
    a = qd.field(qd.i32)
    b = qd.field(qd.f32)
    qd.root.dense(qd.ij, (3, 4)).place(a, b)
    assert a.shape == (3, 4)
    assert b.shape == (3, 4)
    assert b.dtype == qd.f32

    @qd.kernel
    def fill():
        for i, j in a:
            a[i, j] = i * 10 + j
            b[i, j] = a[i, j] * 0.5

    fill()
    expected = np.arange(3)[:, None] * 10 + np.arange(4)
    np.testing.assert_array_equal(a.to_numpy(), expected)
    np.testing.assert_array_equal(b.to_numpy(), expected.astype(np.float32) * 0.5)
    a[1, 2] = -1
    assert a[1, 2] == -1
    assert b[1, 2] == 6.0   # a neighbour in the same cell is untouched


@test_utils.test()
def test_root_place_0d():
    y = qd.field(qd.f64)
    z = qd.field(qd.i32)
    qd.root.place(y, z)
    assert y.shape == ()
    y[None] = 2.25
    z[None] = 4

    @qd.kernel
    def combine():
        for _ in range(1):
            y[None] = y[None] * qd.cast(z[None], qd.f64)

    combine()
    assert y[None] == 9.0
    assert z[None] == 4


@test_utils.test()
def test_root_nested_dense_levels():
    x = qd.field(qd.i32)
    qd.root.dense(qd.i, 4).dense(qd.j, 3).place(x)
    assert x.shape == (4, 3)

    @qd.kernel
    def fill():
        for i, j in x:
            x[i, j] = i * 3 + j

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(12).reshape(4, 3))


@test_utils.test()
def test_fields_are_independent():
    a = qd.field(qd.i32, shape=5)
    b = qd.field(qd.i32, shape=5)
    c = qd.field(qd.i32)
    qd.root.dense(qd.i, 5).place(c)

    @qd.kernel
    def fill():
        for i in range(5):
            a[i] = 1
            b[i] = 2
            c[i] = 3

    fill()
    np.testing.assert_array_equal(a.to_numpy(), [1] * 5)
    np.testing.assert_array_equal(b.to_numpy(), [2] * 5)
    np.testing.assert_array_equal(c.to_numpy(), [3] * 5)


# ---- ndarrays -------------------------------------------------------------------------

@test_utils.test()
def test_ndarray_host_methods():
    a = qd.ndarray(qd.f32, (3, 4))
    assert a.shape == (3, 4)
    assert a.dtype == qd.f32
    np.testing.assert_array_equal(a.to_numpy(), np.zeros((3, 4), dtype=np.float32))
    a[1, 2] = 7.5
    assert a[1, 2] == 7.5
    a.fill(-1.0)
    np.testing.assert_array_equal(a.to_numpy(), np.full((3, 4), -1.0, dtype=np.float32))
    src = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
    a.from_numpy(src)
    np.testing.assert_array_equal(a.to_numpy(), src)
    assert a[2, 3] == 11 / 8


@test_utils.test()
def test_ndarray_host_writes_bump_data_generation():
    a = qd.ndarray(qd.i32, 4)
    g0 = a.data_generation
    a[0] = 1
    g1 = a.data_generation
    a.fill(3)
    g2 = a.data_generation
    a.from_numpy(np.arange(4, dtype=np.int32))
    g3 = a.data_generation
    assert g0 < g1 < g2 < g3


@test_utils.test()
def test_qd_ndarray_passed_to_kernel_by_reference():
    a = qd.ndarray(qd.i32, (5, 6))
    _fill_2d_with_index(a)
    np.testing.assert_array_equal(a.to_numpy(), _index_grid((5, 6)))

    @qd.kernel
    def add_one(arr: qd.types.ndarray(qd.i32, 2)):
        for i in range(arr.shape[0]):
            for j in range(arr.shape[1]):
                arr[i, j] += 1

    add_one(a)
    add_one(a)
    np.testing.assert_array_equal(a.to_numpy(), _index_grid((5, 6)) + 2)
    a[0, 0] = 1000       # host writes are seen by the next launch
    add_one(a)
    assert a[0, 0] == 1001


@test_utils.test()
def test_numpy_array_is_copied_in_and_back():
    arr = np.zeros((3, 7), dtype=np.int32)
    _fill_2d_with_index(arr)
    np.testing.assert_array_equal(arr, _index_grid((3, 7)))


@test_utils.test()
def test_non_contiguous_numpy_slice_gets_writes_copied_back():
    base = np.full((4, 10), -1, dtype=np.int32)
    view = base[:, ::2]                   # every other column: not contiguous
    assert not view.flags.c_contiguous
    _fill_2d_with_index(view)
    expected = np.full((4, 10), -1)
    expected[:, ::2] = _index_grid((4, 5))
    np.testing.assert_array_equal(base, expected)


@test_utils.test()
def test_transposed_and_reversed_numpy_views():
    base = np.zeros((3, 5), dtype=np.int32)
    _fill_2d_with_index(base.T)           # Fortran-ordered view of shape (5, 3)
    np.testing.assert_array_equal(base, _index_grid((5, 3)).T)

    base2 = np.zeros((4, 4), dtype=np.int32)
    _fill_2d_with_index(base2[::-1, 1:3])
    expected = np.zeros((4, 4), dtype=np.int64)
    expected[::-1, 1:3] = _index_grid((4, 2))
    np.testing.assert_array_equal(base2, expected)


@test_utils.test()
def test_non_contiguous_input_is_read_correctly():
    @qd.kernel
    def col_sums(src: qd.types.ndarray(qd.f64, 2), out: qd.types.ndarray(qd.f64, 1)):
        for j in range(src.shape[1]):
            s: qd.f64 = 0.0
            for i in range(src.shape[0]):
                s += src[i, j]
            out[j] = s

    m = np.arange(60, dtype=np.float64).reshape(6, 10)
    view = m[1::2, ::3]
    out = np.zeros(view.shape[1])
    col_sums(view, out)
    np.testing.assert_array_equal(out, view.sum(axis=0))
    np.testing.assert_array_equal(m, np.arange(60, dtype=np.float64).reshape(6, 10))


@test_utils.test()
def test_ndarray_param_with_dtype_only_and_ndim_only():
    @qd.kernel
    def scale_dtype_only(a: qd.types.ndarray(dtype=qd.f32), k: qd.f32):
        for i in range(a.shape[0]):
            a[i] = a[i] * k

    @qd.kernel
    def scale_ndim_only(a: qd.types.ndarray(ndim=1)):
        for i in range(a.shape[0]):
            a[i] = a[i] * -3     # the literal takes a's element type

    x = np.arange(5, dtype=np.float32)
    scale_dtype_only(x, 2.0)
    np.testing.assert_array_equal(x, np.arange(5) * 2.0)

    y = np.arange(5, dtype=np.int64)
    scale_ndim_only(y)
    np.testing.assert_array_equal(y, np.arange(5) * -3)
    z = np.arange(5, dtype=np.float64) + 0.5    # another dtype: another specialization
    scale_ndim_only(z)
    np.testing.assert_array_equal(z, (np.arange(5) + 0.5) * -3)
    assert z.dtype == np.float64


@test_utils.test()
def test_unannotated_ndarray_param_specializes_on_dtype_and_ndim():
    @qd.kernel
    def total(a: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(a.shape[0]):
            out[0] += a[i]

    i_out = np.zeros(1, dtype=np.int64)
    total(np.arange(10, dtype=np.int64), i_out)
    assert i_out[0] == 45
    f_out = np.zeros(1, dtype=np.float64)
    total(np.full(8, 0.25), f_out)
    assert f_out[0] == 2.0
    nd = qd.ndarray(qd.i32, 6)
    nd.from_numpy(np.arange(6, dtype=np.int32))
    o = qd.ndarray(qd.i32, 1)
    total(nd, o)
    assert o[0] == 15


@test_utils.test()
def test_ndarray_annotation_mismatch_is_rejected():
    @qd.kernel
    def k(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            a[i] = 1.0

    with pytest.raises(TypeError):
        k(np.zeros(3, dtype=np.float64))
    with pytest.raises((TypeError, ValueError)):
        k(np.zeros((3, 2), dtype=np.float32))
    ok = np.zeros(3, dtype=np.float32)
    k(ok)     # still usable after the rejected calls
    np.testing.assert_array_equal(ok, [1, 1, 1])


@test_utils.test()
def test_3d_ndarray_indexing():
    @qd.kernel
    def fill(a: qd.types.ndarray(qd.i32, 3)):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                for k in range(a.shape[2]):
                    a[i, j, k] = i * 100 + j * 10 + k

    a = np.zeros((2, 3, 4), dtype=np.int32)
    fill(a)
    i, j, k = np.meshgrid(np.arange(2), np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(a, i * 100 + j * 10 + k)


# ---- atomics ------------------------------------------------------------------------

@test_utils.test()
def test_parallel_sum_into_i64_field_is_exact():
    total = qd.field(qd.i64, shape=())

    @qd.kernel
    def accumulate():
        for i in range(100000):
            total[None] += i

    accumulate()
    assert total[None] == 99999 * 100000 // 2   # 4999950000 > 2**31


@test_utils.test()
def test_augmented_sub_on_global_is_atomic():
    x = qd.field(qd.i32, shape=4)
    x.fill(1000000)

    @qd.kernel
    def run():
        for i in range(40000):
            x[i % 4] -= 3

    run()
    np.testing.assert_array_equal(x.to_numpy(), [1000000 - 3 * 10000] * 4)


@test_utils.test()
def test_float_atomic_add_of_integers_is_exact():
    s = qd.field(qd.f32, shape=())
    d = qd.field(qd.f64, shape=())

    @qd.kernel
    def run():
        for i in range(50000):
            s[None] += 1.0
            d[None] += 0.5

    run()
    assert s[None] == 50000.0
    assert d[None] == 25000.0


@test_utils.test()
def test_bitwise_atomics_on_floats_are_type_errors_naming_the_target():
    f = qd.field(qd.f32, shape=4)

    @qd.kernel
    def on_field():
        for i in f:
            qd.atomic_or(f[i], 1)

    @qd.kernel
    def on_local():
        for i in f:
            acc = 0.5
            qd.atomic_xor(acc, 2)
            f[i] = acc

    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"(?s)test_memory.py:\d+.*atomic_or\(\) is a bitwise update and needs an "
                             r"integer target; got an element of a f32 field"):
        on_field()
    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"atomic_xor\(\) .* got the f32 variable 'acc'"):
        on_local()

    @qd.kernel
    def on_a_value():
        for i in f:
            qd.atomic_and(f[i] * 2.0, 1)

    with pytest.raises(qd.QuadrantsTypeError, match="cannot update a read-only value"):
        on_a_value()


@test_utils.test()
def test_atomic_add_returns_old_value_unique_slots():
    n = 5000
    counter = qd.field(qd.i32, shape=())
    slots = qd.field(qd.i32, shape=n)
    slots.fill(-1)

    @qd.kernel
    def claim():
        for i in range(n):
            old = qd.atomic_add(counter[None], 1)
            slots[old] = i

    claim()
    assert counter[None] == n
    assert sorted(slots.to_numpy().tolist()) == list(range(n))


@test_utils.test()
def test_atomic_sub_returns_old_value():
    x = qd.field(qd.i32, shape=())
    olds = qd.field(qd.i32, shape=100)
    x[None] = 1000

    @qd.kernel
    def run():
        for i in range(100):
            olds[i] = qd.atomic_sub(x[None], 2)

    run()
    assert x[None] == 800
    assert sorted(olds.to_numpy().tolist()) == list(range(802, 1001, 2))


@test_utils.test()
def test_atomic_min_max_on_field_reduce_and_return_old():
    rng = np.random.default_rng(7)
    values = rng.integers(-10 ** 6, 10 ** 6, size=20000).astype(np.int32)
    src = qd.field(qd.i32, shape=len(values))
    src.from_numpy(values)
    lo = qd.field(qd.i32, shape=())
    hi = qd.field(qd.i32, shape=())
    lo[None] = 2 ** 31 - 1
    hi[None] = -(2 ** 31)

    @qd.kernel
    def reduce():
        for i in src:
            qd.atomic_min(lo[None], src[i])
            qd.atomic_max(hi[None], src[i])

    reduce()
    assert lo[None] == values.min()
    assert hi[None] == values.max()

    # Serial sequence: the returned value is the one before each update.
    x = qd.field(qd.f32, shape=())
    seen = qd.field(qd.f32, shape=(4, 2))
    x[None] = 5.0

    @qd.kernel
    def sequence():
        for _ in range(1):
            seen[0, 0] = qd.atomic_min(x[None], 7.0)    # no change
            seen[0, 1] = x[None]
            seen[1, 0] = qd.atomic_min(x[None], -2.5)
            seen[1, 1] = x[None]
            seen[2, 0] = qd.atomic_max(x[None], -3.0)   # no change
            seen[2, 1] = x[None]
            seen[3, 0] = qd.atomic_max(x[None], 9.0)
            seen[3, 1] = x[None]

    sequence()
    np.testing.assert_array_equal(seen.to_numpy(),
                                  [[5.0, 5.0], [5.0, -2.5], [-2.5, -2.5], [-2.5, 9.0]])


@test_utils.test()
def test_atomics_on_ndarrays():
    @qd.kernel
    def histogram(data: qd.types.ndarray(qd.i32, 1), bins: qd.types.ndarray(qd.i32, 1),
                  stats: qd.types.ndarray(qd.f64, 1)):
        for i in range(data.shape[0]):
            qd.atomic_add(bins[data[i] % bins.shape[0]], 1)
            qd.atomic_sub(stats[0], 1.0)
            qd.atomic_min(stats[1], qd.cast(data[i], qd.f64))
            qd.atomic_max(stats[2], qd.cast(data[i], qd.f64))

    rng = np.random.default_rng(11)
    data = rng.integers(0, 1000, size=30000).astype(np.int32)
    bins = np.zeros(7, dtype=np.int32)
    stats = np.array([0.0, 1e9, -1e9])
    histogram(data, bins, stats)
    np.testing.assert_array_equal(bins, np.bincount(data % 7, minlength=7))
    np.testing.assert_array_equal(stats, [-30000.0, data.min(), data.max()])

    nd_bins = qd.ndarray(qd.i32, 7)
    nd_stats = qd.ndarray(qd.f64, 3)
    nd_stats.from_numpy(np.array([0.0, 1e9, -1e9]))
    histogram(data, nd_bins, nd_stats)
    np.testing.assert_array_equal(nd_bins.to_numpy(), np.bincount(data % 7, minlength=7))
    np.testing.assert_array_equal(nd_stats.to_numpy(), [-30000.0, data.min(), data.max()])


@test_utils.test()
def test_atomic_add_on_ndarray_returns_old_value():
    @qd.kernel
    def claim(counter: qd.types.ndarray(qd.i64, 1), slots: qd.types.ndarray(qd.i32, 1)):
        for i in range(slots.shape[0]):
            old = qd.atomic_add(counter[0], 1)
            slots[old] = i

    counter = np.zeros(1, dtype=np.int64)
    slots = np.full(3000, -1, dtype=np.int32)
    claim(counter, slots)
    assert counter[0] == 3000
    assert sorted(slots.tolist()) == list(range(3000))


@test_utils.test()
def test_histogram_via_augmented_assignment_on_field():
    data = np.random.default_rng(5).integers(0, 16, size=50000).astype(np.int32)
    src = qd.field(qd.i32, shape=len(data))
    bins = qd.field(qd.i32, shape=16)
    src.from_numpy(data)

    @qd.kernel
    def hist():
        for i in src:
            bins[src[i]] += 1

    hist()
    np.testing.assert_array_equal(bins.to_numpy(), np.bincount(data, minlength=16))


@test_utils.test()
def test_parallel_2d_reduction_into_field_row_sums():
    m = np.random.default_rng(9).integers(-100, 100, size=(64, 300)).astype(np.int32)
    src = qd.field(qd.i32, shape=m.shape)
    rows = qd.field(qd.i64, shape=64)
    src.from_numpy(m)

    @qd.kernel
    def row_sums():
        for i, j in src:
            rows[i] += src[i, j]

    row_sums()
    np.testing.assert_array_equal(rows.to_numpy(), m.sum(axis=1))


@test_utils.test()
def test_broadcast_numpy_input_is_read_correctly():
    src = np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))   # read-only, stride 0
    w = np.array([1.0, 0.5, 0.25, 2.0], dtype=np.float32)
    out = np.zeros(3, dtype=np.float32)
    _weighted_rows(src, w, out)
    np.testing.assert_array_equal(out, src @ w)


@test_utils.test()
def test_read_only_contiguous_numpy_input():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.array([1.0, 0.5, 0.25, 2.0], dtype=np.float32)
    w.flags.writeable = False
    out = np.zeros(3, dtype=np.float32)
    _weighted_rows(src, w, out)
    np.testing.assert_array_equal(out, src @ w)
    np.testing.assert_array_equal(w, [1.0, 0.5, 0.25, 2.0])


@test_utils.test()
def test_numpy_scalars_as_scalar_arguments():
    x = qd.field(qd.f64, shape=3)

    @qd.kernel
    def put(n: qd.i32, v: qd.f64):
        for i in range(n):
            x[i] = v + i

    put(np.int64(2), np.float32(0.5))
    np.testing.assert_array_equal(x.to_numpy(), [0.5, 1.5, 0.0])


@test_utils.test()
def test_0d_ndarray_and_empty_ndarray():
    @qd.kernel
    def double(s: qd.types.ndarray(qd.f32, 0)):
        for _ in range(1):
            s[None] = s[None] * 2.0

    a = qd.ndarray(qd.f32, ())
    assert a.shape == ()
    a[None] = 2.5
    double(a)
    assert a[None] == 5.0

    @qd.kernel
    def ones(arr: qd.types.ndarray(qd.f32, 1)):
        for i in range(arr.shape[0]):
            arr[i] = 1.0

    ones(np.zeros(0, dtype=np.float32))    # nothing to do, nothing to fail
    z = np.zeros(3, dtype=np.float32)
    ones(arr=z)                            # keyword argument
    np.testing.assert_array_equal(z, [1, 1, 1])
