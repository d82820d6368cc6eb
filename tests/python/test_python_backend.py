"""qd.init(arch=qd.python): kernels and qd.funcs run as plain Python on torch
tensors, with the same results as a compiled backend; fields and ndarrays
report their batch shape; the directives that only steer compilation do
nothing; what needs a compiled program says so."""
import inspect
import math

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def python_session():
    qd.init(arch=qd.python)
    yield
    qd.reset()


def test_kernel_body_is_the_python_function_itself():
    seen = []

    @qd.kernel
    def record(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        seen.append(inspect.currentframe().f_code.co_name)
        for i in range(a.shape[0]):
            a[i] = i * 0.5

    a = qd.ndarray(qd.f32, shape=(4,))
    record(a)
    # A debugger stepping into the launch lands in the user's own frame.
    assert seen == ["record"]
    np.testing.assert_array_equal(a.to_numpy(), [0.0, 0.5, 1.0, 1.5])


def test_same_results_as_the_compiled_cpu_backend():
    def build():
        @qd.func
        def smooth(x, y):
            return qd.sqrt(x * x + y * y) + qd.sin(x) * qd.exp(-y)

        @qd.kernel
        def run(src: qd.types.ndarray(dtype=qd.f32, ndim=2),
                dst: qd.types.ndarray(dtype=qd.f32, ndim=1)):
            for i in range(src.shape[0]):
                acc = 0.0
                for j in range(src.shape[1]):
                    acc += smooth(src[i, j], float(j))
                dst[i] = acc
        return run

    rng = np.random.default_rng(3)
    data = rng.standard_normal((6, 5)).astype(np.float32)
    results = []
    for arch in (qd.python, qd.cpu):
        qd.init(arch=arch)
        run = build()
        src, dst = qd.ndarray(qd.f32, shape=(6, 5)), qd.ndarray(qd.f32, shape=(6,))
        src.from_numpy(data)
        run(src, dst)
        results.append(dst.to_numpy())
    # Both evaluate in f32; libm and torch may differ in the last ulps.
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,update", [
    (qd.atomic_add, lambda x, y: x + y), (qd.atomic_sub, lambda x, y: x - y),
    (qd.atomic_mul, lambda x, y: x * y), (qd.atomic_min, min), (qd.atomic_max, max),
    (qd.atomic_and, lambda x, y: x & y), (qd.atomic_or, lambda x, y: x | y),
    (qd.atomic_xor, lambda x, y: x ^ y)])
def test_atomics_update_in_place_and_return_the_old_value(op, update):
    @qd.kernel
    def apply(a: qd.types.ndarray(dtype=qd.i32, ndim=1), old: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for i in range(a.shape[0]):
            old[i] = op(a[i], 6)

    a, old = qd.ndarray(qd.i32, shape=(9,)), qd.ndarray(qd.i32, shape=(9,))
    for i in range(9):
        a[i] = i - 3
    apply(a, old)
    for i in range(9):
        assert a[i] == update(i - 3, 6)
        assert old[i] == i - 3


def test_atomic_add_counts_into_one_element():
    @qd.kernel
    def histogram(values: qd.types.ndarray(dtype=qd.i32, ndim=1), bins: qd.template()):
        for i in range(values.shape[0]):
            qd.atomic_add(bins[values[i] % 3], 1)

    values = qd.ndarray(qd.i32, shape=(10,))
    values.from_numpy(np.arange(10, dtype=np.int32))
    bins = qd.field(qd.i32, shape=(3,))
    histogram(values, bins)
    assert bins.to_numpy().tolist() == [4, 3, 3]


def test_atomic_on_a_local_number_is_refused():
    @qd.kernel
    def bad() -> qd.i32:
        x = 1
        qd.atomic_add(x, 1)
        return x

    with pytest.raises(QuadrantsTypeError, match="field or ndarray element"):
        bad()


def test_batch_shape_and_whole_size_of_fields_and_ndarrays():
    f = qd.field(qd.math.vec3, shape=(10, 4))
    assert f.shape == (10, 4) and f.size() == (10, 4, 3)
    m = qd.Matrix.ndarray(2, 3, qd.f32, shape=(5,))
    assert m.shape == (5,) and m.size() == (5, 2, 3)
    s = qd.field(qd.f64, shape=None)
    assert s.shape == () and s.size() == ()
    assert f.dtype == torch.float32 and s.dtype == torch.float64
    assert qd.ndarray(qd.u8, shape=3).dtype == torch.uint8


def test_vectors_matrices_and_grouped_indices():
    @qd.kernel
    def fill(pos: qd.template(), mats: qd.template()):
        for I in qd.grouped(pos):
            v = qd.Vector([I[0], I[1], I[0] * I[1]])
            pos[I] = v * 2
        for i in range(mats.shape[0]):
            mats[i] = qd.Matrix([[i, 1], [0, i]]) @ qd.Matrix([[1, 0], [1, 1]])

    pos = qd.Vector.field(3, qd.f32, shape=(3, 2))
    mats = qd.Matrix.field(2, 2, qd.i32, shape=(4,))
    fill(pos, mats)
    for i in range(3):
        for j in range(2):
            assert pos[i, j].tolist() == [2 * i, 2 * j, 2 * i * j]
    assert mats[3].tolist() == [[4, 1], [3, 3]]


def test_ndrange_static_cast_and_dtype_calls():
    @qd.kernel
    def run(flag: qd.template(), out: qd.types.ndarray(dtype=qd.i32, ndim=1),
            x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        k = 0
        for i, j in qd.ndrange((1, 3), 2):
            out[k] = i * 10 + j if qd.static(flag) else -1
            k += 1
        out[4] = qd.cast(x[0], qd.i32)
        out[5] = qd.i32(x[1])
        out[6] = qd.math.isnan(x[2])

    out, x = qd.ndarray(qd.i32, shape=(7,)), qd.ndarray(qd.f32, shape=(3,))
    x[0], x[1], x[2] = -2.75, 3.5, math.nan
    run(True, out, x)
    assert out.to_numpy().tolist() == [10, 11, 20, 21, -2, 3, 1]
    run(False, out, x)
    assert out.to_numpy().tolist()[:4] == [-1, -1, -1, -1]


def test_struct_fields_keep_one_tensor_per_member():
    particle = qd.types.struct(pos=qd.math.vec2, mass=qd.f32)
    ps = particle.field(shape=(4,))

    @qd.kernel
    def init(ps: qd.template()):
        for i in range(4):
            ps[i].pos = qd.Vector([i, -i])
            ps[i].mass = 0.5 * i

    init(ps)
    assert ps.field_dict["pos"].size() == (4, 2)
    assert ps.pos[3].tolist() == [3.0, -3.0]
    assert ps[2].mass == 1.0


def test_directives_are_no_ops_and_funcs_run_from_python():
    @qd.func
    def bump(a: qd.types.ndarray[qd.i32, 1]):
        qd.loop_config(serialize=True, block_dim=64)
        for i in range(a.shape[0]):
            a[i] += 1

    a = qd.ndarray(qd.i32, shape=(3,))
    bump(a)
    qd.sync()
    assert a.to_numpy().tolist() == [1, 1, 1]


def test_what_needs_a_compiled_program_says_so():
    with pytest.raises(QuadrantsRuntimeError, match="qd.python"):
        qd.root.dense(qd.i, 4)


def test_a_compiled_session_after_a_python_one_compiles_again():
    qd.init(arch=qd.cpu)
    assert not runtime.state.interpreted
    v = qd.field(qd.i32, shape=(2,))

    @qd.kernel
    def set_one():
        v[1] = 7

    set_one()
    assert v.to_numpy().tolist() == [0, 7]
