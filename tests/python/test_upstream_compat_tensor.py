"""Upstream's tensor API: qd.Backend, qd.tensor / qd.Vector.tensor /
qd.Matrix.tensor, the qd.Tensor wrapper (host surface, gradients, pickling,
qd.wrap), qd.Tensor kernel parameters, and fill / copy_from on fields and
ndarrays. Each scenario runs on both backends where it applies."""
import copy
import dataclasses
import pickle
from enum import IntEnum

import numpy as np
import pytest

import quadrants as qd

from tests import test_utils

BACKENDS = [qd.Backend.FIELD, qd.Backend.NDARRAY]
IDS = ["field", "ndarray"]


# ---- qd.Backend -------------------------------------------------------------------------

def test_backend_is_an_int_enum_with_two_members():
    assert issubclass(qd.Backend, IntEnum)
    assert list(qd.Backend) == [qd.Backend.FIELD, qd.Backend.NDARRAY]
    assert (int(qd.Backend.FIELD), int(qd.Backend.NDARRAY)) == (0, 1)
    assert qd.Backend["NDARRAY"] is qd.Backend.NDARRAY
    assert qd.Backend(0) is qd.Backend.FIELD
    assert qd.Backend.FIELD < qd.Backend.NDARRAY
    with pytest.raises(ValueError):
        qd.Backend(5)


# ---- qd.tensor ----------------------------------------------------------------------------

@test_utils.test()
def test_default_backend_is_ndarray():
    t = qd.tensor(qd.f32, shape=(2, 3))
    assert isinstance(t, qd.Tensor)
    assert isinstance(t._unwrap(), qd.Ndarray)
    assert isinstance(t._unwrap(), qd.ScalarNdarray)
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == qd.f32


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_backend_picks_the_impl(backend):
    t = qd.tensor(qd.i32, shape=6, backend=backend)
    impl = qd.ScalarField if backend is qd.Backend.FIELD else qd.ScalarNdarray
    assert isinstance(t._unwrap(), impl)
    assert t.shape == (6,) and t.dtype == qd.i32
    assert t._unwrap() is qd.wrap(t._unwrap())._unwrap()


@test_utils.test()
def test_backend_given_as_int():
    assert isinstance(qd.tensor(qd.f32, (2,), backend=0)._unwrap(), qd.Field)
    assert isinstance(qd.tensor(qd.f32, (2,), backend=1)._unwrap(), qd.Ndarray)


@test_utils.test()
def test_factory_argument_errors():
    for bad in (7, "field", None):
        with pytest.raises(ValueError, match="backend="):
            qd.tensor(qd.f32, (3,), backend=bad)
    with pytest.raises(TypeError, match="unexpected keyword"):
        qd.tensor(qd.f32, (3, 2), offset=(1, 1))
    with pytest.raises(TypeError, match="unexpected keyword"):
        qd.tensor(qd.f32, (3,), bogus=1)
    with pytest.raises(TypeError, match="layout="):
        qd.tensor(qd.f32, (3, 2), order="ji")
    with pytest.raises(ValueError, match="entries"):
        qd.tensor(qd.f32, (3, 2), layout=(0, 1, 2))
    with pytest.raises(ValueError, match="permutation"):
        qd.tensor(qd.f32, (3, 2), layout=(1, 1))
    with pytest.raises(TypeError, match="layout="):
        qd.tensor(qd.types.vector(3, qd.f32), (4,), layout=(0,))
    with pytest.raises(TypeError, match="qd.wrap"):
        qd.tensor(qd.ndarray(qd.f32, (2,)), (2,))
    with pytest.raises(TypeError, match="not supported with compound"):
        qd.tensor(qd.types.matrix(2, 2, qd.f32), (4,), layout=(0,))
    assert qd.tensor(qd.f32, (3, 2), layout=(0, 1)).layout is None
    assert qd.tensor(qd.f32, (3, 2), layout=(1, 0)).layout == (1, 0)


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_compound_dtypes_give_vector_and_matrix_tensors(backend):
    v = qd.tensor(qd.types.vector(3, qd.f32), (4,), backend=backend)
    m = qd.tensor(qd.types.matrix(2, 3, qd.f32), (5,), backend=backend)
    assert isinstance(v, qd.VectorTensor) and v.element_shape == (3,) and v.shape == (4,)
    assert isinstance(m, qd.MatrixTensor) and m.element_shape == (2, 3) and m.shape == (5,)
    assert v.dtype == qd.f32 and m.dtype == qd.f32


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_vector_and_matrix_factories_match_their_allocators(backend):
    v = qd.Vector.tensor(3, qd.f32, (4,), backend=backend)
    m = qd.Matrix.tensor(2, 2, qd.f32, (3,), backend=backend)
    if backend is qd.Backend.FIELD:
        v_ref, m_ref = qd.Vector.field(3, qd.f32, (4,)), qd.Matrix.field(2, 2, qd.f32, (3,))
    else:
        v_ref, m_ref = qd.Vector.ndarray(3, qd.f32, (4,)), qd.Matrix.ndarray(2, 2, qd.f32, (3,))
        assert isinstance(v_ref, qd.VectorNdarray) and isinstance(m_ref, qd.MatrixNdarray)
    assert type(v._unwrap()) is type(v_ref) and type(m._unwrap()) is type(m_ref)
    assert isinstance(v, qd.VectorTensor) and isinstance(m, qd.MatrixTensor)
    assert (v.n, m.n, m.m) == (3, 2, 2)


@test_utils.test()
def test_vector_and_matrix_factory_errors():
    for make in (lambda **kw: qd.Vector.tensor(3, qd.f32, (4,), **kw),
                 lambda **kw: qd.Matrix.tensor(2, 3, qd.f32, (4,), **kw)):
        with pytest.raises(ValueError, match="backend="):
            make(backend="ndarray")
        with pytest.raises(TypeError, match="layout="):
            make(order="ji")
        for kw in ({"offset": (1,)}, {"layout": (0,)}, {"nonsense": 1}):
            with pytest.raises(TypeError, match="unexpected keyword"):
                make(**kw)
    assert not hasattr(qd, "tensor_vec") and not hasattr(qd, "tensor_mat")


# ---- host surface -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_host_indexing_numpy_and_fill(backend):
    t = qd.tensor(qd.i32, (3, 4), backend=backend)
    src = np.arange(12, dtype=np.int32).reshape(3, 4) * 3
    t.from_numpy(src)
    np.testing.assert_array_equal(t.to_numpy(), src)
    assert t[2, 1] == 27
    t[0, 3] = -5
    assert t.to_numpy()[0, 3] == -5
    as_f64 = t.to_numpy(dtype=np.float64)
    assert as_f64.dtype == np.float64 and as_f64[2, 1] == 27.0
    # copy=None views the memory where it can (on cpu), else copies;
    # copy=False views it or raises.
    viewable = qd.lang.runtime.state.arch == qd.cpu
    maybe_view = t.to_numpy(copy=None)
    maybe_view[0, 0] = 99
    assert t[0, 0] == (99 if viewable else 0)
    if viewable:
        view = t.to_numpy(copy=False)
        t[1, 1] = 7
        assert view[1, 1] == 7
    else:
        with pytest.raises(ValueError, match="copy=False.*Zero-copy not available"):
            t.to_numpy(copy=False)
    t.fill(7)
    np.testing.assert_array_equal(t.to_numpy(), np.full((3, 4), 7))


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_vector_host_surface(backend):
    v = qd.Vector.tensor(3, qd.f32, (4,), backend=backend)
    src = np.arange(12, dtype=np.float32).reshape(4, 3)
    v.from_numpy(src)
    np.testing.assert_array_equal(v[2], [6, 7, 8])
    v[1] = [9, 9, 9]
    np.testing.assert_array_equal(v.to_numpy()[1], [9, 9, 9])
    v.fill(qd.Vector([1, 2, 3]))
    np.testing.assert_array_equal(v.to_numpy(), np.tile([1, 2, 3], (4, 1)))


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_copy_from_wrapper_and_bare_impl(backend):
    src = np.arange(12, dtype=np.int32).reshape(3, 4) + 100
    a = qd.tensor(qd.i32, (3, 4), backend=backend)
    a.from_numpy(src)
    b = qd.tensor(qd.i32, (3, 4), backend=backend)
    b.copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), src)
    c = qd.tensor(qd.i32, (3, 4), backend=backend)
    c.copy_from(a._unwrap())
    np.testing.assert_array_equal(c.to_numpy(), src)
    with pytest.raises(ValueError, match="shape"):
        qd.tensor(qd.i32, (4, 3), backend=backend).copy_from(a)


@test_utils.test()
def test_copy_between_backends_is_refused():
    f = qd.tensor(qd.f32, (4,), backend=qd.Backend.FIELD)
    n = qd.tensor(qd.f32, (4,), backend=qd.Backend.NDARRAY)
    with pytest.raises(TypeError, match="backends"):
        f.copy_from(n)
    with pytest.raises(TypeError, match="backends"):
        n.copy_from(f)


@test_utils.test()
def test_transposed_field_layout_keeps_canonical_view():
    t = qd.tensor(qd.i32, (3, 4), backend=qd.Backend.FIELD, layout=(1, 0))
    assert t.layout == (1, 0) and t.shape == (3, 4)
    src = np.arange(12, dtype=np.int32).reshape(3, 4)
    t.from_numpy(src)
    np.testing.assert_array_equal(t.to_numpy(), src)
    assert t[2, 3] == 11

    @qd.kernel
    def bump(x: qd.Tensor):
        for i, j in qd.ndrange(3, 4):
            x[i, j] += i * 100

    bump(t)
    np.testing.assert_array_equal(t.to_numpy(), src + np.arange(3)[:, None] * 100)
    assert qd.tensor(qd.i32, (3, 4), backend=qd.Backend.FIELD).layout is None


# ---- wrapping and pickling ----------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_wrap_picks_the_subclass(backend):
    if backend is qd.Backend.FIELD:
        s, v, m = (qd.field(qd.f32, (4,)), qd.Vector.field(3, qd.f32, (4,)),
                   qd.Matrix.field(2, 2, qd.f32, (3,)))
    else:
        s, v, m = (qd.ndarray(qd.f32, (4,)), qd.Vector.ndarray(3, qd.f32, (4,)),
                   qd.Matrix.ndarray(2, 2, qd.f32, (3,)))
    ws = qd.wrap(s)
    assert type(ws) is qd.Tensor and ws._unwrap() is s
    assert type(qd.wrap(v)) is qd.VectorTensor
    assert type(qd.wrap(m)) is qd.MatrixTensor
    assert qd.wrap(ws) is ws
    with pytest.raises(TypeError):
        qd.Tensor(ws)
    with pytest.raises(TypeError):
        qd.VectorTensor(s)
    with pytest.raises(TypeError):
        qd.Tensor([1, 2])


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_pickle_round_trip(backend):
    t = qd.tensor(qd.f32, (3, 4), backend=backend)
    src = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5
    t.from_numpy(src)
    back = pickle.loads(pickle.dumps(t))
    assert type(back) is qd.Tensor and back._backend() is backend
    assert back.shape == (3, 4) and back.dtype == qd.f32
    np.testing.assert_array_equal(back.to_numpy(), src)
    v = qd.Vector.tensor(3, qd.i32, (2,), backend=backend)
    v.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    v_back = pickle.loads(pickle.dumps(v))
    assert isinstance(v_back, qd.VectorTensor) and v_back.element_shape == (3,)
    np.testing.assert_array_equal(v_back.to_numpy(), v.to_numpy())
    m = qd.Matrix.tensor(2, 2, qd.f32, (3,), backend=backend)
    m.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 2, 2))
    m_back = pickle.loads(pickle.dumps(m))
    assert isinstance(m_back, qd.MatrixTensor) and m_back.element_shape == (2, 2)
    np.testing.assert_array_equal(m_back.to_numpy(), m.to_numpy())


@test_utils.test()
def test_pickle_keeps_a_field_layout():
    t = qd.tensor(qd.i32, (2, 3), backend=qd.Backend.FIELD, layout=(1, 0))
    t.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    back = pickle.loads(pickle.dumps(t))
    assert back.layout == (1, 0)
    assert back[1, 2] == 5


# ---- gradients -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_needs_grad_gives_a_stable_grad_tensor(backend):
    t = qd.tensor(qd.f32, (3, 4), backend=backend, needs_grad=True)
    g = t.grad
    assert isinstance(g, qd.Tensor) and g is t.grad
    assert g.shape == (3, 4) and g.dtype == qd.f32
    assert t.has_grad() and not t.has_dual()
    plain = qd.tensor(qd.f32, (4,), backend=backend)
    assert not plain.has_grad() and not plain.has_dual()
    assert qd.tensor(qd.i32, (4,), backend=backend).grad is None
    v = qd.Vector.tensor(3, qd.f32, (2,), backend=backend, needs_grad=True)
    m = qd.Matrix.tensor(2, 2, qd.f32, (3,), backend=backend, needs_grad=True)
    assert v.grad.shape == (2,) and m.grad.shape == (3,)
    assert isinstance(v.grad, qd.VectorTensor) and isinstance(m.grad, qd.MatrixTensor)


@test_utils.test()
def test_field_grad_placeholder_versus_ndarray_none():
    f = qd.tensor(qd.f32, (4,), backend=qd.Backend.FIELD)
    n = qd.tensor(qd.f32, (4,), backend=qd.Backend.NDARRAY)
    assert isinstance(f.grad, qd.Tensor) and not f.has_grad()
    assert n.grad is None


@test_utils.test()
def test_integer_vector_ndarray_cannot_need_grad():
    with pytest.raises(qd.QuadrantsRuntimeError, match="needs_grad"):
        qd.Vector.tensor(3, qd.i32, (2,), needs_grad=True)
    with pytest.raises(qd.QuadrantsRuntimeError, match="needs_grad"):
        qd.Matrix.tensor(2, 2, qd.i32, (3,), needs_grad=True)


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_kernel_grad_through_tensors(backend):
    """loss = sum_i w_i * x_i**3, so dloss/dx_i = 3 w_i x_i**2."""
    n = 6
    x = qd.tensor(qd.f32, (n,), backend=backend, needs_grad=True)
    w = qd.tensor(qd.f32, (n,), backend=backend)
    loss = qd.tensor(qd.f32, (), backend=backend, needs_grad=True)
    xs = np.linspace(-1.5, 1.25, n).astype(np.float32)
    ws = np.arange(1, n + 1, dtype=np.float32) * 0.5
    x.from_numpy(xs)
    w.from_numpy(ws)

    @qd.kernel
    def compute(x: qd.Tensor, w: qd.Tensor, loss: qd.Tensor):
        for i in range(x.shape[0]):
            loss[None] += w[i] * x[i] ** 3

    compute(x, w, loss)
    loss.grad[None] = 1.0
    compute.grad(x, w, loss)
    np.testing.assert_allclose(loss[None], np.sum(ws * xs.astype(np.float64) ** 3),
                               rtol=1e-5)
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * ws * xs ** 2, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_tape_through_vector_tensors(backend):
    """loss = sum_i |v_i|^2 * c, so dloss/dv_i = 2 c v_i."""
    v = qd.Vector.tensor(3, qd.f32, (4,), backend=backend, needs_grad=True)
    loss = qd.tensor(qd.f32, (), backend=backend, needs_grad=True)
    vs = np.arange(12, dtype=np.float32).reshape(4, 3) / 7.0 - 0.5
    v.from_numpy(vs)

    @qd.kernel
    def energy(v: qd.Tensor, loss: qd.Tensor, c: qd.f32):
        for i in range(4):
            loss[None] += c * v[i].dot(v[i])

    with qd.ad.Tape(loss=loss):
        energy(v, loss, 1.5)
    np.testing.assert_allclose(v.grad.to_numpy(), 3.0 * vs, rtol=1e-5, atol=1e-6)


# ---- qd.Tensor kernel parameters ----------------------------------------------------------

def test_tensor_is_a_class():
    assert isinstance(qd.Tensor, type)


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_tensor_parameter_takes_both_backends_and_bare_impls(backend):
    @qd.kernel
    def fill(x: qd.Tensor):
        for i in range(x.shape[0]):
            x[i] = i * 10

    t = qd.tensor(qd.i32, (4,), backend=backend)
    fill(t)
    np.testing.assert_array_equal(t.to_numpy(), [0, 10, 20, 30])
    bare = qd.field(qd.i32, (5,)) if backend is qd.Backend.FIELD else qd.ndarray(qd.i32, (5,))
    fill(bare)
    np.testing.assert_array_equal(bare.to_numpy(), [0, 10, 20, 30, 40])


@test_utils.test()
def test_one_kernel_compiles_per_backend_and_ndarray_signature():
    @qd.kernel
    def fill(x: qd.Tensor):
        for i in range(4):
            x[i] = i + 1

    f = qd.tensor(qd.i32, (4,), backend=qd.Backend.FIELD)
    a = qd.tensor(qd.i32, (4,))
    b = qd.tensor(qd.i32, (8,))
    for t in (f, a, b):
        fill(t)
        np.testing.assert_array_equal(t.to_numpy()[:4], [1, 2, 3, 4])
    # a and b share a compiled kernel (same dtype and dimensions); f has its own.
    assert len(fill._cache) == 2
    fill(qd.tensor(qd.f32, (4,)))
    assert len(fill._cache) == 3


@test_utils.test()
def test_tensor_parameter_may_be_none():
    out = qd.ndarray(qd.f32, (4,))
    bias = qd.ndarray(qd.f32, (4,))
    bias.fill(100.0)

    @qd.kernel
    def add_bias(out: qd.types.NDArray[qd.f32, 1], bias: qd.Tensor):
        for i in range(out.shape[0]):
            if qd.static(bias is not None):
                out[i] = qd.f32(i) + bias[i]
            else:
                out[i] = qd.f32(i)

    wrapped = qd.wrap(bias)
    add_bias(out, wrapped)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(4) + 100.0)
    add_bias(out, None)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(4))
    add_bias(out, bias)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(4) + 100.0)
    assert len(add_bias._cache) == 2


@test_utils.test()
def test_tensor_parameter_rejects_other_values():
    @qd.kernel
    def fill(x: qd.Tensor):
        for i in range(4):
            x[i] = 1

    with pytest.raises(qd.QuadrantsTypeError, match="fill.*'x'.*qd.Tensor"):
        fill(np.zeros(4, dtype=np.float32))
    with pytest.raises(qd.QuadrantsTypeError, match="qd.Tensor"):
        fill(3)


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_tensor_parameter_with_vector_and_matrix_elements(backend):
    v = qd.Vector.tensor(3, qd.f32, (4,), backend=backend)
    m = qd.Matrix.tensor(2, 3, qd.f32, (2,), backend=backend)

    @qd.kernel
    def fill(v: qd.Tensor, m: qd.Tensor):
        for i in range(4):
            for j in qd.static(range(3)):
                v[i][j] = i + 0.25 * j
        for i in range(2):
            for r in range(2):
                for c in range(3):
                    m[i][r, c] = i * 100 + r * 10 + c

    fill(v, m)
    np.testing.assert_allclose(v.to_numpy()[2], [2.0, 2.25, 2.5])
    assert m.to_numpy()[1, 1, 2] == 112.0


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_wrappers_pass_to_template_and_ndarray_parameters(backend):
    t = qd.tensor(qd.i32, (3,), backend=backend)
    if backend is qd.Backend.FIELD:
        @qd.kernel
        def fill(x: qd.template()):
            for i in range(3):
                x[i] = i * 2
    else:
        @qd.kernel
        def fill(x: qd.types.ndarray()):
            for i in range(3):
                x[i] = i * 2
    fill(t)
    np.testing.assert_array_equal(t.to_numpy(), [0, 2, 4])


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_tensor_reached_from_kernel_globals_and_members(backend):
    t = qd.tensor(qd.f32, (3,), backend=backend)

    @qd.data_oriented
    class Holder:
        def __init__(self):
            self.t = t

        @qd.kernel
        def scale(self, k: qd.f32):
            for i in range(3):
                self.t[i] = k * i

    Holder().scale(2.0)
    np.testing.assert_array_equal(t.to_numpy(), [0, 2, 4])
    g = qd.tensor(qd.f32, (3,), backend=qd.Backend.FIELD)

    @qd.kernel
    def from_global():
        for i in range(3):
            g[i] = i + 0.5

    from_global()
    np.testing.assert_array_equal(g.to_numpy(), [0.5, 1.5, 2.5])


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@test_utils.test()
def test_tensor_annotated_func_parameter(backend):
    a = qd.tensor(qd.i32, (8,), backend=backend)

    @qd.func
    def double_it(x: qd.Tensor, i: qd.i32):
        x[i] = x[i] * 2

    @qd.kernel
    def run(x: qd.Tensor):
        for i in range(8):
            x[i] = i + 1
            double_it(x, i)

    run(a)
    np.testing.assert_array_equal(a.to_numpy(), np.arange(1, 9) * 2)


@test_utils.test()
def test_tensor_member_reassigned_between_launches():
    @dataclasses.dataclass
    class State:
        vals: qd.Tensor

    state = State(qd.tensor(qd.f32, (3,)))

    @qd.kernel
    def fill(st: qd.template(), k: qd.f32):
        for i in range(3):
            st.vals[i] = k

    fill(state, 1.0)
    first = state.vals
    state.vals = qd.tensor(qd.f32, (3,))
    fill(state, 2.0)
    np.testing.assert_array_equal(first.to_numpy(), [1, 1, 1])
    np.testing.assert_array_equal(state.vals.to_numpy(), [2, 2, 2])


@qd.kernel
def _module_fill(x: qd.Tensor):
    # Decorated at import time, before any qd.init().
    for i, j in qd.ndrange(2, 3):
        x[i, j] = i * 10 + j


@test_utils.test()
def test_module_level_kernel_survives_reset():
    expected = np.arange(2)[:, None] * 10 + np.arange(3)
    for backend in (qd.Backend.FIELD, qd.Backend.NDARRAY):
        t = qd.tensor(qd.i32, (2, 3), backend=backend)
        _module_fill(t)
        np.testing.assert_array_equal(t.to_numpy(), expected)
    arch = qd.lang.impl.current_cfg().arch
    qd.reset()
    qd.init(arch=arch)
    t = qd.tensor(qd.i32, (2, 3), backend=qd.Backend.FIELD, layout=(1, 0))
    _module_fill(t)
    np.testing.assert_array_equal(t.to_numpy(), expected)


# ---- fill and copy_from on fields and ndarrays --------------------------------------------

@test_utils.test()
def test_fill_scalar_field_on_host_and_in_kernel():
    val = qd.field(qd.i32, shape=(4, 7))
    val.fill(2)
    assert (val.to_numpy() == 2).all()

    @qd.kernel
    def refill(v: qd.i32):
        val.fill(v)

    refill(3)
    assert (val.to_numpy() == 3).all()


@test_utils.test()
def test_fill_matrix_field_with_scalar_and_matrix():
    val = qd.Matrix.field(2, 3, qd.i32, shape=(4, 7))
    val.fill(2)
    assert (val.to_numpy() == 2).all()

    @qd.kernel
    def fill_scalar(v: qd.i32):
        val.fill(v)

    fill_scalar(5)
    assert (val.to_numpy() == 5).all()
    mat = qd.Matrix([[0, 1, 2], [2, 3, 4]])
    val.fill(mat)
    assert (val.to_numpy() == mat.to_numpy()).all()

    @qd.kernel
    def fill_matrix(v: qd.types.matrix(2, 3, qd.i32)):
        val.fill(v)

    fill_matrix(qd.Matrix([[4, 5, 6], [6, 7, 8]]))
    np.testing.assert_array_equal(val[3, 6], [[4, 5, 6], [6, 7, 8]])


@test_utils.test()
def test_copy_from_scalar_and_struct_fields():
    x = qd.field(qd.i32, shape=16)
    y = qd.field(qd.i32, shape=16)
    x[1] = 2
    y[0], y[2] = 1, 3
    x.copy_from(y)
    np.testing.assert_array_equal(x.to_numpy()[:3], [1, 0, 3])
    np.testing.assert_array_equal(y.to_numpy()[:3], [1, 0, 3])

    @qd.dataclass
    class C:
        i: qd.i32
        f: qd.f32

    a, b = C.field(shape=8), C.field(shape=8)
    a[1].i = 2
    b[0].f = 1.5
    b[2].i = 3
    a.copy_from(b)
    assert a[0].f == 1.5 and a[1].i == 0 and a[2].i == 3
    with pytest.raises(TypeError):
        a.copy_from(x)


@test_utils.test()
def test_copy_from_errors_name_what_differs():
    x = qd.field(qd.i32, shape=4)
    with pytest.raises(ValueError, match=r"\(4,\).*\(5,\)"):
        x.copy_from(qd.field(qd.i32, shape=5))
    with pytest.raises(TypeError, match="Field"):
        x.copy_from(qd.ndarray(qd.i32, 4))
    v = qd.Vector.field(3, qd.f32, shape=4)
    with pytest.raises(ValueError, match="vector"):
        v.copy_from(qd.Vector.field(2, qd.f32, shape=4))
    n = qd.ndarray(qd.f32, 4)
    with pytest.raises(TypeError, match="f32.*i32"):
        n.copy_from(qd.ndarray(qd.i32, 4))
    src = qd.Vector.ndarray(2, qd.f32, 3)
    src.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    dst = qd.Vector.ndarray(2, qd.f32, 3)
    dst.copy_from(src)
    np.testing.assert_array_equal(dst.to_numpy(), src.to_numpy())


# ---- Python dataclasses as kernel parameters -----------------------------------

@test_utils.test()
def test_a_frozen_dataclass_of_fields_ndarrays_and_scalars_is_a_kernel_parameter():
    @dataclasses.dataclass(frozen=True)
    class Inner:
        scale: float
        out: qd.Tensor

    @dataclasses.dataclass(frozen=True)
    class State:
        x: qd.Tensor
        arr: qd.types.NDArray[qd.f32, 1]
        inner: Inner

    @qd.kernel
    def step(state: State, bias: qd.f32):
        for i in range(4):
            state.inner.out[i] = state.x[i] * state.inner.scale + state.arr[i] + bias

    x = qd.field(qd.f32, shape=4)
    out = qd.field(qd.f32, shape=4)
    arr = qd.ndarray(qd.f32, shape=(4,))
    x.from_numpy(np.arange(4, dtype=np.float32))
    arr.from_numpy(np.full(4, 10.0, dtype=np.float32))
    state = State(x=qd.Tensor(x), arr=arr, inner=Inner(scale=2.0, out=qd.Tensor(out)))
    step(state, 1.0)
    np.testing.assert_array_equal(out.to_numpy(), [11, 13, 15, 17])
    # Another instance with another scale and ndarray: not the first's values.
    arr2 = qd.ndarray(qd.f32, shape=(4,))
    arr2.from_numpy(np.full(4, -1.0, dtype=np.float32))
    step(State(x=qd.Tensor(x), arr=arr2, inner=Inner(scale=3.0, out=qd.Tensor(out))), 0.0)
    np.testing.assert_array_equal(out.to_numpy(), [-1, 2, 5, 8])


@test_utils.test()
def test_deepcopy_of_an_ndarray_owns_its_values_and_grad():
    a = qd.ndarray(qd.f32, shape=(3,), needs_grad=True)
    a.from_numpy(np.array([1, 2, 3], dtype=np.float32))
    a.grad.from_numpy(np.array([4, 5, 6], dtype=np.float32))
    b = copy.deepcopy(a)
    a.from_numpy(np.zeros(3, dtype=np.float32))
    a.grad.fill(0)
    np.testing.assert_array_equal(b.to_numpy(), [1, 2, 3])
    np.testing.assert_array_equal(b.grad.to_numpy(), [4, 5, 6])
    v = qd.Vector.ndarray(2, qd.i32, 4)
    v[1] = [7, 8]
    w = copy.deepcopy(v)
    v[1] = [0, 0]
    assert w.n == 2 and list(w[1]) == [7, 8]


@test_utils.test(arch=qd.cpu)
def test_wrapping_what_is_not_a_bare_field_or_ndarray_is_refused():
    with pytest.raises(TypeError, match=r"qd.Tensor\(impl\) requires a field or an ndarray, got int"):
        qd.Tensor(3)
    wrapped = qd.Tensor(qd.ndarray(qd.f32, (2,)))
    with pytest.raises(TypeError, match=r"requires a bare field or ndarray, got a qd.Tensor"):
        qd.Tensor(wrapped)
