"""The adstack at scale, on every available arch: 2^20 threads carrying five
f64 values through a dynamic loop with every stack forced to 4096 slots, and
2^16 threads overflowing their stacks at once.

Reference: the same recurrence in numpy, vectorized over the threads, with
its gradient by f64 central differences (h = 1e-6: truncation h^2|f'''|/6 <
1e-12 and round-off ~ eps * |loss_i| / h < 1e-9 per element for these O(1)
values), so rel 1e-6 / abs 1e-9 separates a wrong adjoint (off by O(1)) from
rounding.
"""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

THREADS = 1 << 20
STEPS = 40


def _five_values(xs, steps=STEPS):
    a = xs
    b, c, d, e = a * 0.5, np.cos(a), a * a, 0.3 + 0.0 * a
    for j in range(steps):
        a, b, c, d, e = (a * 0.9 + 0.1 * np.sin(a + b),
                         b * 0.9 + 0.1 * np.cos(c + 0.01 * j),
                         c * 0.9 + 0.1 * np.tanh(d),
                         d * 0.9 + 0.1 * np.sin(e),
                         e * 0.9 + 0.1 * np.exp(-a * a))
    return a + 2.0 * b + 3.0 * c + 4.0 * d + 5.0 * e  # per thread


@test_utils.test(ad_stack_experimental_enabled=True, default_fp=qd.f64,
                 ad_stack_size=4096, require=qd.extension.data64)
def test_five_f64_stacks_of_4096_slots_over_a_million_threads():
    x = qd.field(qd.f64, shape=THREADS, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.linspace(-0.6, 0.9, THREADS)
    x.from_numpy(xv)

    @qd.kernel
    def five(n: qd.i32):
        for i in x:
            a = x[i]
            b = a * 0.5
            c = qd.cos(a)
            d = a * a
            e = 0.3 + 0.0 * a
            for j in range(n):
                na = a * 0.9 + 0.1 * qd.sin(a + b)
                nb = b * 0.9 + 0.1 * qd.cos(c + 0.01 * j)
                nc = c * 0.9 + 0.1 * qd.tanh(d)
                nd = d * 0.9 + 0.1 * qd.sin(e)
                ne = e * 0.9 + 0.1 * qd.exp(-a * a)
                a = na
                b = nb
                c = nc
                d = nd
                e = ne
            loss[None] += a + 2.0 * b + 3.0 * c + 4.0 * d + 5.0 * e

    with qd.ad.Tape(loss=loss):
        five(STEPS)
    h = 1e-6
    expected = (_five_values(xv + h) - _five_values(xv - h)) / (2 * h)
    assert loss[None] == pytest.approx(_five_values(xv).sum(), rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-6, atol=1e-9)
    s = qd.lang.runtime.adstack_stats()
    assert len(s["capacities"][0]) >= 5 and set(s["capacities"][0]) == {4096}, s
    assert s["per_thread_stride"][0] >= 5 * 4096 * 8, s
    assert s["heap_bytes"] >= s["bytes_needed"] > 0


@test_utils.test(ad_stack_experimental_enabled=True, default_fp=qd.f64, debug=True,
                 ad_stack_size=32, require=qd.extension.data64)
def test_many_threads_overflowing_at_once_raise_one_error():
    n = 1 << 16
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.1, 0.8, n))

    @qd.kernel
    def deep(steps: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(steps):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v

    deep(100)
    loss.grad[None] = 1
    with pytest.raises(qd.QuadrantsError, match="Adstack overflow") as info:
        deep.grad(100)  # every thread pushes 102 > 32 slots; debug: at the call
    assert "deep" in str(info.value)
    qd.sync()  # exactly one error: the flag was reset

    # A launch within capacity (20 + 2 <= 32) runs clean and right.
    x.grad.fill(0)
    deep.grad(20)
    qd.sync()
    xs = x.to_numpy()
    h = 1e-6

    def f(v):
        for _ in range(20):
            v = np.sin(v) * 0.9 + 0.1
        return v
    np.testing.assert_allclose(x.grad.to_numpy(), (f(xs + h) - f(xs - h)) / (2 * h),
                               rtol=1e-6, atol=1e-9)
