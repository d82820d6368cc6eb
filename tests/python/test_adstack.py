"""The adstack: reverse-mode autodiff through dynamic loops whose bodies carry a
value across iterations (SPEC section 3).

Every gradient is checked two ways:

* against a reference written outside Quadrants: each test's ref_loss
  re-implements the kernel's recurrence on arrays of the module `xp`.
  - Where PyTorch is importable, xp is torch and the reference is its
    autograd on CPU in the kernel's precision (f64: rel 1e-12, i.e. a few
    dozen roundings along chains of at most ~40 ops; f32: rel 1e-4).
  - Where it is not (the GPU machine's Python has numpy only), xp is numpy
    and the reference gradient is the central finite differences of ref_loss
    in f64 at the kernel's (for f32, f32-rounded) inputs, with the h and
    error bounds of the next point. f64 kernels: rel 1e-6 / abs 1e-7
    (FD_F64). f32 kernels are now compared with the exact derivative rather
    than with torch's identically rounded float32 one, so their own rounding
    counts in full and dominates the ~1e-8 of the differences: each step's
    f32 rounding (6e-8) is amplified by the later steps (sin with scale 2
    doubles a perturbation per step), and the shifted intermediate values
    move the derivative factors. That reaches ~3e-4 relative for sin over 10
    steps, ~1e-6 for the others, so rel 1e-3 / abs 1e-6; a missing or wrong
    adjoint term is still off by O(1). The loss value is compared too, so a
    forward kernel computing the wrong function is caught either way: f64 at
    rel 1e-12 (both sides evaluate the same ops in f64), f32 at rel 1e-4
    (the f32 loss is off by ~3e-6 at most).
* in f64, against central finite differences of the *forward* kernel,
  h = 1e-6 * max(1, |x|). Truncation error h^2 |f'''| / 6 is ~1e-12 for the
  O(1)-scaled, O(1)-derivative recurrences below; round-off is
  ~ (a few ulps of a loss of magnitude <= 50) / 2h ~ 1e-8 (eps * |sum| / h:
  only the perturbed element's chain and the final sum round differently
  between the two runs). So rel 1e-6 plus abs 1e-7 is safe, while a missing
  or wrong adjoint term is off by O(1) in relative terms. (f32 forward
  kernels are too coarse for finite differences; there the reference above
  is the only one.)

Sizing, the heap and the overflow check are observed through
qd.lang.runtime.adstack_stats() and the errors raised by qd.sync().
"""
import inspect
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

try:
    import torch
except ImportError:  # pragma: no cover - exercised only where torch is missing
    torch = None

# The array module the reference losses are written against: torch (for
# autograd) where it is importable, numpy (for finite differences) otherwise.
# The losses use only functions both spell the same way.
xp = torch if torch is not None else np

AD = dict(ad_stack_experimental_enabled=True)
F64 = dict(AD, default_fp=qd.f64, require=qd.extension.data64)
F32 = dict(AD, default_fp=qd.f32)

TORCH_F64 = dict(rel=1e-12, abs=1e-14)
TORCH_F32 = dict(rel=1e-4, abs=1e-6)
FD_F64 = dict(rel=1e-6, abs=1e-7)
# Without torch (see the module docstring): loss values as against torch; f32
# gradients against the exact (f64 differences) derivative, which their own
# rounding, amplified along the chain, misses by up to ~3e-4.
NUMPY_LOSS_F64 = TORCH_F64
NUMPY_LOSS_F32 = TORCH_F32
NUMPY_F32 = dict(rel=1e-3, abs=1e-6)

# Dynamic loops whose trip count is not known at compile time may warn (tested
# on its own below); keep the other tests' output quiet.
pytestmark = pytest.mark.filterwarnings(
    "ignore:kernel '[^']*'. the trip count of the loop:UserWarning")

DEFAULT_WARNING = "is not known at compile time"


# ---- helpers ---------------------------------------------------------------------

def _torch_dtype(dtype):
    return {qd.f64: torch.float64, qd.f32: torch.float32}[dtype]


def torch_grads(loss_fn, arrays, dtype=qd.f64):
    """(loss, gradients) of the scalar loss_fn(*tensors) w.r.t. each input
    array, by PyTorch autograd on CPU in `dtype`."""
    tensors = [torch.tensor(np.asarray(a), dtype=_torch_dtype(dtype), requires_grad=True)
               for a in arrays]
    loss = loss_fn(*tensors)
    loss.backward()
    return float(loss), [t.grad.numpy().astype(np.float64) if t.grad is not None
                         else np.zeros(np.shape(a)) for t, a in zip(tensors, arrays)]


def finite_differences(run_loss, values, h_rel=1e-6):
    """Central differences of run_loss(values) (a float) w.r.t. every entry."""
    values = np.array(values, dtype=np.float64)
    out = np.zeros(values.size)
    for k in range(values.size):
        plus, minus = values.copy().reshape(-1), values.copy().reshape(-1)
        h = h_rel * max(1.0, abs(values.flat[k]))
        plus[k] += h
        minus[k] -= h
        out[k] = (run_loss(plus.reshape(values.shape)) - run_loss(minus.reshape(values.shape))) \
            / (plus[k] - minus[k])
    run_loss(values)  # leave the inputs as they were
    return out.reshape(values.shape)


def numpy_grads(loss_fn, arrays):
    """(loss, gradients) of the scalar loss_fn(*arrays) w.r.t. each input
    array, loss_fn written against numpy and run in f64; the gradients are
    its central finite differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    grads = []
    for k in range(len(arrays)):
        def run(v, k=k):
            return float(loss_fn(*arrays[:k], v, *arrays[k + 1:]))
        grads.append(finite_differences(run, arrays[k]))
    return float(loss_fn(*arrays)), grads


def fd_grads(kernel, loss, fields, values, *args):
    """Finite-difference gradients of the forward kernel's loss w.r.t. each
    field in `fields` (currently holding `values`), the others held fixed."""
    out = []
    for field, base in zip(fields, values):
        def run(v, field=field):
            field.from_numpy(v)
            loss[None] = 0
            kernel(*args)
            return loss[None]
        out.append(finite_differences(run, base))
    return out


def qd_grads(kernel, loss, fields, *args):
    """Runs the forward kernel, then kernel.grad with d loss = 1; returns the
    adjoints of `fields` as float64 arrays."""
    for field in fields:
        field.grad.fill(0)
    loss[None] = 0
    kernel(*args)
    loss.grad[None] = 1
    kernel.grad(*args)
    return [field.grad.to_numpy().astype(np.float64) for field in fields]


def check_grads(kernel, loss, fields, values, ref_loss, *args, dtype=qd.f64,
                torch_tol=None, fd_tol=None):
    """Quadrants' gradients vs ref_loss's (always: torch autograd, or numpy
    finite differences where torch is missing) and vs f64 finite differences
    of the forward kernel (f64 only). Returns Quadrants' gradients."""
    for field, v in zip(fields, values):
        field.from_numpy(np.asarray(v, dtype=field.to_numpy().dtype))
    got = qd_grads(kernel, loss, fields, *args)
    bits = 64 if dtype == qd.f64 else 32
    ref_values = [np.asarray(v, dtype=np.float64 if bits == 64 else np.float32)
                  for v in values]
    if torch is not None:
        loss_tol = tol = torch_tol or (TORCH_F64 if bits == 64 else TORCH_F32)
        expected_loss, expected = torch_grads(ref_loss, ref_values, dtype)
        reference = "torch"
    else:
        loss_tol = NUMPY_LOSS_F64 if bits == 64 else NUMPY_LOSS_F32
        tol = (fd_tol or FD_F64) if bits == 64 else NUMPY_F32
        expected_loss, expected = numpy_grads(ref_loss, ref_values)
        reference = "numpy FD"
    if bits == 32 and runtime.state.options.get("arch") != runtime.cpu:
        # The f32 reference carries its own rounding amplified along the
        # chain (up to ~3e-4 off the exact derivative for the recurrences
        # here; the CPU matches it because it rounds the same operations
        # the same way): a backend rounding differently, even closer to the
        # exact value, is compared at the exact-derivative tolerance.
        tol = dict(tol, rel=max(tol["rel"], NUMPY_F32["rel"]))
    # The forward kernel computes the function the reference differentiates.
    assert loss[None] == test_utils.approx(expected_loss, bits=bits, **loss_tol)
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g == test_utils.approx(e, bits=bits, **tol), f"input {k} vs {reference}"
    if bits == 64:
        fd = fd_grads(kernel, loss, fields, values, *args)
        for k, (g, e) in enumerate(zip(got, fd)):
            assert g == pytest.approx(e, **(fd_tol or FD_F64)), f"input {k} vs FD"
    return got


def stats():
    return runtime.adstack_stats()


def all_capacities():
    return [c for task in stats()["capacities"] for c in task]


def _float_trip_count(value):
    """A 0-D f64 field holding a trip count: `range(qd.cast(t[None], qd.i32))`
    is outside the launch-time sizing grammar (SPEC 3.4: integer leaves
    only), so its stacks fall back to default_ad_stack_size."""
    trips = qd.field(qd.f64, shape=())
    trips[None] = float(value)
    return trips


def source_location(code, text):
    """(file, line) of the one source line of `code` that contains `text`."""
    lines, start = inspect.getsourcelines(code)
    hits = [start + k for k, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return inspect.getsourcefile(code), hits[0]


def _scalar_fields(n, dtype):
    x = qd.field(dtype, shape=n, needs_grad=True)
    loss = qd.field(dtype, shape=(), needs_grad=True)
    return x, loss


# A near-identity map (derivative in (0.87, 1.07)): long chains of it keep
# O(1) gradients.
def _deep_recurrence(x, loss):
    @qd.kernel
    def deep_recurrence(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v * 0.97 + 0.1 * qd.sin(v + 0.3)
            loss[None] += v
    return deep_recurrence


def _ref_deep(n):
    def loss_fn(xs):
        v = xs
        for _ in range(n):
            v = v * 0.97 + 0.1 * xp.sin(v + 0.3)
        return v.sum()
    return loss_fn


# ---- 1. loop-carried recurrences through every differentiable unary op ---------

# v = op(v * scale + j * step + offset), j in range(n_iter), v starting at
# x[i] in [0.11, 0.87]. The constants (found by a small grid search) keep
# every argument inside the op's domain with margin (checked by
# _check_domain: tan's argument within [-0.54, 0.89], log/sqrt/rsqrt's above
# 0.1, asin/acos's within [-0.11, 0.88], abs's at least 0.007 away from its
# kink, crossing it both ways) and every gradient between 0.05 and 40 for
# n_iter <= 10, so neither reference nor finite differences compare vanishing
# numbers.
RECURRENCES = {
    "sin": (2.0, -0.05, -1.0),
    "cos": (-2.0, 0.1, -0.6),
    "tan": (-0.9, -0.05, 0.8),
    "tanh": (-1.2, -0.05, 1.1),
    "exp": (-1.0, 0.1, 0.6),
    "log": (-1.0, -0.05, 1.3),
    "sqrt": (-1.0, -0.05, 1.2),
    "rsqrt": (0.25, -0.05, 0.1),
    "asin": (-0.9, -0.02, 0.8),
    "acos": (0.5, 0.05, 0.1),
    "abs": (1.3, -0.1, -0.55),
}
NUMPY_OPS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "exp": np.exp,
             "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
             "asin": np.arcsin, "acos": np.arccos, "abs": np.abs}
DOMAIN = {  # what the op's argument must satisfy, with margin
    "tan": lambda a: np.abs(a) < 1.2,
    "log": lambda a: a > 0.1,
    "sqrt": lambda a: a > 0.1,
    "rsqrt": lambda a: a > 0.1,
    "asin": lambda a: np.abs(a) < 0.9,
    "acos": lambda a: np.abs(a) < 0.9,
    "abs": lambda a: np.abs(a) > 5e-3,
}
X_VALUES = np.linspace(0.11, 0.87, 8)


def _ref_op(name):
    return getattr(torch, name) if torch is not None else NUMPY_OPS[name]


def _check_domain(name, xs, n_iter):
    scale, step, offset = RECURRENCES[name]
    v = np.array(xs, dtype=np.float64)
    for j in range(n_iter):
        arg = v * scale + j * step + offset
        if name in DOMAIN:
            assert np.all(DOMAIN[name](arg)), (name, j, arg)  # the test's own inputs
        v = NUMPY_OPS[name](arg)
    assert np.all(np.isfinite(v))


def _recurrence_kernel(name, x, loss):
    op = getattr(qd, name)
    scale, step, offset = RECURRENCES[name]

    @qd.kernel
    def recurrence(n_iter: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n_iter):
                v = op(v * scale + j * step + offset)
            loss[None] += v

    return recurrence


def _ref_recurrence(name, n_iter):
    scale, step, offset = RECURRENCES[name]
    op = _ref_op(name)

    def loss_fn(xs):
        v = xs
        for j in range(n_iter):
            v = op(v * scale + j * step + offset)
        return v.sum()

    return loss_fn


@pytest.mark.parametrize("n_iter", [1, 3, 10])
@pytest.mark.parametrize("name", sorted(RECURRENCES))
@test_utils.test(**F64)
def test_recurrence_through_unary_op_f64(name, n_iter):
    _check_domain(name, X_VALUES, n_iter)
    x, loss = _scalar_fields(len(X_VALUES), qd.f64)
    kernel = _recurrence_kernel(name, x, loss)
    (grad,) = check_grads(kernel, loss, [x], [X_VALUES], _ref_recurrence(name, n_iter),
                          n_iter)
    assert np.all(np.abs(grad) > 1e-2), grad  # the recurrence is really differentiated


@pytest.mark.parametrize("n_iter", [1, 3, 10])
@pytest.mark.parametrize("name", sorted(RECURRENCES))
@test_utils.test(**F32)
def test_recurrence_through_unary_op_f32(name, n_iter):
    _check_domain(name, X_VALUES, n_iter)
    x, loss = _scalar_fields(len(X_VALUES), qd.f32)
    kernel = _recurrence_kernel(name, x, loss)
    (grad,) = check_grads(kernel, loss, [x], [X_VALUES.astype(np.float32)],
                          _ref_recurrence(name, n_iter), n_iter, dtype=qd.f32)
    assert x.grad.to_numpy().dtype == np.float32
    assert np.all(np.abs(grad) > 1e-2), grad


@test_utils.test(**F64)
def test_same_kernel_relaunched_with_different_trip_counts():
    # One compiled grad kernel, several dynamic trip counts (including 0): the
    # stacks are reset at every launch.
    x, loss = _scalar_fields(len(X_VALUES), qd.f64)
    kernel = _deep_recurrence(x, loss)
    for n_iter in (10, 0, 3, 25, 1):
        grad = check_grads(kernel, loss, [x], [X_VALUES], _ref_deep(n_iter), n_iter)[0]
        if n_iter == 0:
            np.testing.assert_array_equal(grad, np.ones_like(X_VALUES))


# ---- 2. control flow and indexing through the adstack ---------------------------

def _margin_check(margins, at_least=1e-3):
    """The branch conditions of the test inputs stay away from their
    thresholds, so finite differences do not straddle a branch switch."""
    assert min(margins) > at_least, min(margins)


@pytest.mark.parametrize("n_iter", [1, 4, 12])
@test_utils.test(**F64)
def test_branch_condition_on_carried_value(n_iter):
    xv = np.array([0.05, 0.2, 0.27, 0.42, 0.63, 0.8, 0.95, 1.1])
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def branchy(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                if v > 0.6:
                    v = qd.sin(v) * 0.9 + 0.01 * j
                else:
                    v = v * v + 0.45
            loss[None] += v

    margins, taken = [], set()

    def ref_loss(xs):
        total = 0
        for i in range(len(xs)):
            v = xs[i]
            for j in range(n_iter):
                margins.append(abs(float(v) - 0.6))
                if float(v) > 0.6:
                    taken.add(True)
                    v = xp.sin(v) * 0.9 + 0.01 * j
                else:
                    taken.add(False)
                    v = v * v + 0.45
            total = total + v
        return total

    ref_loss(xp.asarray(xv))
    _margin_check(margins)
    assert taken == {True, False}  # both branches really run
    check_grads(branchy, loss, [x], [xv], ref_loss, n_iter)


@pytest.mark.parametrize("n_iter", [1, 5, 11])
@test_utils.test(**F64)
def test_carried_integer_index_into_field(n_iter):
    m = 3
    xv = np.linspace(-0.4, 0.7, 7)
    wv = np.array([0.9, -0.6, 0.75])
    x, loss = _scalar_fields(len(xv), qd.f64)
    w = qd.field(qd.f64, shape=m, needs_grad=True)

    @qd.kernel
    def indexed(n: qd.i32):
        for i in x:
            v = x[i]
            k = i % m
            for j in range(n):
                k = (k + 1) % m
                v = v * w[k] + x[i]
            loss[None] += v

    def ref_loss(xs, ws):
        total = 0
        for i in range(len(xs)):
            v, k = xs[i], i % m
            for _ in range(n_iter):
                k = (k + 1) % m
                v = v * ws[k] + xs[i]
            total = total + v
        return total

    gx, gw = check_grads(indexed, loss, [x, w], [xv, wv], ref_loss, n_iter)
    assert np.all(gw != 0) and np.all(gx != 0)


@test_utils.test(**F64)
def test_triangular_inner_loop_bounded_by_parallel_index():
    xv = np.linspace(0.1, 1.3, 9)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def triangular():
        for i in x:
            v = x[i]
            for j in range(i):
                v = v * 0.9 + 0.3 * qd.sin(v + 0.5 * x[j])
            loss[None] += v

    def ref_loss(xs):
        total = 0
        for i in range(len(xs)):
            v = xs[i]
            for j in range(i):
                v = v * 0.9 + 0.3 * xp.sin(v + 0.5 * xs[j])
            total = total + v
        return total

    check_grads(triangular, loss, [x], [xv], ref_loss)


@pytest.mark.parametrize("n1,n2", [(3, 5), (0, 4), (6, 0), (9, 9)])
@test_utils.test(**F64)
def test_sibling_dynamic_loops(n1, n2):
    xv = np.linspace(-0.8, 0.9, 8)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def siblings(a: qd.i32, b: qd.i32):
        for i in x:
            v = x[i]
            for j in range(a):
                v = v * 0.9 + 0.3 * qd.sin(v + 0.1 * j)
            u = v * v
            for j in range(b):
                v = v * 0.9 + 0.2 * qd.exp(-v) + u * 0.2 + 0.05 * j
            loss[None] += v

    def ref_loss(xs):
        v = xs
        for j in range(n1):
            v = v * 0.9 + 0.3 * xp.sin(v + 0.1 * j)
        u = v * v
        for j in range(n2):
            v = v * 0.9 + 0.2 * xp.exp(-v) + u * 0.2 + 0.05 * j
        return v.sum()

    check_grads(siblings, loss, [x], [xv], ref_loss, n1, n2)


@pytest.mark.parametrize("n_outer,n_inner", [(3, 4), (1, 7), (5, 1), (4, 0), (0, 3)])
@test_utils.test(**F64)
def test_nested_dynamic_loops_carrying_one_value(n_outer, n_inner):
    xv = np.linspace(-1.0, 1.0, 8)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def nested(p: qd.i32, q: qd.i32):
        for i in x:
            v = x[i]
            for a in range(p):
                v = qd.cos(v) + 0.1 * a
                for b in range(q):
                    v = qd.sin(v * 1.1 + 0.05 * b)
                v = v * v + 0.2
            loss[None] += v

    def ref_loss(xs):
        v = xs
        for a in range(n_outer):
            v = xp.cos(v) + 0.1 * a
            for b in range(n_inner):
                v = xp.sin(v * 1.1 + 0.05 * b)
            v = v * v + 0.2
        return v.sum()

    check_grads(nested, loss, [x], [xv], ref_loss, n_outer, n_inner)


@test_utils.test(**F64)
def test_nested_loops_inner_bound_from_outer_index():
    xv = np.linspace(0.2, 0.9, 6)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def nested(p: qd.i32):
        for i in x:
            v = x[i]
            for a in range(p):
                for b in range(a + i % 3):
                    v = v * 0.9 + 0.2 * qd.tanh(v * 1.3 + 0.1 * b - 0.05 * a)
                v = v + 0.3
            loss[None] += v

    def ref_loss(xs):
        total = 0
        for i in range(len(xs)):
            v = xs[i]
            for a in range(5):
                for b in range(a + i % 3):
                    v = v * 0.9 + 0.2 * xp.tanh(v * 1.3 + 0.1 * b - 0.05 * a)
                v = v + 0.3
            total = total + v
        return total

    check_grads(nested, loss, [x], [xv], ref_loss, 5)


@test_utils.test(**F64)
def test_dynamic_bound_read_from_0d_field():
    xv = np.linspace(-0.7, 0.8, 8)
    x, loss = _scalar_fields(len(xv), qd.f64)
    n = qd.field(qd.i32, shape=())

    @qd.kernel
    def bounded():
        for i in x:
            v = x[i]
            for j in range(n[None]):
                v = v * 0.8 + 0.5 * qd.tanh(v + 0.1 * j)
            loss[None] += v

    for trips in (3, 9, 1):  # the bound is read at each launch
        n[None] = trips

        def ref_loss(xs, trips=trips):
            v = xs
            for j in range(trips):
                v = v * 0.8 + 0.5 * xp.tanh(v + 0.1 * j)
            return v.sum()

        check_grads(bounded, loss, [x], [xv], ref_loss)
        assert min(all_capacities()) >= trips + 2, stats()  # never too small


@pytest.mark.parametrize("n_iter", [0, 1, 6])
@test_utils.test(**F64)
def test_while_loop_carrying_value(n_iter):
    xv = np.linspace(-1.2, 1.4, 8)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def repeated_sin(n: qd.i32):
        for i in x:
            v = x[i]
            k = 0
            while k < n:
                v = qd.sin(v)
                k += 1
            loss[None] += v

    def ref_loss(xs):
        v = xs
        for _ in range(n_iter):
            v = xp.sin(v)
        return v.sum()

    check_grads(repeated_sin, loss, [x], [xv], ref_loss, n_iter)


@test_utils.test(**F64)
def test_while_loop_exit_depends_on_carried_value():
    # Each element runs a different number of iterations.
    xv = np.array([0.13, 0.31, 0.52, 0.77, 1.04, 1.46, 1.9, 2.5])
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def grow():
        for i in x:
            v = x[i]
            k = 0
            while v < 3.0 and k < 50:
                v = v * qd.sqrt(v + 1.0) + 0.1
                k += 1
            loss[None] += v

    margins, trips = [], set()

    def ref_loss(xs):
        total = 0
        for i in range(len(xs)):
            v, k = xs[i], 0
            while True:
                margins.append(abs(float(v) - 3.0))
                if not (float(v) < 3.0 and k < 50):
                    break
                v = v * xp.sqrt(v + 1.0) + 0.1
                k += 1
            trips.add(k)
            total = total + v
        return total

    ref_loss(xp.asarray(xv))
    _margin_check(margins)
    assert len(trips) >= 3
    check_grads(grow, loss, [x], [xv], ref_loss)


@test_utils.test(**F64)
def test_break_out_of_dynamic_loop_on_carried_value():
    xv = np.linspace(0.1, 1.5, 8)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def until(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v * 1.2 + qd.sin(v) * 0.3 + 0.02 * j
                if v > 2.5:
                    break
            loss[None] += v

    margins = []

    def ref_loss(xs):
        total = 0
        for i in range(len(xs)):
            v = xs[i]
            for j in range(20):
                v = v * 1.2 + xp.sin(v) * 0.3 + 0.02 * j
                margins.append(abs(float(v) - 2.5))
                if float(v) > 2.5:
                    break
            total = total + v
        return total

    ref_loss(xp.asarray(xv))
    _margin_check(margins)
    check_grads(until, loss, [x], [xv], ref_loss, 20)


# ---- 3. sizing -------------------------------------------------------------------

@test_utils.test(**F64)
def test_constant_trip_count_gives_capacity_k_plus_2():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def five():
        for i in x:
            v = x[i]
            for j in range(5):
                v = qd.sin(v + 0.1 * j)
            loss[None] += v

    @qd.kernel
    def forty():
        for i in x:
            v = x[i]
            for j in range(40):
                v = v * 0.98 + 0.05 * qd.cos(v + 0.01 * j)
            loss[None] += v

    def ref_five(xs):
        v = xs
        for j in range(5):
            v = xp.sin(v + 0.1 * j)
        return v.sum()

    def ref_forty(xs):
        v = xs
        for j in range(40):
            v = v * 0.98 + 0.05 * xp.cos(v + 0.01 * j)
        return v.sum()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x.from_numpy(xv)
        qd_grads(five, loss, [x])
        assert all_capacities() and set(all_capacities()) == {7}, stats()
        qd_grads(forty, loss, [x])
        assert all_capacities() and set(all_capacities()) == {42}, stats()
    # Known trip counts need no fallback, hence no warning.
    assert not [w for w in caught if DEFAULT_WARNING in str(w.message)]
    check_grads(five, loss, [x], [xv], ref_five)
    check_grads(forty, loss, [x], [xv], ref_forty)


@test_utils.test(**F64)
def test_static_and_dynamic_loops_in_one_kernel_are_sized_separately():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    trips = _float_trip_count(30)

    @qd.kernel
    def mixed():
        for i in x:
            v = x[i]
            for j in range(6):
                v = v * 0.9 + 0.2 * qd.sin(v + 0.1 * j)
            u = v
            for j in range(qd.cast(trips[None], qd.i32)):
                u = u * 0.995 + 0.02 * qd.cos(u)
            loss[None] += u

    def ref_loss(xs):
        v = xs
        for j in range(6):
            v = v * 0.9 + 0.2 * xp.sin(v + 0.1 * j)
        for j in range(30):
            v = v * 0.995 + 0.02 * xp.cos(v)
        return v.sum()

    check_grads(mixed, loss, [x], [xv], ref_loss)
    assert sorted(set(all_capacities())) == [8, 256], stats()


@test_utils.test(**F64, ad_stack_size=100)
def test_forced_ad_stack_size_applies_to_every_stack():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)

    @qd.kernel
    def mixed(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(6):
                v = v * 0.9 + 0.2 * qd.sin(v + 0.1 * j)
            u = v
            for j in range(n):
                u = u * 0.995 + 0.02 * qd.cos(u)
            loss[None] += u

    def ref_loss(xs, n=90):
        v = xs
        for j in range(6):
            v = v * 0.9 + 0.2 * xp.sin(v + 0.1 * j)
        for j in range(n):
            v = v * 0.995 + 0.02 * xp.cos(v)
        return v.sum()

    check_grads(mixed, loss, [x], [xv], ref_loss, 90)
    capacities = all_capacities()
    assert len(capacities) >= 2 and set(capacities) == {100}, stats()


@pytest.mark.parametrize("bound", ["field", "ndarray_shape"])
@test_utils.test(**F64, debug=True)
def test_bound_inside_the_sizing_grammar_is_sized_at_launch(bound):
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    n = qd.field(qd.i32, shape=())

    @qd.kernel
    def from_field(a: qd.types.ndarray(qd.f64, 1)):
        for i in x:
            v = x[i]
            for j in range(n[None]):
                v = v * 0.99 + 0.02 * qd.sin(v + 0.1)
            loss[None] += v

    @qd.kernel
    def from_shape(a: qd.types.ndarray(qd.f64, 1)):
        for i in x:
            v = x[i]
            for j in range(a.shape[0]):
                v = v * 0.99 + 0.02 * qd.sin(v + 0.1)
            loss[None] += v

    kernel = from_field if bound == "field" else from_shape
    for trips in (300, 7):  # 300 > default_ad_stack_size
        n[None] = trips
        arr = np.zeros(trips)

        def ref_loss(xs, trips=trips):
            v = xs
            for _ in range(trips):
                v = v * 0.99 + 0.02 * xp.sin(v + 0.1)
            return v.sum()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_grads(kernel, loss, [x], [xv], ref_loss, arr)
            qd.sync()
        assert not [w for w in caught if DEFAULT_WARNING in str(w.message)], \
            [str(w.message) for w in caught]
        assert set(all_capacities()) == {trips + 2}, stats()


@test_utils.test(**F64, default_ad_stack_size=64)
def test_unknown_trip_count_warns_once_naming_the_loop_and_uses_default_size():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)

    trips = _float_trip_count(10)

    @qd.kernel
    def unknown_trips():
        for i in x:
            a = x[i]
            b = x[i] * 0.5
            for j in range(qd.cast(trips[None], qd.i32)):  # <- the loop: one warning
                a = qd.sin(a + b)
                b = qd.cos(b) * a
            loss[None] += a + b

    file, line = source_location(inspect.currentframe().f_code, "# <- " + "the loop")
    where = re.escape(f"{file}:{line}")
    x.from_numpy(xv)
    with pytest.warns(UserWarning, match=where) as caught:
        qd_grads(unknown_trips, loss, [x])
    mine = [w for w in caught if f"{file}:{line}" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert "unknown_trips" in str(mine[0].message)
    capacities = all_capacities()
    assert len(capacities) >= 2 and set(capacities) == {64}, stats()

    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        qd_grads(unknown_trips, loss, [x])
        trips[None] = 20.0
        qd_grads(unknown_trips, loss, [x])
    assert not [w for w in again if DEFAULT_WARNING in str(w.message)], \
        [str(w.message) for w in again]
    assert set(all_capacities()) == {64}


@test_utils.test(**F64)
def test_stats_capacities_describe_only_the_last_launch():
    # Kernel `first` has its stacks in grad task 0; kernel `second`'s grad has
    # a stack-free task 0 (the reversed trailing loop) and its stacks in task 1.
    # After `second`, the stats must not keep `first`'s task-0 capacities.
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    y = qd.field(qd.f64, shape=len(xv), needs_grad=True)

    @qd.kernel
    def first():
        for i in x:
            v = x[i]
            for j in range(7):
                v = qd.sin(v + 0.2)
            loss[None] += v

    @qd.kernel
    def second():
        for i in x:
            v = x[i]
            for j in range(3):
                v = qd.sin(v + 0.2)
            y[i] = v
        for i in x:
            loss[None] += y[i] * 2.0

    x.from_numpy(xv)
    qd_grads(first, loss, [x])
    assert stats()["capacities"] == [[9]]
    qd_grads(second, loss, [x, y])
    s = stats()
    assert [c for c in s["capacities"] if c] == [[5]], s
    assert sum(s["per_thread_stride"]) == s["per_thread_stride"][-1], s


# ---- 4. the heap -----------------------------------------------------------------

@test_utils.test(**F64)
def test_heap_grows_for_a_larger_need_and_not_on_repeats():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    x.from_numpy(xv)

    @qd.kernel
    def small():
        for i in x:
            v = x[i]
            for j in range(3):
                v = v * 0.99 + 0.02 * qd.sin(v + 0.1)
            loss[None] += v

    @qd.kernel
    def large():
        for i in x:
            v = x[i]
            for j in range(300):
                v = v * 0.99 + 0.02 * qd.sin(v + 0.1)
            loss[None] += v

    assert stats()["heap_grows"] == 0 and stats()["heap_bytes"] == 0
    qd_grads(small, loss, [x])
    first = stats()
    assert first["heap_grows"] == 1
    assert first["capacities"] == [[5]]
    assert 0 < first["bytes_needed"] <= first["heap_bytes"]

    qd_grads(large, loss, [x])
    second = stats()
    assert second["capacities"] == [[302]]
    assert second["bytes_needed"] > first["heap_bytes"]
    assert second["heap_grows"] == 2
    # amortized doubling: new = max(need, 2 * old)
    assert second["heap_bytes"] == max(second["bytes_needed"], 2 * first["heap_bytes"])

    for kernel in (large, small, large):
        qd_grads(kernel, loss, [x])
        assert stats()["heap_grows"] == 2 and stats()["heap_bytes"] == second["heap_bytes"]
    # The heap is not shrunk, and results are still right after reuse.
    def ref_large(xs):
        v = xs
        for _ in range(300):
            v = v * 0.99 + 0.02 * xp.sin(v + 0.1)
        return v.sum()
    check_grads(large, loss, [x], [xv], ref_large)


@test_utils.test(**F64, ad_stack_size=4096)
def test_five_carried_f64_values_at_4096_slots():
    xv = np.linspace(-0.6, 0.9, 6)
    x, loss = _scalar_fields(len(xv), qd.f64)

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

    def ref_loss(xs, n=40):
        a = xs
        b, c, d, e = a * 0.5, xp.cos(a), a * a, 0.3 + 0.0 * a
        for j in range(n):
            a, b, c, d, e = (a * 0.9 + 0.1 * xp.sin(a + b),
                             b * 0.9 + 0.1 * xp.cos(c + 0.01 * j),
                             c * 0.9 + 0.1 * xp.tanh(d),
                             d * 0.9 + 0.1 * xp.sin(e),
                             e * 0.9 + 0.1 * xp.exp(-a * a))
        return (a + 2.0 * b + 3.0 * c + 4.0 * d + 5.0 * e).sum()

    check_grads(five, loss, [x], [xv], ref_loss, 40)
    s = stats()
    capacities = all_capacities()
    assert len(capacities) >= 5 and set(capacities) == {4096}, s
    # Each f64 stack holds its primal per slot (reverse mode recomputes
    # adjoints rather than keeping them on the stack).
    assert s["per_thread_stride"][0] >= 5 * 4096 * 8, s
    assert s["heap_bytes"] >= s["bytes_needed"] >= s["per_thread_stride"][0]


@test_utils.test(**F64)
def test_launches_without_stacks_leave_the_heap_alone():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    y = qd.field(qd.f64, shape=len(xv), needs_grad=True)
    x.from_numpy(xv)

    @qd.kernel
    def no_loops():
        for i in x:
            y[i] = qd.sin(x[i]) * 2.0
            loss[None] += qd.cos(x[i])

    @qd.kernel
    def with_loop(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = qd.sin(v + 0.1)
            loss[None] += v

    # Before any stack: a loop-free kernel and its gradient allocate nothing.
    qd_grads(no_loops, loss, [x])
    no_loops()
    assert stats()["heap_grows"] == 0 and stats()["heap_bytes"] == 0

    qd_grads(with_loop, loss, [x], 7)
    before = stats()
    assert before["heap_grows"] == 1
    no_loops()             # forward only, no loops
    with_loop(7)           # forward of the loop kernel: no stacks either
    qd_grads(no_loops, loss, [x])
    qd.sync()
    assert stats() == before


# ---- 5. overflow -----------------------------------------------------------------

def _launch_grad(kernel, loss, x, n):
    x.grad.fill(0)
    loss[None] = 0
    kernel(n)
    loss.grad[None] = 1
    kernel.grad(n)


@test_utils.test(**F64, debug=True, ad_stack_size=32)
def test_overflow_raises_at_sync_then_later_launches_run_clean():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    x.from_numpy(xv)
    kernel = _deep_recurrence(x, loss)

    with pytest.raises(qd.QuadrantsError, match="Adstack overflow") as info:
        _launch_grad(kernel, loss, x, 100)
        qd.sync()
    message = str(info.value)
    assert "deep_recurrence" in message and "task" in message, message
    qd.sync()  # the flag was reset

    # Within capacity (20 + 2 <= 32): clean, with the right gradient.
    check_grads(kernel, loss, [x], [xv], _ref_deep(20), 20)
    qd.sync()


@test_utils.test(**F64, debug=True, ad_stack_size=32)
def test_trip_count_of_capacity_minus_two_fits():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    kernel = _deep_recurrence(x, loss)
    check_grads(kernel, loss, [x], [xv], _ref_deep(30), 30)
    qd.sync()


@test_utils.test(**F64, debug=True, ad_stack_size=32)
def test_overflow_in_many_threads_reports_one_error():
    n = 1000
    x, loss = _scalar_fields(n, qd.f64)
    x.from_numpy(np.linspace(-1.0, 1.0, n))
    kernel = _deep_recurrence(x, loss)

    with pytest.raises(qd.QuadrantsError, match="Adstack overflow.*deep_recurrence"):
        _launch_grad(kernel, loss, x, 100)
        qd.sync()
    qd.sync()
    x.grad.to_numpy()  # an implicit sync: also clean


@test_utils.test(**F64, debug=True, ad_stack_size=32)
def test_overflow_error_then_host_read_raises_once():
    xv = np.linspace(0.1, 0.8, 4)
    x, loss = _scalar_fields(len(xv), qd.f64)
    x.from_numpy(xv)
    kernel = _deep_recurrence(x, loss)
    with pytest.raises(qd.QuadrantsError, match="Adstack overflow"):
        _launch_grad(kernel, loss, x, 64)  # debug mode: at the call
    x.grad.to_numpy()  # reported once
    qd.sync()


_SUBPROCESS_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import quadrants as qd

    qd.init(arch=getattr(qd, sys.argv[1]), ad_stack_experimental_enabled=True,
            default_fp=qd.f64, debug=True, ad_stack_size=32)
    x = qd.field(qd.f64, shape=256, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def deep_recurrence(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v * 0.97 + 0.1 * qd.sin(v + 0.3)
            loss[None] += v

    x.from_numpy(np.linspace(-1.0, 1.0, 256))
    deep_recurrence(100)
    loss.grad[None] = 1
    try:
        deep_recurrence.grad(100)  # debug mode raises at the call
        qd.sync()
    except qd.QuadrantsError as e:
        assert "Adstack overflow" in str(e), str(e)
        print("caught adstack overflow")
    else:
        print("no error raised")
        sys.exit(3)
    sys.exit(0)
""")


@test_utils.test(require=qd.extension.adstack)
def test_process_exits_cleanly_after_caught_overflow(tmp_path):
    script = tmp_path / "overflow_then_exit.py"
    script.write_text(_SUBPROCESS_SCRIPT)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(qd.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in sys.path if p])
    python = sys.executable  # the interpreter (and environment) running the tests
    arch = qd.lang.runtime.state.arch.name
    proc = subprocess.run([python, str(script), arch], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "caught adstack overflow" in proc.stdout, (proc.stdout, proc.stderr)
