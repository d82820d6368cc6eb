"""Gradient kernels on CUDA and AMDGPU stack the derivative of each f32 sin
and cos run once per iteration of an adstack loop (cos v for sin v): the
inlined math library shares one range reduction between sin and cos of a
value, and the reverse sweep then reads the derivative instead of
evaluating it. Gradients are checked against an f64 forward-mode
reference; the stack count shows the derivatives were stacked (v's own
stack is dead once cos v is stacked, sin x[i] takes a stack of its own)."""
import numpy as np

import quadrants as qd
from tests import test_utils

A = 0.9
THREADS = 1000  # several blocks and a partial one


def reference(x, trips):
    """d(v_final)/dx in f64 for v <- sin(v) * A + cos(x) * x, by dual
    numbers per element."""
    grad = np.zeros(len(x))
    for i, (x0, n) in enumerate(zip(x.astype(np.float64), trips)):
        v, dv = x0, 1.0
        for _ in range(n):
            v, dv = (np.sin(v) * A + np.cos(x0) * x0,
                     np.cos(v) * A * dv + np.cos(x0) - np.sin(x0) * x0)
        grad[i] = dv
    return grad


@test_utils.test(arch=[qd.cuda, qd.amdgpu], require=qd.extension.adstack,
                 ad_stack_experimental_enabled=True)
def test_stacked_sin_cos_derivatives_give_the_reference_gradient():
    rng = np.random.default_rng(5)
    x = rng.uniform(-2.0, 2.0, THREADS).astype(np.float32)
    trips = rng.integers(0, 40, THREADS)
    xs = qd.field(qd.f32, shape=THREADS, needs_grad=True)
    ns = qd.field(qd.i32, shape=THREADS)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    xs.from_numpy(x)
    ns.from_numpy(trips.astype(np.int32))

    @qd.kernel
    def recurrence():
        for i in xs:
            v = xs[i]
            for _ in range(ns[i]):
                v = qd.sin(v) * A + qd.cos(xs[i]) * xs[i]
            loss[None] += v

    recurrence()
    loss.grad[None] = 1.0
    recurrence.grad()
    got = xs.grad.to_numpy()
    want = reference(x, trips)
    # f32 sums of up to 40 contracting steps (|dv'/dv| <= 0.9): a few ulps
    # of the largest terms.
    scale = np.maximum(np.abs(want), 1.0)
    assert np.max(np.abs(got - want) / scale) < 2e-5
    # cos v for sin v and sin x[i] for cos x[i]; without stacked
    # derivatives only v would be stacked.
    assert len(qd.lang.runtime.adstack_stats()["capacities"][0]) == 2
