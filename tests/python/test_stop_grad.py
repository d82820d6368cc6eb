"""qd.stop_grad(x): the value of x, through which no gradient flows."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_stop_grad_keeps_the_value_and_blocks_reverse_and_forward_mode():
    x = qd.field(qd.f64, shape=3, needs_grad=True, needs_dual=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True, needs_dual=True)
    xv = np.array([0.3, -0.7, 1.1])
    x.from_numpy(xv)

    @qd.kernel
    def compute():
        for i in x:
            # d/dx [x * stop(x)] is stop(x) = x, not 2x.
            loss[None] += x[i] * qd.stop_grad(x[i]) + qd.stop_grad(qd.sin(x[i]))

    with qd.ad.Tape(loss=loss):
        compute()
    assert loss[None] == pytest.approx(float(np.sum(xv * xv + np.sin(xv))), rel=1e-14)
    np.testing.assert_allclose(x.grad.to_numpy(), xv, rtol=1e-14)

    loss[None] = 0
    with qd.ad.FwdMode(loss=loss, param=x, seed=[0.0, 1.0, 0.0]):
        compute()
    assert loss.dual[None] == pytest.approx(xv[1], rel=1e-14)


@test_utils.test(ad_stack_experimental_enabled=True)
def test_stop_grad_inside_a_dynamic_loop():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.1, 0.4, 4).astype(np.float32))

    @qd.kernel
    def run(n: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(n):
                v = v + qd.stop_grad(qd.sin(v))  # only the identity part counts
            loss[None] += v

    with qd.ad.Tape(loss=loss):
        run(5)
    np.testing.assert_allclose(x.grad.to_numpy(), np.ones(4), rtol=1e-6)


def test_stop_grad_outside_a_kernel_is_the_value():
    assert qd.stop_grad(2.5) == 2.5
