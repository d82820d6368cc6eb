"""qd.ad.hvp: Hessian-vector products by forward mode over the gradient
kernels, against f64 central differences of the taped gradient and against
torch.autograd.functional.hvp of a torch restatement; and its refusals."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import QuadrantsGradientError
from tests import test_utils

N = 6


def _problem():
    """loss(x) = sum_i y_i^2 + exp(x_i) y_i with y_i = sin(x_i) x_{i+1}
    (cyclic), computed by two kernels through the intermediate field y."""
    x = qd.field(qd.f64, N, needs_grad=True)
    y = qd.field(qd.f64, N, needs_grad=True)
    loss = qd.field(qd.f64, (), needs_grad=True)

    @qd.kernel
    def couple():
        for i in range(N):
            y[i] = qd.sin(x[i]) * x[(i + 1) % N]

    @qd.kernel
    def reduce():
        for i in range(N):
            loss[None] += y[i] * y[i] + qd.exp(x[i]) * y[i]

    def f():
        couple()
        reduce()

    return x, loss, f


def _hvp_at(seed):
    """A fresh problem, a random point x0 and direction v, and hvp there."""
    x, loss, f = _problem()
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1.0, 1.0, N)
    v = rng.standard_normal(N)
    x.from_numpy(x0)
    return (x, loss, f), x0, v, qd.ad.hvp(f, loss, x, v)


def _gradient(x, loss, f, values):
    x.from_numpy(values)
    with qd.ad.Tape(loss=loss):
        f()
    return x.grad.to_numpy()


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], require=qd.extension.data64)
def test_hvp_matches_central_differences_of_the_gradient():
    (x, loss, f), x0, v, hv = _hvp_at(0)
    assert hv.shape == (N,)
    # hvp leaves the gradient in x.grad, as a Tape would.
    gradient = x.grad.to_numpy()
    np.testing.assert_allclose(gradient, _gradient(x, loss, f, x0), rtol=1e-12)
    # f64 central differences of the gradient, h = 1e-5: truncation ~h^2,
    # rounding ~1e-16 / h, so about 1e-10 absolute on O(1) entries.
    h = 1e-5
    fd = (_gradient(x, loss, f, x0 + h * v) - _gradient(x, loss, f, x0 - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-7, atol=1e-8)
    assert np.abs(hv).max() > 1e-2


@test_utils.test(arch=[qd.cpu])
def test_hvp_matches_torch():
    torch = pytest.importorskip("torch")
    _, x0, v, hv = _hvp_at(1)

    def torch_loss(t):
        y = torch.sin(t) * torch.roll(t, -1)
        return (y * y + torch.exp(t) * y).sum()

    _, expected = torch.autograd.functional.hvp(
        torch_loss, torch.tensor(x0), torch.tensor(v))
    np.testing.assert_allclose(hv, expected.numpy(), rtol=1e-12, atol=1e-12)


@test_utils.test(arch=[qd.cpu])
def test_hvp_refusals_say_why():
    x, loss, f = _problem()
    with pytest.raises(qd.QuadrantsTypeError, match="shape"):
        qd.ad.hvp(f, loss, x, np.ones(N + 1))
    plain = qd.field(qd.f64, N)
    with pytest.raises(QuadrantsGradientError, match="needs_grad"):
        qd.ad.hvp(f, loss, plain, np.ones(N))

    arr = qd.ndarray(qd.f64, (N,))

    @qd.kernel
    def through_ndarray(a: qd.types.ndarray()):
        for i in range(N):
            loss[None] += a[i] * x[i] * x[i]

    with pytest.raises(QuadrantsGradientError, match="ndarray 'a'"):
        qd.ad.hvp(lambda: through_ndarray(arr), loss, x, np.ones(N))



@test_utils.test(arch=[qd.cpu], require=qd.extension.adstack)
def test_hvp_through_an_adstack_loop_is_refused_for_now():
    x, loss, _ = _problem()

    @qd.kernel
    def dynamic_loop():
        for i in range(N):
            acc = x[i]
            for _ in range(i):
                acc = qd.sin(acc)
            loss[None] += acc * acc

    with pytest.raises(QuadrantsGradientError, match="dynamic_loop.*adstack"):
        qd.ad.hvp(dynamic_loop, loss, x, np.ones(N))
