"""Regression tests for compiler bugs found by the gradient fuzzer
(tools/gradfuzz). Each test is the fuzzer's shrunk kernel, checked against
central finite differences of the forward kernel in f64.

Tolerances: h = 1e-6 on O(1) inputs of smooth O(1) functions gives a
truncation error h^2 |f'''| / 6 < 1e-12 and a round-off of about
eps * |loss| / h < 1e-9, so rel 1e-6 / abs 1e-8 is safe while a missing or
wrong adjoint term is off by O(1).
"""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

F64 = dict(default_fp=qd.f64, require=qd.extension.data64)
FD = dict(rel=1e-6, abs=1e-8)
H = 1e-6


def _central_differences(run, values):
    grad = np.zeros_like(values)
    for k in range(len(values)):
        plus, minus = values.copy(), values.copy()
        plus[k] += H
        minus[k] -= H
        grad[k] = (run(plus) - run(minus)) / (2 * H)
    return grad


def _tape_matches_finite_differences(kernel, x, loss, xv, *args):
    def run(values):
        x.from_numpy(values)
        loss[None] = 0
        kernel(*args)
        return loss[None]

    x.from_numpy(xv)
    with qd.ad.Tape(loss=loss):
        kernel(*args)
    grad = x.grad.to_numpy()
    assert grad == pytest.approx(_central_differences(run, xv), **FD)
    return grad


# A `continue` at the top of the parallel loop moves the rest of the body into
# an `if` branch. The reverse sweep of the later loop reads the field pointer
# of x[i] computed in that branch: it must be recomputed there, not backed up
# into a float local (which failed IR verification: "value has type *f64,
# expected f64").
def _parallel_continue_then_loop():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    skip = qd.field(qd.i32, shape=4)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            if skip[i] == 1:
                continue
            v = x[i]
            for _ in range(1):
                v = qd.sin(x[i])
            loss[None] += v

    skip[1] = 1
    xv = np.array([0.1, 0.2, -0.3, 0.4])
    grad = _tape_matches_finite_differences(forward, x, loss, xv)
    assert grad == pytest.approx(np.cos(xv) * [1, 0, 1, 1], rel=1e-12)


@test_utils.test(**F64)
def test_parallel_continue_then_loop_reading_field_pointer_from_before():
    _parallel_continue_then_loop()


@test_utils.test(ad_stack_experimental_enabled=True, **F64)
def test_parallel_continue_then_loop_reading_field_pointer_from_before_adstack():
    _parallel_continue_then_loop()


# The flag that structures a `break` must be visible to the reverse sweep,
# which runs in its own copy of the `if` branch that a parallel-loop
# `continue` creates around the loop (declared next to the loop, it failed IR
# verification: "value has type *u1, expected u1").
@test_utils.test(ad_stack_experimental_enabled=True, **F64)
def test_parallel_continue_then_loop_with_break():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    skip = qd.field(qd.i32, shape=4)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            if skip[i] == 1:
                continue
            v = x[i]
            for j in range(n):
                v = qd.sin(v) + 0.5
                if v > 1.2:
                    break
            loss[None] += v

    skip[2] = 1
    xv = np.array([0.1, 0.9, -0.3, 0.4])
    grad = _tape_matches_finite_differences(forward, x, loss, xv, 4)
    assert grad[2] == 0 and np.all(grad[[0, 1, 3]] != 0)


# `if a: continue` and `if b: break`, both at the top of one loop body (the
# supported shape), in either order. Structuring the continue alone first
# would move the break into a branch, where reverse mode rejects it as nested.
@test_utils.test(ad_stack_experimental_enabled=True, **F64)
def test_continue_then_break_at_the_top_of_one_loop_body():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                if j % 3 == 1:
                    continue
                v = qd.sin(v) * 1.3 + 0.2
                if v > 1.1:
                    break
                v = v * v
            loss[None] += v

    def reference(v, n):
        for j in range(n):
            if j % 3 == 1:
                continue
            v = np.sin(v) * 1.3 + 0.2
            if v > 1.1:
                break
            v = v * v
        return v

    xv = np.array([0.1, 0.9, -0.3, 0.6])
    grad = _tape_matches_finite_differences(forward, x, loss, xv, 6)
    h = 1e-6
    expected = [(reference(v + h, 6) - reference(v - h, 6)) / (2 * h) for v in xv]
    assert grad == pytest.approx(expected, **FD)


@test_utils.test(ad_stack_experimental_enabled=True, **F64)
def test_break_then_continue_at_the_top_of_one_loop_body():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = qd.sin(v) * 1.3 + 0.2
                if v > 1.1:
                    break
                if j % 2 == 1:
                    continue
                v = v * v + 0.1
            loss[None] += v

    def reference(v, n):
        for j in range(n):
            v = np.sin(v) * 1.3 + 0.2
            if v > 1.1:
                break
            if j % 2 == 1:
                continue
            v = v * v + 0.1
        return v

    xv = np.array([0.1, 0.9, -0.3, 0.6])
    grad = _tape_matches_finite_differences(forward, x, loss, xv, 6)
    h = 1e-6
    expected = [(reference(v + h, 6) - reference(v - h, 6)) / (2 * h) for v in xv]
    assert grad == pytest.approx(expected, **FD)


# A dynamic loop whose body breaks under the condition of an enclosing `if`
# (the same value), inside a constant loop: a parallel iteration whose trip
# count is 0 must keep v. Lavapipe (Mesa 22.3) ran the break branch for it
# from SPIR-V that spirv-val accepts and that skips the loop; the gradient
# fuzzer found it as a finite-difference mismatch on vulkan (seed 3000509).
# The SPIR-V emitter now takes an `if` on an enclosing `if`'s condition
# without a branch, which lavapipe compiles correctly.
@test_utils.test()
def test_break_under_the_enclosing_if_condition_in_a_zero_trip_loop():
    counts = qd.ndarray(qd.i32, 4)
    counts.from_numpy(np.array([0, 5, 3, 2], np.int32))
    out = qd.field(qd.f32, shape=4)

    @qd.kernel
    def run(c: qd.types.ndarray(qd.i32, 1)):
        for i in range(4):
            v = 1.0
            for t in range(2):
                if t % 2 == 1:
                    for _ in range(c[i]):
                        if t % 2 == 1:
                            v = 7.0
                            break
            out[i] = v

    run(counts)
    assert out.to_numpy().tolist() == [1, 7, 7, 7]
