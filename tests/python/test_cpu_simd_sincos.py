"""sin and cos of one value in CPU SIMD lanes, and the gradient kernels that
rely on it.

In lanes, an f32 sin and cos of the same value in one block are one vector
call (simd_math.h SinCos: one range reduction, two polynomials), held to the
same 1 ulp as the separate functions. Because the pair costs about one
evaluation, the CPU backend with lanes has reverse mode stack the derivative
of each f32 sin and cos in an adstack loop (cos x for sin x) during the
forward replay, next to the value, and the reverse sweep reads it back
instead of evaluating it again. Gradients must not change: each is checked
against an f64 reference and against cpu_simd=False, where nothing is
stacked.
"""

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

N = 4099  # past any vector width, with a remainder


def ulps(got, want):
    """|got - want| in units of the f32 spacing at want (want in longdouble)."""
    rounded = want.astype(np.float32)
    exact = got == rounded
    spacing = np.spacing(np.abs(rounded)).astype(np.longdouble)
    err = (np.abs(got.astype(np.longdouble) - want) / spacing).astype(np.float64)
    return np.where(exact, 0.0, err)


def sin_and_cos(x, simd):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False)

    @qd.kernel
    def both(xs: qd.types.ndarray(qd.f32, 1), s: qd.types.ndarray(qd.f32, 1),
             c: qd.types.ndarray(qd.f32, 1)):
        for i in range(xs.shape[0]):
            v = xs[i]
            s[i] = qd.sin(v)
            c[i] = qd.cos(v)

    s = np.zeros(len(x), np.float32)
    c = np.zeros(len(x), np.float32)
    both(x, s, c)
    return s, c


@pytest.mark.parametrize("simd", [True, False], ids=["vector", "scalar"])
def test_sin_and_cos_of_one_value_within_1_ulp(simd):
    # Past 1e5 lanes take the C library; every 7th input is tiny, where
    # sin's relative accuracy is hardest to keep; multiples of pi/4 (the
    # reduction's quadrant edges) are included.
    x = np.linspace(-2e5, 2e5, N)
    x[::7] = np.geomspace(1e-20, 1e-1, len(x[::7])) * np.where(
        np.arange(len(x[::7])) % 2 == 0, 1, -1)
    x[1::7] = np.arange(len(x[1::7])) * (np.pi / 4) - 200 * np.pi
    x = x.astype(np.float32)
    s, c = sin_and_cos(x, simd)
    wide = x.astype(np.longdouble)
    for got, want in ((s, np.sin(wide)), (c, np.cos(wide))):
        err = ulps(got, want)
        assert err.max() <= 1.0, (float(err.max()), x[np.argmax(err)])


def test_sin_and_cos_special_values_match_scalar():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e30, -1e30,
                  1e5, -123456.0, np.pi / 2, np.pi, 3 * np.pi / 2] * 7, np.float32)
    with np.errstate(all="ignore"):
        lanes = sin_and_cos(x, True)
        scalar = sin_and_cos(x, False)
    for a, b in zip(lanes, scalar):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(b)
        np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(b[ok]))
        assert np.all(np.abs(a[ok] - b[ok]) <= np.spacing(np.abs(b[ok]))), (a, b)


def test_debug_log_counts_sin_cos_pairs_evaluated_together(tmp_path):
    log = test_utils.run_debug_logged("""
        import quadrants as qd
        qd.init(arch=qd.cpu, offline_cache=False)
        f = qd.field(qd.f32, shape=100)
        g = qd.field(qd.f32, shape=100)

        @qd.kernel
        def paired():
            for i in f:
                v = f[i]
                w = g[i]
                f[i] = qd.sin(v) * qd.cos(v) + qd.cos(w) - qd.sin(w)

        @qd.kernel
        def different_values():
            for i in f:
                v = f[i]
                w = g[i]
                f[i] = qd.sin(v) + qd.cos(w)

        @qd.kernel
        def different_blocks():
            for i in f:
                u = f[i]
                v = qd.sin(u)
                if v > 0:
                    v += qd.cos(u)  # runs only in some lanes
                f[i] = v

        paired()
        different_values()
        different_blocks()
    """, tmp_path)

    def line(kernel):
        found = [l for l in log.splitlines() if f"kernel '{kernel}'" in l]
        assert found, log
        assert "SIMD lanes" in found[0], found[0]
        return found[0]

    assert "2 sin/cos pair(s) of one value evaluated together" in line("paired")
    assert "sin/cos pair" not in line("different_values")
    assert "sin/cos pair" not in line("different_blocks")


THREADS = 203  # several lane steps and a partial one
A = 0.9


def recurrence_reference(x, trips):
    """d(sum of v_final)/dx in f64 for v <- sin(v) * A + cos(x) * x, by
    forward-mode (dual numbers) per thread."""
    grad = np.zeros(len(x))
    for i, (x0, n) in enumerate(zip(x.astype(np.float64), trips)):
        v, dv = x0, 1.0
        for _ in range(n):
            v, dv = (np.sin(v) * A + np.cos(x0) * x0,
                     np.cos(v) * A * dv + np.cos(x0) - np.sin(x0) * x0)
        grad[i] = dv
    return grad


def run_recurrence(simd, x, trips, dynamic):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False,
            ad_stack_experimental_enabled=True)
    xs = qd.field(qd.f32, shape=len(x), needs_grad=True)
    ns = qd.field(qd.i32, shape=len(x))
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    xs.from_numpy(x)
    ns.from_numpy(trips.astype(np.int32))

    @qd.kernel
    def fixed():
        for i in xs:
            v = xs[i]
            for _ in range(16):
                v = qd.sin(v) * A + qd.cos(xs[i]) * xs[i]
            loss[None] += v

    @qd.kernel
    def per_lane():
        for i in xs:
            v = xs[i]
            for _ in range(ns[i]):  # a different stack depth per lane
                v = qd.sin(v) * A + qd.cos(xs[i]) * xs[i]
            loss[None] += v

    kernel = per_lane if dynamic else fixed
    kernel()
    loss.grad[None] = 1.0
    kernel.grad()
    stacks = len(qd.lang.runtime.adstack_stats()["capacities"][0])
    return xs.grad.to_numpy(), stacks


@pytest.mark.parametrize("dynamic", [False, True], ids=["fixed", "per_lane"])
def test_stacked_trig_derivatives_give_the_same_gradient(dynamic):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, THREADS).astype(np.float32)
    trips = rng.integers(0, 30, THREADS) if dynamic else np.full(THREADS, 16)
    want = recurrence_reference(x, trips)
    lanes, lane_stacks = run_recurrence(True, x, trips, dynamic)
    scalar, scalar_stacks = run_recurrence(False, x, trips, dynamic)
    # f32 sums of up to 30 contracting steps (|d v'/d v| <= 0.9): a few ulps
    # of the largest terms.
    scale = np.maximum(np.abs(want), 1.0)
    assert np.max(np.abs(lanes - want) / scale) < 2e-5
    assert np.max(np.abs(scalar - want) / scale) < 2e-5
    # With lanes, the replay stacks cos v for sin v and sin x[i] for
    # cos x[i], both run directly in the loop's body. The sweep then reads
    # no other value of v, so v's own stack is dead and goes. The scalar
    # path stacks only v.
    assert scalar_stacks == 1
    assert lane_stacks == 2


def test_stacked_derivatives_in_while_and_nested_loops_and_branches():
    """sin and cos directly in a while loop's body, in an inner loop, and
    under a branch (not stacked: it runs only in some iterations)."""
    n = 67
    x = np.linspace(0.1, 1.2, n).astype(np.float32)

    def build():
        xs = qd.field(qd.f32, shape=n, needs_grad=True)
        loss = qd.field(qd.f32, shape=(), needs_grad=True)
        xs.from_numpy(x)

        @qd.kernel
        def run():
            for i in xs:
                v = xs[i]
                k = 0
                while k < i % 5 + 2:
                    v = qd.cos(v) + 0.5 * qd.sin(v)
                    for _ in range(3):
                        v = v * 0.8 + 0.1 * qd.sin(v + xs[i])
                    if v > 0.7:
                        v = v - 0.2 * qd.cos(v)
                    k += 1
                loss[None] += v

        run()
        loss.grad[None] = 1.0
        run.grad()
        return xs.grad.to_numpy()

    qd.init(arch=qd.cpu, cpu_simd=True, offline_cache=False,
            ad_stack_experimental_enabled=True)
    lanes = build()
    qd.init(arch=qd.cpu, cpu_simd=False, offline_cache=False,
            ad_stack_experimental_enabled=True)
    scalar = build()

    def forward(x0, trips):
        v = x0
        for _ in range(trips):
            v = np.cos(v) + 0.5 * np.sin(v)
            for _ in range(3):
                v = v * 0.8 + 0.1 * np.sin(v + x0)
            if v > 0.7:
                v = v - 0.2 * np.cos(v)
        return v

    h = 1e-6
    want = np.array([(forward(float(x0) + h, i % 5 + 2) - forward(float(x0) - h, i % 5 + 2))
                     / (2 * h) for i, x0 in enumerate(x)])
    np.testing.assert_allclose(lanes, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scalar, want, rtol=1e-4, atol=1e-5)


def test_a_loop_invariant_input_is_not_stacked():
    """cos(t) of a t the loop never writes is the same in every iteration:
    the sweep recomputes its derivative instead of stacking it per
    iteration; only sin(v)'s joins v's stack."""
    n = 131
    x = np.linspace(-1.0, 1.5, n).astype(np.float32)

    def run(simd):
        qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False,
                ad_stack_experimental_enabled=True)
        xs = qd.field(qd.f32, shape=n, needs_grad=True)
        loss = qd.field(qd.f32, shape=(), needs_grad=True)
        xs.from_numpy(x)

        @qd.kernel
        def invariant():
            for i in xs:
                v = xs[i]
                t = xs[i] * 0.5
                for _ in range(12):
                    v = qd.sin(v) * qd.cos(t) + t
                loss[None] += v

        invariant()
        loss.grad[None] = 1.0
        invariant.grad()
        return xs.grad.to_numpy(), len(qd.lang.runtime.adstack_stats()["capacities"][0])

    def forward(x0):
        v, t = x0, 0.5 * x0
        for _ in range(12):
            v = np.sin(v) * np.cos(t) + t
        return v

    h = 1e-6
    want = np.array([(forward(float(a) + h) - forward(float(a) - h)) / (2 * h) for a in x])
    (lanes, lane_stacks), (scalar, scalar_stacks) = run(True), run(False)
    np.testing.assert_allclose(lanes, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scalar, want, rtol=1e-4, atol=1e-5)
    assert (lane_stacks, scalar_stacks) == (2, 1)
