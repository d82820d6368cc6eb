"""Ndarrays in autodiff, and struct-for loops over ndarrays.

qd.ndarray(dtype, shape, needs_grad=True) for float dtypes (an integer dtype
is an error naming it); qd.ad.Tape with an ndarray loss of one element;
`for i in arr` / `for i, j in arr` over an ndarray parameter's indices,
forward, with kernel.grad and under a Tape.

Gradients are checked against f64 central differences of the forward kernel
(h = 1e-6 * max(1, |x|)): truncation h^2 |f'''| / 6 < 1e-10 for the smooth
O(1) losses here and round-off ~ 1e-16 * sum|terms| / h < 1e-8, so rel 1e-6 /
abs 1e-7 passes while a dropped or doubled adjoint is off by O(1). Closed
forms in f32 hold to test_utils.approx's floor (a few f32 roundings of O(1)
values); in f64 to rel 1e-12.
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import QuadrantsGradientError
from tests import test_utils

FD_TOL = dict(rtol=1e-6, atol=1e-7)
F64 = dict(default_fp=qd.f64, require=qd.extension.data64)


def _central_differences(run_loss, values, h_rel=1e-6):
    """d run_loss / d values by central differences, in f64."""
    values = np.array(values, dtype=np.float64)
    out = np.zeros(values.size)
    for k in range(values.size):
        plus, minus = values.copy().reshape(-1), values.copy().reshape(-1)
        h = h_rel * max(1.0, abs(plus[k]))
        plus[k] += h
        minus[k] -= h
        out[k] = (run_loss(plus.reshape(values.shape)) -
                  run_loss(minus.reshape(values.shape))) / (plus[k] - minus[k])
    return out.reshape(values.shape)


# ---- qd.ndarray(..., needs_grad=True) ------------------------------------------

@test_utils.test()
def test_needs_grad_for_float_dtypes():
    for dtype in (qd.f16, qd.f32, qd.f64):
        a = qd.ndarray(dtype, (2, 3), needs_grad=True)
        assert isinstance(a.grad, qd.Ndarray)
        assert a.grad.dtype == dtype and a.grad.shape == (2, 3)
        assert a.grad.grad is None
        np.testing.assert_array_equal(a.grad.to_numpy(), np.zeros((2, 3)))
    assert qd.ndarray(qd.f32, 4).grad is None


@test_utils.test()
def test_needs_grad_on_integer_dtype_is_an_error():
    for dtype in (qd.i32, qd.i8, qd.u64, qd.u1):
        with pytest.raises(QuadrantsGradientError, match=rf"{dtype.name} is not "
                           r"differentiable.*needs_grad=True") as info:
            qd.ndarray(dtype, 4, needs_grad=True)
        assert isinstance(info.value, RuntimeError)
        assert isinstance(info.value, qd.QuadrantsTypeError)
    with pytest.raises(qd.QuadrantsTypeError, match="needs_grad must be a bool"):
        qd.ndarray(qd.f32, 4, needs_grad=1)


# ---- Tape with an ndarray loss ---------------------------------------------------

@qd.kernel
def _sin_weighted_loss(x: qd.types.ndarray(), w: qd.types.ndarray(), loss: qd.types.ndarray()):
    for i in range(x.shape[0]):
        loss[0] += w[i] * qd.sin(x[i]) * x[i]


@pytest.mark.parametrize("loss_shape", [(), (1,), (1, 1)])
@test_utils.test(**F64)
def test_tape_with_ndarray_loss_matches_finite_differences(loss_shape):
    n = 5
    rng = np.random.default_rng(3)
    xv = rng.uniform(-1.5, 1.5, n)
    wv = rng.uniform(0.5, 2.0, n)
    x = qd.ndarray(qd.f64, n, needs_grad=True)
    w = qd.ndarray(qd.f64, n, needs_grad=True)
    loss = qd.ndarray(qd.f64, loss_shape, needs_grad=True)
    x.from_numpy(xv)
    w.from_numpy(wv)

    index = tuple([0] * len(loss_shape)) if loss_shape else None

    @qd.kernel
    def forward(x: qd.types.ndarray(), w: qd.types.ndarray(), loss: qd.types.ndarray()):
        for i in x:
            loss[index] += w[i] * qd.sin(x[i]) * x[i]

    loss.fill(123.0)  # the Tape zeroes the loss on entry
    with qd.ad.Tape(loss=loss):
        forward(x, w, loss)
    value = loss.to_numpy().reshape(-1)[0]
    assert value == pytest.approx(float(np.sum(wv * np.sin(xv) * xv)), rel=1e-12)
    np.testing.assert_array_equal(loss.grad.to_numpy().reshape(-1), [1.0])

    def run(values):
        x.from_numpy(values)
        loss.fill(0)
        forward(x, w, loss)
        return float(loss.to_numpy().reshape(-1)[0])

    fd = _central_differences(run, xv)
    np.testing.assert_allclose(x.grad.to_numpy(), fd, **FD_TOL)
    np.testing.assert_allclose(x.grad.to_numpy(), wv * (np.cos(xv) * xv + np.sin(xv)),
                               rtol=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy(), np.sin(xv) * xv, rtol=1e-12)


@test_utils.test()
def test_tape_clears_ndarray_adjoints_on_entry():
    x = qd.ndarray(qd.f32, 3, needs_grad=True)
    w = qd.ndarray(qd.f32, 3)
    loss = qd.ndarray(qd.f32, 1, needs_grad=True)
    x.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    w.from_numpy(np.array([0.5, 0.25, 2.0], dtype=np.float32))
    for _ in range(2):  # a second Tape does not see the first one's adjoints
        with qd.ad.Tape(loss=loss):
            _sin_weighted_loss(x, w, loss)
        xv = np.array([1.0, 2.0, 3.0])
        expected = np.array([0.5, 0.25, 2.0]) * (np.cos(xv) * xv + np.sin(xv))
        # One sin, one cos, three products in f32: rel 1e-5 covers it.
        np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-5)


@test_utils.test()
def test_tape_ndarray_loss_errors():
    x = qd.ndarray(qd.f32, 4, needs_grad=True)
    big = qd.ndarray(qd.f32, 2, needs_grad=True)
    with pytest.raises(QuadrantsGradientError, match=r"ndarray with only one element.*\(2,\)") \
            as info:
        with qd.ad.Tape(loss=big):
            _sin_weighted_loss(x, x, big)
    assert isinstance(info.value, RuntimeError)
    no_grad = qd.ndarray(qd.f32, 1)
    with pytest.raises(QuadrantsGradientError, match="needs_grad=True"):
        with qd.ad.Tape(loss=no_grad):
            pass
    with pytest.raises(qd.QuadrantsTypeError, match="needs a qd.field, a qd.ndarray or a torch tensor"):
        with qd.ad.Tape(loss=np.zeros(1)):
            pass
    assert qd.lang.runtime.state.tape is None


# ---- struct-for over ndarrays ----------------------------------------------------

@test_utils.test()
def test_struct_for_over_1d_ndarray_visits_every_index_once():
    n = 37
    a = qd.ndarray(qd.i32, n)

    @qd.kernel
    def mark(a: qd.types.ndarray()):
        for i in a:
            a[i] += i * 3 + 1

    mark(a)
    np.testing.assert_array_equal(a.to_numpy(), np.arange(n) * 3 + 1)
    b = np.zeros(5, dtype=np.int32)  # numpy arrays work too, with their own shape
    mark(b)
    np.testing.assert_array_equal(b, np.arange(5) * 3 + 1)


@test_utils.test()
def test_struct_for_over_2d_and_3d_ndarrays():
    @qd.kernel
    def index2(a: qd.types.ndarray(dtype=qd.i32, ndim=2)):
        for i, j in a:
            a[i, j] += i * 100 + j + 1

    @qd.kernel
    def index3(a: qd.types.ndarray(dtype=qd.i32, ndim=3)):
        for i, j, k in a:
            a[i, j, k] += i * 100 + j * 10 + k + 1

    a = qd.ndarray(qd.i32, (4, 7))
    index2(a)
    expected = np.add.outer(np.arange(4) * 100, np.arange(7)) + 1
    np.testing.assert_array_equal(a.to_numpy(), expected)
    c = np.zeros((2, 3, 5), dtype=np.int32)
    index3(c)
    i, j, k = np.indices((2, 3, 5))
    np.testing.assert_array_equal(c, i * 100 + j * 10 + k + 1)


@test_utils.test()
def test_struct_for_over_empty_ndarray_runs_nothing():
    @qd.kernel
    def count(a: qd.types.ndarray(), n: qd.types.ndarray()):
        for i, j in a:
            n[0] += 1

    n = qd.ndarray(qd.i32, 1)
    # qd.ndarray refuses an empty shape, as upstream; an empty numpy array
    # passes.
    count(np.zeros((0, 3), np.float32), n)
    assert n[0] == 0
    count(qd.ndarray(qd.f32, (2, 3)), n)
    assert n[0] == 6
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"not a valid shape for ndarray"):
        qd.ndarray(qd.f32, (0, 3))


@test_utils.test(**F64)
def test_struct_for_ndarray_reverse_mode_1d_kernel_grad():
    n = 6
    rng = np.random.default_rng(7)
    xv = rng.uniform(-1.0, 1.0, n)
    x = qd.ndarray(qd.f64, n, needs_grad=True)
    y = qd.ndarray(qd.f64, n, needs_grad=True)
    x.from_numpy(xv)

    @qd.kernel
    def forward(x: qd.types.ndarray(), y: qd.types.ndarray()):
        for i in x:
            y[i] = qd.exp(x[i]) * x[i] + 2 * x[i] * x[i]

    forward(x, y)
    np.testing.assert_allclose(y.to_numpy(), np.exp(xv) * xv + 2 * xv * xv, rtol=1e-12)
    y.grad.fill(1.0)
    forward.grad(x, y)

    def run(values):
        x.from_numpy(values)
        forward(x, y)
        return float(np.sum(y.to_numpy()))

    fd = _central_differences(run, xv)
    np.testing.assert_allclose(x.grad.to_numpy(), fd, **FD_TOL)
    np.testing.assert_allclose(x.grad.to_numpy(), np.exp(xv) * (xv + 1) + 4 * xv, rtol=1e-12)


@test_utils.test(**F64)
def test_struct_for_ndarray_reverse_mode_2d_under_tape():
    shape = (3, 4)
    rng = np.random.default_rng(11)
    xv = rng.uniform(0.2, 1.5, shape)
    x = qd.ndarray(qd.f64, shape, needs_grad=True)
    loss = qd.ndarray(qd.f64, (), needs_grad=True)
    x.from_numpy(xv)

    @qd.kernel
    def forward(x: qd.types.ndarray(ndim=2), loss: qd.types.ndarray(ndim=0)):
        for i, j in x:
            loss[None] += qd.log(x[i, j]) * (i + 1) + x[i, j] ** 2 * j

    with qd.ad.Tape(loss=loss):
        forward(x, loss)

    def run(values):
        x.from_numpy(values)
        loss.fill(0)
        forward(x, loss)
        return float(loss[None])

    fd = _central_differences(run, xv)
    np.testing.assert_allclose(x.grad.to_numpy(), fd, **FD_TOL)
    i, j = np.indices(shape)
    np.testing.assert_allclose(x.grad.to_numpy(), (i + 1) / xv + 2 * xv * j, rtol=1e-12)


@test_utils.test()
def test_struct_for_ndarray_nested_in_a_loop():
    # Inner ndarray loops are serial loops of each thread.
    @qd.kernel
    def outer(a: qd.types.ndarray(), out: qd.types.ndarray()):
        for r in range(out.shape[0]):
            for i in a:
                out[r] += a[i] * (r + 1)

    a = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    out = np.zeros(3, dtype=np.float32)
    outer(a, out)
    np.testing.assert_array_equal(out, [7.0, 14.0, 21.0])


@test_utils.test()
def test_struct_for_ndarray_wrong_number_of_targets():
    @qd.kernel
    def two_for_one(a: qd.types.ndarray(ndim=1)):
        for i, j in a:
            a[i] = j

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match=r"(?s)test_ndarray_ad.py:\d+: in kernel 'two_for_one':.*ndarray 'a' "
                             r"\(1-D\) has 1 indices but the loop has 2 targets"):
        two_for_one(np.zeros(3, dtype=np.float32))

    @qd.kernel
    def one_for_two(a: qd.types.ndarray(ndim=2)):
        for i in a:
            a[i, 0] = 1

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"has 2 indices but the loop has 1"):
        one_for_two(np.zeros((2, 2), dtype=np.float32))

    @qd.kernel
    def zero_d(a: qd.types.ndarray(ndim=0)):
        for i in a:
            a[None] = 1

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"cannot loop over 0-D ndarray 'a'"):
        zero_d(np.zeros((), dtype=np.float32))
