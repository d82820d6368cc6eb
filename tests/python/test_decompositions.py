"""qd.svd and qd.polar_decompose (2x2 and 3x3): forward results against
numpy, gradients against f64 central differences of numpy references.

Inputs are 2I + noise (det > 0, singular values well separated), where
both decompositions are unique up to the sign conventions fixed here, so
quantities built from them (singular values, the polar rotation and
stretch) are smooth and their numpy references are exact.

Tolerances: the f64 Jacobi sweeps converge to rounding (rel 1e-9 forward,
1e-6 for gradients against central differences with h = 1e-6). f32:
every rotation costs a few ulp, ~1e-6 after all sweeps (rel 1e-5 forward),
and the gradient chain through the sweeps amplifies it by the inverse
singular-value gaps (~5 here): rel 1e-3.
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils


def _require_dtype(dt):
    """f64 cases skip on archs without 64-bit data (qd.extension.data64)."""
    arch = runtime.state.options.get("arch", runtime.cpu)
    if dt == "f64" and not qd.is_extension_supported(arch, qd.extension.data64):
        pytest.skip(f"arch {arch} has no f64 (qd.extension.data64)")

N = 3
_DT = {"f64": (qd.f64, np.float64), "f32": (qd.f32, np.float32)}
_FTOL = {"f64": dict(rtol=1e-9, atol=1e-9), "f32": dict(rtol=1e-5, atol=1e-5)}
_GTOL = {"f64": dict(rtol=1e-6, atol=1e-6), "f32": dict(rtol=1e-3, atol=1e-3)}


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    base = np.diag(np.linspace(2.5, 1.5, n))
    return base + rng.uniform(-0.4, 0.4, (N, n, n))


def _polar_ref(a):
    u, s, vt = np.linalg.svd(a)
    return u @ vt, vt.T @ np.diag(s) @ vt


def _check_forward(a, u, s, v, r, p, n, dt):
    """U S V^T = A with rotations U, V and S diagonal and sorted like numpy's;
    R P = A with R a rotation and P symmetric, equal to numpy's polar
    factors."""
    tol = _FTOL[dt]
    np.testing.assert_allclose(u @ s @ np.swapaxes(v, 1, 2), a, **tol)
    np.testing.assert_allclose(np.diagonal(s, axis1=1, axis2=2), np.linalg.svd(a)[1], **tol)
    np.testing.assert_allclose(s - np.stack([np.diag(np.diagonal(x)) for x in s]), 0, **tol)
    for q in (u, v, r):
        np.testing.assert_allclose(q @ np.swapaxes(q, 1, 2), np.broadcast_to(np.eye(n), q.shape),
                                   **tol)
        np.testing.assert_allclose(np.linalg.det(q), 1.0, **tol)
    np.testing.assert_allclose(r @ p, a, **tol)
    np.testing.assert_allclose(p, np.swapaxes(p, 1, 2), **tol)
    ref_r, ref_p = zip(*[_polar_ref(x) for x in a])
    np.testing.assert_allclose(r, np.array(ref_r), **tol)
    np.testing.assert_allclose(p, np.array(ref_p), **tol)


def _central(fn, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        g[idx] = (fn(xp) - fn(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
@test_utils.test()
def test_svd_and_polar(n, dt):
    _require_dtype(dt)
    qd_dt, np_dt = _DT[dt]
    A = qd.Matrix.field(n, n, qd_dt, shape=N, needs_grad=True)
    W1, W2, W3 = (qd.Matrix.field(n, n, qd_dt, shape=N) for _ in range(3))
    outputs = [qd.Matrix.field(n, n, qd_dt, shape=N) for _ in range(5)]
    Uf, Sf, Vf, Rf, Pf = outputs
    loss = qd.field(qd_dt, shape=(), needs_grad=True)

    @qd.kernel
    def k():
        for i in A:
            U, S, V = qd.svd(A[i])
            R, P = qd.polar_decompose(A[i])
            Uf[i], Sf[i], Vf[i], Rf[i], Pf[i] = U, S, V, R, P
            loss[None] += (S * W1[i]).sum() + (R * W2[i]).sum() + (P * W3[i]).sum()

    rng = np.random.default_rng(11)
    w = [rng.uniform(-1, 1, (N, n, n)) for _ in range(3)]
    for f, x in zip((W1, W2, W3), w):
        f.from_numpy(x.astype(np_dt))
    A.from_numpy(_inputs(n, 1).astype(np_dt))
    a = A.to_numpy().astype(np.float64)
    w = [f.to_numpy().astype(np.float64) for f in (W1, W2, W3)]

    def ref(x):
        total = 0.0
        for i in range(N):
            r, p = _polar_ref(x[i])
            s = np.diag(np.linalg.svd(x[i])[1])
            total += np.sum(s * w[0][i]) + np.sum(r * w[1][i]) + np.sum(p * w[2][i])
        return total

    with qd.ad.Tape(loss=loss):
        k()
    _check_forward(a, *(f.to_numpy() for f in outputs), n, dt)
    assert loss[None] == pytest.approx(ref(a), rel=_FTOL[dt]["rtol"] * 10)
    np.testing.assert_allclose(A.grad.to_numpy(), _central(ref, a), **_GTOL[dt])


@test_utils.test()
def test_decompositions_reject_other_sizes():
    A = qd.Matrix.field(4, 4, qd.f32, shape=())

    @qd.kernel
    def k():
        U, S, V = qd.svd(A[None])
        A[None] = U @ S @ V

    with pytest.raises(qd.QuadrantsTypeError, match="2x2 and 3x3.*4x4"):
        k()


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
@test_utils.test()
def test_sym_eig_and_solve(n, dt):
    _require_dtype(dt)
    qd_dt, np_dt = _DT[dt]
    A = qd.Matrix.field(n, n, qd_dt, shape=N, needs_grad=True)
    b = qd.Vector.field(n, qd_dt, shape=N, needs_grad=True)
    lam = qd.Vector.field(n, qd_dt, shape=N)
    vecs = qd.Matrix.field(n, n, qd_dt, shape=N)
    x = qd.Vector.field(n, qd_dt, shape=N)
    loss = qd.field(qd_dt, shape=(), needs_grad=True)
    weights = np.linspace(1.0, 2.0, n)

    @qd.kernel
    def k():
        for i in A:
            S = A[i] + A[i].transpose()
            ev, V = qd.sym_eig(S)
            sol = qd.solve(A[i], b[i])
            lam[i], vecs[i], x[i] = ev, V, sol
            for c in qd.static(range(n)):
                loss[None] += weights[c] * ev[c] + sol[c] * (c + 1.0)

    rng = np.random.default_rng(4)
    A.from_numpy(_inputs(n, 2).astype(np_dt))
    b.from_numpy(rng.uniform(-1, 1, (N, n)).astype(np_dt))
    a, bv = A.to_numpy().astype(np.float64), b.to_numpy().astype(np.float64)

    def ref(a_, b_):
        total = 0.0
        for i in range(N):
            ev = np.linalg.eigvalsh(a_[i] + a_[i].T)
            total += np.sum(weights * ev) + np.sum(np.linalg.solve(a_[i], b_[i]) *
                                                   np.arange(1, n + 1))
        return total

    with qd.ad.Tape(loss=loss):
        k()
    s = a + np.swapaxes(a, 1, 2)
    l_np, v_np = lam.to_numpy(), vecs.to_numpy()
    tol = _FTOL[dt]
    np.testing.assert_allclose(l_np, np.stack([np.linalg.eigvalsh(m) for m in s]), **tol)
    np.testing.assert_allclose(s @ v_np, v_np * l_np[:, None, :], **tol)
    np.testing.assert_allclose(x.to_numpy(), np.linalg.solve(a, bv[..., None])[..., 0], **tol)
    np.testing.assert_allclose(A.grad.to_numpy(), _central(lambda v: ref(v, bv), a), **_GTOL[dt])
    np.testing.assert_allclose(b.grad.to_numpy(), _central(lambda v: ref(a, v), bv), **_GTOL[dt])
