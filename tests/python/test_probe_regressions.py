"""Regressions found by probing the API against SPEC §2-3."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@qd.func
def _count_up(v, n):
    for _ in range(n):
        v += 1  # a parameter is a local: it carries across iterations
    return v


@test_utils.test()
def test_func_parameters_are_locals_that_loops_update():
    out = qd.field(qd.i32, shape=2)

    @qd.kernel
    def run(n: qd.i32):
        for i in range(1):
            out[0] = _count_up(0, n)
            m = n
            while m > 0:
                m -= 1
            out[1] = m

    run(5)
    np.testing.assert_array_equal(out.to_numpy(), [5, 0])


@test_utils.test()
def test_kernel_parameters_can_be_reassigned():
    out = qd.field(qd.i32, shape=())

    @qd.kernel
    def run(n: qd.i32, step: qd.i32):
        n = n * 2
        n += step
        out[None] = n

    run(5, 3)
    assert out[None] == 13


@test_utils.test()
def test_booleans_add_as_integers():
    out = qd.field(qd.i32, shape=3)

    @qd.kernel
    def count():
        for i in range(3):
            positive = i > 0
            out[i] = positive + positive

    count()
    np.testing.assert_array_equal(out.to_numpy(), [0, 2, 2])


@test_utils.test()
def test_kernel_default_arguments_apply():
    out = qd.field(qd.f32, shape=())

    @qd.kernel
    def scaled(a: qd.f32, b: qd.i32 = 7):
        out[None] = a * b

    scaled(2.0)
    assert out[None] == 14.0
    scaled(2.0, 3)
    assert out[None] == 6.0


_session_field = {}


@qd.kernel
def _fill_session_field():
    for i in range(4):
        _session_field["x"][i] = i * 2


def test_module_level_kernel_sees_the_current_session():
    # The kernel is defined once; each session gets its own field.
    for _ in range(2):
        qd.init(arch=qd.cpu)
        try:
            _session_field["x"] = qd.field(qd.f32, shape=4)
            _fill_session_field()
            np.testing.assert_array_equal(_session_field["x"].to_numpy(), [0, 2, 4, 6])
        finally:
            qd.reset()


@test_utils.test(ad_stack_experimental_enabled=True, default_ad_stack_size=4)
def test_default_sized_adstack_overflow_raises_without_debug():
    # The fallback capacity is not exact, so pushes are checked even
    # without debug=True: a longer loop is an error at sync, never a crash.
    x = qd.field(qd.f32, shape=2, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def iterate(n: qd.i32):
        for i in x:
            v = x[i]
            t = 0
            while t < n:
                v = qd.sin(v)
                t += 1
            loss[None] += v

    x.fill(0.5)
    with pytest.warns(UserWarning, match="default_ad_stack_size"):
        with qd.ad.Tape(loss=loss):
            iterate(1000)
    with pytest.raises(qd.QuadrantsError, match="Adstack overflow"):
        qd.sync()
