"""qd.ad.hvp: Hessian-vector products by forward mode over the gradient
kernels (fields and ndarrays, through dynamic and checkpointed loops),
against f64 central differences of the taped gradient and against
torch.autograd.functional.hvp of a torch restatement; and its refusals."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
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


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], require=qd.extension.data64)
def test_hvp_of_a_vector_field():
    # Particles on a ring of nonlinear springs: E = sum (|p_{i+1} - p_i|^2 - 1)^2.
    n = 5
    p = qd.Vector.field(2, qd.f64, n, needs_grad=True)
    energy = qd.field(qd.f64, (), needs_grad=True)

    @qd.kernel
    def springs():
        for i in range(n):
            d = p[(i + 1) % n] - p[i]
            stretch = d.dot(d) - 1.0
            energy[None] += stretch * stretch

    def gradient(values):
        p.from_numpy(values)
        with qd.ad.Tape(loss=energy):
            springs()
        return p.grad.to_numpy()

    rng = np.random.default_rng(6)
    p0 = rng.standard_normal((n, 2))
    v = rng.standard_normal((n, 2))
    p.from_numpy(p0)
    hv = qd.ad.hvp(springs, energy, p, v)
    assert hv.shape == (n, 2)
    h = 1e-5  # f64 central differences: ~1e-10 absolute here
    fd = (gradient(p0 + h * v) - gradient(p0 - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-7, atol=1e-7)
    with pytest.raises(qd.QuadrantsTypeError, match=r"\(5, 2\)"):
        qd.ad.hvp(springs, energy, p, np.ones(n))


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], require=qd.extension.data64)
def test_hvp_through_ndarrays():
    # _problem's loss with x, the intermediate y and the loss in ndarrays.
    x = qd.ndarray(qd.f64, (N,), needs_grad=True)
    y = qd.ndarray(qd.f64, (N,), needs_grad=True)
    loss = qd.ndarray(qd.f64, (1,), needs_grad=True)

    @qd.kernel
    def couple(x: qd.types.ndarray(), y: qd.types.ndarray()):
        for i in range(N):
            y[i] = qd.sin(x[i]) * x[(i + 1) % N]

    @qd.kernel
    def reduce(x: qd.types.ndarray(), y: qd.types.ndarray(), loss: qd.types.ndarray()):
        for i in range(N):
            loss[0] += y[i] * y[i] + qd.exp(x[i]) * y[i]

    def f():
        couple(x, y)
        reduce(x, y, loss)

    rng = np.random.default_rng(7)
    x0 = rng.uniform(-1.0, 1.0, N)
    v = rng.standard_normal(N)
    x.from_numpy(x0)
    hv = qd.ad.hvp(f, loss, x, v)
    # The same function through fields gives the same products.
    xf, lossf, ff = _problem()
    xf.from_numpy(x0)
    np.testing.assert_allclose(hv, qd.ad.hvp(ff, lossf, xf, v), rtol=1e-12, atol=1e-12)
    assert np.abs(hv).max() > 1e-2


@test_utils.test(arch=[qd.cpu])
def test_hvp_refusals_say_why():
    x, loss, f = _problem()
    with pytest.raises(qd.QuadrantsTypeError, match="shape"):
        qd.ad.hvp(f, loss, x, np.ones(N + 1))
    plain = qd.field(qd.f64, N)
    with pytest.raises(QuadrantsGradientError, match="needs_grad"):
        qd.ad.hvp(f, loss, plain, np.ones(N))

    @qd.kernel
    def through_numpy(a: qd.types.ndarray()):
        for i in range(N):
            loss[None] += a[i] * x[i] * x[i]

    weights = np.ones(N)
    with pytest.raises(QuadrantsGradientError, match=r"'a' \(numpy.ndarray\)"):
        qd.ad.hvp(lambda: through_numpy(weights), loss, x, np.ones(N))


# ---- through dynamic loops (the adstack) and checkpointed loops --------------

M = 12
STEPS = 40


def _recurrence_problem():
    """A per-element recurrence run for a launch-time trip count, coupled to
    the next element: its gradient kernel needs the adstack. (Its locals
    follow default_fp, f64 here: f32 ones would leave central differences
    only f32's precision.)"""
    x = qd.field(qd.f64, M, needs_grad=True)
    loss = qd.field(qd.f64, (), needs_grad=True)

    @qd.kernel
    def recurrence(t: qd.i32):
        for i in x:
            v = x[i]
            w = 0.25
            for _ in range(t):
                v = qd.sin(v) * 0.9 + x[i] * qd.exp(-w) + 0.1 * x[(i + 1) % M]
                w = qd.tanh(w + v * v) * 0.5
            loss[None] += v * w

    return x, loss, lambda: recurrence(STEPS)


def _torch_recurrence(torch, t):
    v, w = t, torch.full_like(t, 0.25)
    for _ in range(STEPS):
        v = torch.sin(v) * 0.9 + t * torch.exp(-w) + 0.1 * torch.roll(t, -1)
        w = torch.tanh(w + v * v) * 0.5
    return (v * w).sum()


def _recurrence_hvp(x, loss, f, x0, v):
    x.from_numpy(x0)
    return qd.ad.hvp(f, loss, x, v)


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], require=qd.extension.adstack,
                 ad_stack_experimental_enabled=True, default_fp=qd.f64)
def test_hvp_through_a_dynamic_loop_matches_central_differences():
    x, loss, f = _recurrence_problem()
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0.1, 0.6, M)
    v = rng.standard_normal(M)
    hv = _recurrence_hvp(x, loss, f, x0, v)
    h = 1e-5  # f64: truncation ~h^2, rounding ~1e-16 / h
    fd = (_gradient(x, loss, f, x0 + h * v) - _gradient(x, loss, f, x0 - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-8)
    assert np.abs(hv).max() > 1e-2
    torch = pytest.importorskip("torch")
    _, expected = torch.autograd.functional.hvp(
        lambda t: _torch_recurrence(torch, t), torch.tensor(x0), torch.tensor(v))
    np.testing.assert_allclose(hv, expected.numpy(), rtol=1e-10, atol=1e-12)


@test_utils.test(arch=[qd.cpu, qd.cuda], require=qd.extension.adstack,
                 ad_stack_experimental_enabled=True, default_fp=qd.f64)
def test_hvp_through_a_checkpointed_loop_equals_the_unbudgeted_one():
    arch = runtime.state.arch
    rng = np.random.default_rng(4)
    x0 = rng.uniform(0.1, 0.6, M)
    v = rng.standard_normal(M)
    free = _recurrence_hvp(*_recurrence_problem(), x0, v)
    stats = runtime.adstack_stats()
    assert stats["checkpointed"] == 0
    # 60% of what the loop takes unsegmented: above what its smallest
    # checkpointed schedule needs per thread (about 43% here), so the loop
    # runs in segments with every thread a launch starts (128 at least on
    # cuda) rather than being refused.
    budget = stats["threads_at_once"] * max(stats["per_thread_stride"]) * 3 // 5
    qd.reset()
    qd.init(arch=arch, ad_stack_experimental_enabled=True, default_fp=qd.f64,
            ad_stack_max_bytes=budget)
    bounded = _recurrence_hvp(*_recurrence_problem(), x0, v)
    stats = runtime.adstack_stats()
    assert stats["checkpointed"] > 0, stats  # the loop ran in segments
    assert stats["heap_bytes"] <= budget
    # The same operations per thread; only atomic adds shared by threads
    # may sum in another order.
    np.testing.assert_allclose(bounded, free, rtol=1e-12, atol=1e-300)
    torch = pytest.importorskip("torch")
    _, expected = torch.autograd.functional.hvp(
        lambda t: _torch_recurrence(torch, t), torch.tensor(x0), torch.tensor(v))
    np.testing.assert_allclose(bounded, expected.numpy(), rtol=1e-10, atol=1e-12)
