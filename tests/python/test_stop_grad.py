"""qd.stop_grad(x): the value of x, through which no gradient flows; for a
field, its reads in the rest of the task carry no gradient."""
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


@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_stop_grad_of_a_field_lasts_to_the_end_of_its_task():
    """qd.stop_grad(field) in a loop: that task reads the field (every
    component of a vector field) as a constant; the next loop does not."""
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    v = qd.Vector.field(2, qd.f64, shape=4, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.array([0.5, -1.0, 2.0, 0.25])
    x.from_numpy(xv)
    v.from_numpy(np.stack([xv, 2 * xv], axis=1))

    @qd.kernel
    def compute():
        for i in x:
            qd.stop_grad(x)
            qd.stop_grad(v)
            loss[None] += x[i] ** 2 + v[i].dot(v[i])
        for i in x:
            loss[None] += 3.0 * x[i] ** 2 + v[i][1]

    with qd.ad.Tape(loss=loss):
        compute()
    np.testing.assert_allclose(x.grad.to_numpy(), 6.0 * xv, rtol=1e-14)
    np.testing.assert_allclose(v.grad.to_numpy(), np.tile([0.0, 1.0], (4, 1)), rtol=1e-14)


def test_stop_grad_of_a_field_outside_a_kernel_is_refused():
    qd.init(arch=qd.cpu)
    try:
        x = qd.field(qd.f32, shape=2)
        with pytest.raises(qd.QuadrantsSyntaxError, match="stop_grad.field. can only"):
            qd.stop_grad(x)
    finally:
        qd.reset()
