"""Gradient (.grad) and dual (.dual) companions of fields.

Every floating-point field has both, placeable like any field whether or not
it was created with needs_grad / needs_dual; qd.root.lazy_grad() and
qd.root.lazy_dual() place the missing ones. A placed adjoint is linked to its
primal (reverse mode accumulates into it); a field whose adjoint is neither
placed nor asked for is a constant to reverse mode. Integer fields have no
companions.

The losses below are polynomials with closed-form gradients. In f32 those
gradients are exact small integers or a single product (one rounding), so
test_utils.approx's f32 floor (rel 1e-6) holds; in f64 rel 1e-12 allows a
few roundings while a missing or misplaced adjoint is off by O(1).
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import QuadrantsGradientError
from tests import test_utils


def _link_dual_available():
    return hasattr(qd.lang.runtime.program(), "link_dual")


def _skip_without_link_dual():
    if not _link_dual_available():
        pytest.skip("the built C++ core has no Program.link_dual binding yet")


@test_utils.test()
def test_grad_placed_without_needs_grad_receives_gradients():
    n = 6
    x = qd.field(qd.f32)
    qd.root.dense(qd.i, n).place(x, x.grad)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    xv = np.arange(n, dtype=np.float32) - 2
    x.from_numpy(xv)

    @qd.kernel
    def square_sum():
        for i in x:
            loss[None] += x[i] * x[i]

    with qd.ad.Tape(loss=loss):
        square_sum()
    assert loss[None] == test_utils.approx(float(np.sum(xv * xv)))
    # d/dx_i sum x^2 = 2 x_i: exact in f32.
    np.testing.assert_array_equal(x.grad.to_numpy(), 2 * xv)


@test_utils.test()
def test_grad_placed_before_its_primal_is_linked():
    n = 4
    x = qd.field(qd.f64)
    qd.root.dense(qd.i, n).place(x.grad)
    qd.root.dense(qd.i, n).place(x)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.array([0.5, -1.0, 2.0, 3.0])
    x.from_numpy(xv)

    @qd.kernel
    def cube_sum():
        for i in x:
            loss[None] += x[i] ** 3

    with qd.ad.Tape(loss=loss):
        cube_sum()
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * xv ** 2, rtol=1e-12)


@test_utils.test()
def test_field_without_placed_grad_is_a_constant():
    n = 5
    c = qd.field(qd.f32, shape=n)          # .grad exists but is never placed
    w = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    cv = np.arange(1, n + 1, dtype=np.float32)
    wv = np.full(n, 0.5, dtype=np.float32)
    c.from_numpy(cv)
    w.from_numpy(wv)

    @qd.kernel
    def weighted():
        for i in w:
            loss[None] += c[i] * w[i] * w[i]

    with qd.ad.Tape(loss=loss):
        weighted()
    # d/dw_i = 2 c_i w_i = c_i here: exact in f32.
    np.testing.assert_array_equal(w.grad.to_numpy(), cv)
    assert c.grad is not None and not c.grad.placed
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"field\d*\.grad' is not placed.*lazy_grad"):
        c.grad.to_numpy()


@test_utils.test()
def test_lazy_grad_places_missing_adjoints_only():
    n = 3
    x = qd.field(qd.f64)
    qd.root.dense(qd.i, n).place(x)
    y = qd.field(qd.f64, shape=n, needs_grad=True)
    i = qd.field(qd.i32, shape=n)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    y_grad_place = y.grad.place_id()
    assert not x.grad.placed
    qd.root.lazy_grad()
    assert x.grad.placed and x.grad.shape == (n,)
    assert y.grad.place_id() == y_grad_place  # already placed: left alone
    assert i.grad is None
    xv = np.array([1.5, -2.0, 0.25])
    yv = np.array([2.0, 3.0, -1.0])
    x.from_numpy(xv)
    y.from_numpy(yv)

    @qd.kernel
    def product():
        for k in x:
            loss[None] += x[k] * y[k]

    with qd.ad.Tape(loss=loss):
        product()
    np.testing.assert_allclose(x.grad.to_numpy(), yv, rtol=1e-12)
    np.testing.assert_allclose(y.grad.to_numpy(), xv, rtol=1e-12)


@test_utils.test()
def test_lazy_grad_2d_layout():
    x = qd.field(qd.f32)
    qd.root.dense(qd.ij, (3, 4)).place(x)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    qd.root.lazy_grad()
    assert x.grad.shape == (3, 4)

    @qd.kernel
    def weighted():
        for i, j in x:
            loss[None] += x[i, j] * (i * 10 + j)

    with qd.ad.Tape(loss=loss):
        weighted()
    expected = np.add.outer(np.arange(3) * 10, np.arange(4)).astype(np.float32)
    np.testing.assert_array_equal(x.grad.to_numpy(), expected)


@test_utils.test()
def test_companions_exist_only_on_float_primals():
    f = qd.field(qd.f32, shape=2)
    assert isinstance(f.grad, qd.Field) and isinstance(f.dual, qd.Field)
    assert f.grad.grad is None and f.dual.grad is None and f.dual.dual is None
    # The adjoint's tangent, placed by qd.ad.hvp when it needs one.
    assert isinstance(f.grad.dual, qd.Field) and not f.grad.dual.placed
    assert f.grad.dtype == qd.f32 and f.grad.shape == (2,)
    for dtype in (qd.i32, qd.u8, qd.i64, qd.u1):
        g = qd.field(dtype, shape=2)
        assert g.grad is None and g.dual is None


@test_utils.test()
def test_integer_field_with_needs_grad_is_an_error():
    for flag in ("needs_grad", "needs_dual"):
        with pytest.raises(QuadrantsGradientError, match=rf"i32.*{flag}=True") as info:
            qd.field(qd.i32, shape=4, **{flag: True})
        # Catchable as upstream's RuntimeError and as a type error.
        assert isinstance(info.value, RuntimeError)
        assert isinstance(info.value, qd.QuadrantsTypeError)


@test_utils.test()
def test_field_flag_must_be_bool():
    with pytest.raises(qd.QuadrantsTypeError, match="needs_grad must be a bool"):
        qd.field(qd.f32, shape=2, needs_grad=1)
    with pytest.raises(qd.QuadrantsTypeError, match="needs_dual must be a bool"):
        qd.field(qd.f32, shape=2, needs_dual="yes")


@test_utils.test()
def test_grad_placed_with_a_different_shape_is_an_error():
    x = qd.field(qd.f32)
    qd.root.dense(qd.i, 4).place(x)
    with pytest.raises(qd.QuadrantsTypeError, match=r"grad' must have the shape of its "
                       r"primal .*\(4,\).*\(5,\)"):
        qd.root.dense(qd.i, 5).place(x.grad)


@test_utils.test()
def test_unplaced_grad_in_kernel_is_an_error():
    x = qd.field(qd.f32, shape=3)

    @qd.kernel
    def touch():
        for i in x:
            x.grad[i] = 1.0

    with pytest.raises(qd.QuadrantsError, match=r"\.grad' is not placed"):
        touch()


@test_utils.test()
def test_a_launch_refuses_a_field_declared_without_shape_and_never_placed():
    loss = qd.field(qd.f32, needs_grad=True)  # no shape, never placed
    x = qd.field(qd.f32, shape=3, needs_grad=True)

    @qd.kernel
    def total():
        for i in x:
            loss[None] += 3 * x[i]

    with pytest.raises(RuntimeError, match=r"These field\(s\) are not placed: \['field\d+'\]"):
        total()
    qd.root.place(loss, loss.grad)  # placing it makes the launch whole
    with qd.ad.Tape(loss=loss):
        total()
    np.testing.assert_array_equal(x.grad.to_numpy(), [3, 3, 3])


@pytest.mark.parametrize("role", ["grad", "dual"])
@test_utils.test()
def test_a_launch_refuses_a_primal_placed_without_the_companion_it_asked_for(role):
    a = qd.field(qd.f32, **{f"needs_{role}": True})
    qd.root.dense(qd.i, 4).place(a)

    @qd.kernel
    def touch():
        pass

    with pytest.raises(RuntimeError, match=rf"requrie `needs_{role}=True`, however their "
                                           rf"{role} field\(s\) are not placed"):
        touch()
    getattr(qd.root, f"lazy_{role}")()
    touch()
    assert getattr(a, role).placed


# ---- .dual ---------------------------------------------------------------------

@test_utils.test()
def test_dual_placed_and_linked():
    _skip_without_link_dual()
    x = qd.field(qd.f32)
    qd.root.dense(qd.i, 3).place(x, x.dual)
    assert x.dual.placed and x.dual.shape == (3,)
    x.dual.from_numpy(np.array([1, 2, 3], dtype=np.float32))
    np.testing.assert_array_equal(x.dual.to_numpy(), [1, 2, 3])
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0])  # separate storage


@test_utils.test()
def test_needs_dual_places_dual_with_shape():
    _skip_without_link_dual()
    x = qd.field(qd.f64, shape=(2, 3), needs_dual=True)
    assert x.dual.placed and x.dual.shape == (2, 3)
    assert not x.grad.placed


@test_utils.test()
def test_lazy_dual_places_missing_duals():
    _skip_without_link_dual()
    x = qd.field(qd.f32)
    qd.root.dense(qd.i, 5).place(x)
    n = qd.field(qd.i32, shape=5)
    assert not x.dual.placed
    qd.root.lazy_dual()
    assert x.dual.placed and x.dual.shape == (5,)
    assert not x.grad.placed  # lazy_dual leaves adjoints alone
    assert n.dual is None


@test_utils.test()
def test_unplaced_dual_is_an_error():
    x = qd.field(qd.f32, shape=2)
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"\.dual' is not placed.*lazy_dual"):
        x.dual[0] = 1.0
