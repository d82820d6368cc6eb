"""Autodiff through vectors and matrices: a loop-carried vec3 in a dynamic
loop (one adstack per component, sized at launch), qd.ad.Tape over vector
fields, and forward mode with a vector parameter, each against f64
central differences of a numpy reference.

Tolerances: f64 against central differences with h = 1e-6 (truncation
~1e-12, cancellation ~1e-10): rel 1e-7. f32 kernels accumulate ~1e-7
relative rounding per step over at most a few dozen steps: rel 2e-4.
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

_GTOL = {"f64": dict(rtol=1e-7, atol=1e-8), "f32": dict(rtol=2e-4, atol=2e-4)}
_DT = {"f64": (qd.f64, np.float64), "f32": (qd.f32, np.float32)}


def _rotation_loop_ref(p0, R, v, dt, n):
    """loss = sum_i |p_i(n)|^2 after p <- R p + dt * v * sin(p.x)... the
    linear update of the kernel below, per sample."""
    total = 0.0
    for i in range(p0.shape[0]):
        p = p0[i]
        for _ in range(n):
            p = R @ p + dt * v
        total += np.sum(p * p)
    return total


def _central(fn, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += h
        xm[idx] -= h
        g[idx] = (fn(xp) - fn(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("dt_name", ["f32", "f64"])
@test_utils.test(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
                 debug=True, default_ad_stack_size=2)
def test_loop_carried_vec3_adstack(dt_name):
    _require_dtype(dt_name)
    qd_dt, np_dt = _DT[dt_name]
    samples = 3
    p0 = qd.Vector.field(3, qd_dt, shape=samples, needs_grad=True)
    R = qd.Matrix.field(3, 3, qd_dt, shape=(), needs_grad=True)
    v = qd.Vector.field(3, qd_dt, shape=(), needs_grad=True)
    n = qd.field(qd.i32, shape=())
    loss = qd.field(qd_dt, shape=(), needs_grad=True)
    dt = 0.1

    @qd.kernel
    def run():
        for i in range(samples):
            p = p0[i]
            for _ in range(n[None]):
                p = R[None] @ p + dt * v[None]
            loss[None] += p.dot(p)

    rng = np.random.default_rng(3)
    p0_np = rng.uniform(-1, 1, (samples, 3))
    c, s = np.cos(0.3), np.sin(0.3)
    R_np = np.array([[c, -s, 0], [s, c, 0], [0, 0, 0.9]]) + rng.uniform(-0.05, 0.05, (3, 3))
    v_np = rng.uniform(-1, 1, 3)
    p0.from_numpy(p0_np.astype(np_dt))
    R.from_numpy(R_np.astype(np_dt))
    v.from_numpy(v_np.astype(np_dt))
    p0_np, R_np, v_np = (f.to_numpy().astype(np.float64) for f in (p0, R, v))
    for trips in (7, 12):
        n[None] = trips
        with qd.ad.Tape(loss=loss):
            run()
        # One stack per component of p, each of trips + 2 slots, sized at launch.
        caps = sorted(c for task in runtime.adstack_stats()["capacities"] for c in task)
        assert caps == [trips + 2] * 3
        assert loss[None] == pytest.approx(_rotation_loop_ref(p0_np, R_np, v_np, dt, trips),
                                           rel=_GTOL[dt_name]["rtol"])
        np.testing.assert_allclose(
            p0.grad.to_numpy(),
            _central(lambda x: _rotation_loop_ref(x, R_np, v_np, dt, trips), p0_np),
            **_GTOL[dt_name])
        np.testing.assert_allclose(
            R.grad.to_numpy(),
            _central(lambda x: _rotation_loop_ref(p0_np, x, v_np, dt, trips), R_np),
            **_GTOL[dt_name])
        np.testing.assert_allclose(
            v.grad.to_numpy(),
            _central(lambda x: _rotation_loop_ref(p0_np, R_np, x, dt, trips), v_np),
            **_GTOL[dt_name])


@test_utils.test()
def test_loop_carried_vector_needs_adstack_when_disabled():
    p0 = qd.Vector.field(2, qd.f32, shape=(), needs_grad=True)
    n = qd.field(qd.i32, shape=())
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def run():
        for _ in range(1):
            p = p0[None]
            for _ in range(n[None]):
                p = qd.sin(p) * p.yx
            loss[None] += p.sum()

    n[None] = 3
    run()
    with pytest.raises(qd.QuadrantsCompilationError):
        run.grad()


def _spring_ref(x, k):
    """Energy of a chain of 2-D points with unit rest lengths."""
    d = x[1:] - x[:-1]
    length = np.linalg.norm(d, axis=-1)
    return 0.5 * k * np.sum((length - 1.0) ** 2)


@pytest.mark.parametrize("dt_name", ["f32", "f64"])
@test_utils.test()
def test_tape_over_vector_fields(dt_name):
    _require_dtype(dt_name)
    qd_dt, np_dt = _DT[dt_name]
    pts = 6
    x = qd.Vector.field(2, qd_dt, shape=pts, needs_grad=True)
    energy = qd.field(qd_dt, shape=(), needs_grad=True)

    @qd.kernel
    def compute(k: qd_dt):
        for i in range(pts - 1):
            d = x[i + 1] - x[i]
            energy[None] += 0.5 * k * (d.norm() - 1.0) ** 2

    x_np = np.stack([np.arange(pts) * 1.2, np.sin(np.arange(pts))], -1)
    x.from_numpy(x_np.astype(np_dt))
    x_np = x.to_numpy().astype(np.float64)
    with qd.ad.Tape(loss=energy):
        compute(3.0)
    assert energy[None] == pytest.approx(_spring_ref(x_np, 3.0), rel=_GTOL[dt_name]["rtol"])
    np.testing.assert_allclose(x.grad.to_numpy(), _central(lambda v: _spring_ref(v, 3.0), x_np),
                               **_GTOL[dt_name])


@pytest.mark.parametrize("dt_name", ["f32", "f64"])
@test_utils.test()
def test_forward_mode_vector_param(dt_name):
    _require_dtype(dt_name)
    qd_dt, np_dt = _DT[dt_name]
    x = qd.Vector.field(3, qd_dt, shape=2, needs_dual=True)
    M = qd.Matrix.field(3, 3, qd_dt, shape=(), needs_dual=True)
    loss = qd.field(qd_dt, shape=(), needs_dual=True)

    @qd.kernel
    def compute():
        for i in range(2):
            y = M[None] @ x[i]
            loss[None] += y.normalized().dot(x[i]) + y.cross(x[i]).norm_sqr()

    def ref(xv, Mv):
        total = 0.0
        for i in range(2):
            y = Mv @ xv[i]
            total += np.dot(y / np.linalg.norm(y), xv[i]) + np.sum(np.cross(y, xv[i]) ** 2)
        return total

    rng = np.random.default_rng(5)
    x_np, M_np = rng.uniform(-1, 1, (2, 3)), np.eye(3) + rng.uniform(-0.3, 0.3, (3, 3))
    x.from_numpy(x_np.astype(np_dt))
    M.from_numpy(M_np.astype(np_dt))
    x_np, M_np = x.to_numpy().astype(np.float64), M.to_numpy().astype(np.float64)
    seed = rng.uniform(-1, 1, (2, 3))
    with qd.ad.FwdMode(loss=loss, param=x, seed=seed.reshape(-1).tolist()):
        compute()
    expected = np.sum(_central(lambda v: ref(v, M_np), x_np) * seed)
    assert loss.dual[None] == pytest.approx(expected, rel=_GTOL[dt_name]["rtol"],
                                            abs=_GTOL[dt_name]["atol"])
