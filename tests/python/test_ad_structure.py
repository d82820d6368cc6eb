"""Reverse-mode autodiff through kernel structure: straight-line code, unrolled
and dynamic loops, branches, atomics, ndarray arguments, locals reassigned,
the loops that need the adstack (and the clear error without it), and
qd.ad.Tape over a chain of kernels.

Gradients are compared with central finite differences of the forward kernel
in f64 (h = 1e-6 * max(1, |x|)). Truncation error h^2 |f'''| / 6 is < 1e-10
for the smooth, O(1)-scaled functions below, round-off ~ eps * sum|terms| / h
< 1e-8 for losses with sum|terms| < 50, so rel 1e-6 / abs 1e-7 is safe while
a wrong or missing adjoint contribution is off by O(1). Where a closed form is
available it is checked too (rel 1e-12: a few f64 roundings).
"""
import inspect
import os

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

FD_TOL = dict(rel=1e-6, abs=1e-7)
EXACT = dict(rel=1e-12, abs=1e-14)
F64 = dict(default_fp=qd.f64, require=qd.extension.data64)


# ---- helpers -------------------------------------------------------------------

def _finite_differences(run_loss, values, h_rel=1e-6):
    """Central differences of run_loss(values) (a float) w.r.t. every entry."""
    values = np.array(values, dtype=np.float64)
    out = np.zeros_like(values)
    flat = out.reshape(-1)
    for k in range(values.size):
        plus, minus = values.copy().reshape(-1), values.copy().reshape(-1)
        h = h_rel * max(1.0, abs(plus[k]))
        plus[k] += h
        minus[k] -= h
        flat[k] = (run_loss(plus.reshape(values.shape)) - run_loss(minus.reshape(values.shape))) \
            / (plus[k] - minus[k])
    run_loss(values)  # leave the inputs as they were
    return out


def _field_loss_runner(forward, loss, field, *args):
    """A run_loss for _finite_differences: loads `field`, runs the forward kernel."""
    def run(values):
        field.from_numpy(values)
        loss[None] = 0
        forward(*args)
        return loss[None]
    return run


def _tape_grad(forward, loss, fields, *args):
    loss[None] = 0
    with qd.ad.Tape(loss=loss):
        forward(*args)
    return [f.grad.to_numpy() for f in fields]


def _line_of(kernel, marker):
    """The absolute source line of the kernel line containing `marker`."""
    lines, start = inspect.getsourcelines(kernel.fn)
    hits = [start + k for k, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def _setup_xy(n=5, seed=0):
    rng = np.random.default_rng(seed)
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = rng.uniform(-1.0, 1.0, n)
    x.from_numpy(xv)
    return x, loss, xv


def _check_against_fd(forward, loss, x, xv, *args, closed_form=None):
    (grad,) = _tape_grad(forward, loss, [x], *args)
    fd = _finite_differences(_field_loss_runner(forward, loss, x, *args), xv)
    assert grad == pytest.approx(fd, **FD_TOL)
    if closed_form is not None:
        assert grad == pytest.approx(closed_form, **EXACT)
    assert np.any(grad != 0)
    return grad


# ---- straight-line code --------------------------------------------------------

@test_utils.test(**F64)
def test_straight_line_multi_op_kernel():
    x, loss, xv = _setup_xy(6)

    @qd.kernel
    def forward():
        for i in x:
            v = x[i]
            a = qd.sin(v) * v + 1.5
            b = qd.exp(a) / (1.0 + v * v)
            c = qd.sqrt(b * b + 0.25) - qd.tanh(a * v)
            loss[None] += a * b + c * qd.cos(b)

    def closed(v):
        a = np.sin(v) * v + 1.5
        b = np.exp(a) / (1 + v * v)
        c = np.sqrt(b * b + 0.25) - np.tanh(a * v)
        return a * b + c * np.cos(b)

    h = 1e-6
    numeric = (closed(xv + h) - closed(xv - h)) / (2 * h)
    grad = _check_against_fd(forward, loss, x, xv)
    assert grad == pytest.approx(numeric, **FD_TOL)


@test_utils.test(**F64)
def test_local_reassigned_several_times():
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward():
        for i in x:
            v = x[i]
            v = v * v          # x^2
            v = qd.sin(v) + v  # sin(x^2) + x^2
            v = v / (2.0 + x[i])
            w = v
            v = w * x[i]
            loss[None] += v

    x_ = xv
    u = x_ * x_
    s = np.sin(u) + u
    # v = s * x / (2 + x)
    ds = (np.cos(u) + 1) * 2 * x_
    expected = ds * x_ / (2 + x_) + s * (1 / (2 + x_) - x_ / (2 + x_) ** 2)
    _check_against_fd(forward, loss, x, xv, closed_form=expected)


@test_utils.test(**F64)
def test_serial_statements_outside_any_loop():
    # Top-level code that is not in a loop runs as a serial task.
    x, loss, xv = _setup_xy(3)

    @qd.kernel
    def forward():
        loss[None] = x[0] * qd.sin(x[1]) + x[2] * x[2]

    expected = [np.sin(xv[1]), xv[0] * np.cos(xv[1]), 2 * xv[2]]
    _check_against_fd(forward, loss, x, xv, closed_form=expected)


@test_utils.test(**F64)
def test_two_parallel_loops_in_one_kernel_reverse_in_order():
    # The second loop reads what the first wrote: the gradient kernel must run
    # the second task's reverse before the first's.
    x, loss, xv = _setup_xy(5)
    y = qd.field(qd.f64, shape=5, needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            y[i] = qd.sin(x[i]) * 3.0
        for i in y:
            loss[None] += y[i] * y[i]

    # loss = sum 9 sin^2 x -> 18 sin x cos x
    _check_against_fd(forward, loss, x, xv, closed_form=18 * np.sin(xv) * np.cos(xv))


@test_utils.test(**F64)
def test_atomic_sub_and_explicit_atomic_add():
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward():
        for i in x:
            loss[None] -= qd.sin(x[i])
            qd.atomic_add(loss[None], x[i] * x[i] * x[i])
            qd.atomic_sub(loss[None], 2.0 * x[i])

    _check_against_fd(forward, loss, x, xv, closed_form=-np.cos(xv) + 3 * xv * xv - 2)


# ---- qd.static loops -----------------------------------------------------------

@test_utils.test(**F64)
def test_static_unrolled_nonlinear_chain_needs_no_adstack():
    # v = sin(sin(sin(sin(x)))): loop-carried and non-linear, but unrolled at
    # compile time, so it differentiates with the adstack off (the default).
    assert qd.lang.runtime.state.options["ad_stack_experimental_enabled"] is False
    x, loss, xv = _setup_xy(6)

    @qd.kernel
    def forward():
        for i in x:
            v = x[i]
            for _ in qd.static(range(4)):
                v = qd.sin(v)
            loss[None] += v

    expected = np.ones_like(xv)
    v = xv.copy()
    for _ in range(4):
        expected *= np.cos(v)
        v = np.sin(v)
    _check_against_fd(forward, loss, x, xv, closed_form=expected)


@test_utils.test(**F64)
def test_static_unrolled_product_and_index_chain():
    # Carried value multiplied by run-time values and a carried index: fine
    # when unrolled.
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward():
        for i in qd.static(range(1)):
            v = 1.0
            k = 0
            for _ in qd.static(range(4)):
                v = v * x[k] + x[k]
                k = k + 1
            loss[None] = v

    def f(a):
        v = 1.0
        for k in range(4):
            v = v * a[k] + a[k]
        return v

    grad = _check_against_fd(forward, loss, x, xv)
    assert grad == pytest.approx(_finite_differences(f, xv), **FD_TOL)


@test_utils.test(**F64)
def test_static_loop_linear_with_compile_time_coefficients():
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward():
        for i in x:
            s = 0.0
            for j in qd.static(range(1, 5)):
                s += x[i] ** j * (1.0 / j)
            loss[None] += s

    # d/dx sum_j x^j / j = sum_j x^(j-1)
    _check_against_fd(forward, loss, x, xv, closed_form=1 + xv + xv ** 2 + xv ** 3)


# ---- linear dynamic loops -------------------------------------------------------

@test_utils.test(**F64)
def test_dynamic_loop_accumulates_x_times_loop_index():
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                s += x[i] * j
            loss[None] += s

    for n in (0, 1, 7):
        expected = np.full(5, n * (n - 1) / 2.0)
        (grad,) = _tape_grad(forward, loss, [x], n)
        assert grad == pytest.approx(expected, **EXACT)
    _check_against_fd(forward, loss, x, xv, 7, closed_form=np.full(5, 21.0))


@test_utils.test(**F64)
def test_dynamic_loop_range_with_begin_and_end_arguments():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(a: qd.i32, b: qd.i32):
        for i in x:
            s = 0.0
            for j in range(a, b):
                s = s + qd.sin(x[i]) * j - x[i]
            loss[None] += s

    # sum_{j=3}^{7} (sin x * j - x) = 25 sin x - 5 x
    _check_against_fd(forward, loss, x, xv, 3, 8, closed_form=25 * np.cos(xv) - 5)


@test_utils.test(**F64)
def test_dynamic_inner_accumulation_with_loop_invariant_coefficient():
    # s = s + a * y[j] across an inner range, a = sin(x[i]) computed before the
    # loop; the loss squares s after the loop.
    m, n = 4, 6
    rng = np.random.default_rng(3)
    x = qd.field(qd.f64, shape=m, needs_grad=True)
    y = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv, yv = rng.uniform(-1, 1, m), rng.uniform(-1, 1, n)
    x.from_numpy(xv)
    y.from_numpy(yv)

    @qd.kernel
    def forward(count: qd.i32):
        for i in x:
            a = qd.sin(x[i])
            s = 0.0
            for j in range(count):
                s = s + a * y[j]
            loss[None] += s * s

    gx, gy = _tape_grad(forward, loss, [x, y], n)
    Y = yv.sum()
    assert gx == pytest.approx(2 * np.sin(xv) * np.cos(xv) * Y * Y, **EXACT)
    assert gy == pytest.approx(np.full(n, 2 * (np.sin(xv) ** 2).sum() * Y), **EXACT)
    fdx = _finite_differences(_field_loss_runner(forward, loss, x, n), xv)
    fdy = _finite_differences(_field_loss_runner(forward, loss, y, n), yv)
    assert gx == pytest.approx(fdx, **FD_TOL)
    assert gy == pytest.approx(fdy, **FD_TOL)


@test_utils.test(**F64)
def test_dynamic_loop_reads_local_reassigned_after_the_loop():
    # The reverse sweep replays the loop after `a` was changed; it must use
    # the value `a` had while the loop ran.
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            a = x[i] * x[i]
            s = 0.0
            for j in range(n):
                s = s + a * 2.0 + x[i]
            a = qd.sin(a) * 10.0
            loss[None] += s + a

    # s = n (2 x^2 + x), a_final = 10 sin(x^2)
    n = 3
    expected = n * (4 * xv + 1) + 10 * np.cos(xv * xv) * 2 * xv
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@test_utils.test(**F64)
def test_dynamic_loop_bound_from_ndarray_shape():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(w: qd.types.ndarray(qd.f64, 1)):
        for i in x:
            s = 0.0
            for j in range(w.shape[0]):
                s = s + w[j] * qd.exp(x[i])
            loss[None] += s

    w = qd.ndarray(qd.f64, 7)
    wv = np.linspace(-0.5, 1.0, 7)
    w.from_numpy(wv)
    _check_against_fd(forward, loss, x, xv, w, closed_form=wv.sum() * np.exp(xv))
    # A numpy array for the same parameter: gradient into it is discarded.
    _check_against_fd(forward, loss, x, xv, wv.copy(), closed_form=wv.sum() * np.exp(xv))


@test_utils.test(**F64)
def test_nested_dynamic_loops_triangular():
    x, loss, xv = _setup_xy(6)

    @qd.kernel
    def forward(n: qd.i32):
        for i in range(1):  # one thread; the loops below are serial
            s = 0.0
            for j in range(n):
                for k in range(j):
                    s = s + x[k] * x[j]
            loss[None] = s

    # loss = sum_{k<j<n} x_k x_j ; d/dx_m = sum_{j != m, j < n} x_j
    n = 6
    expected = xv.sum() - xv
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@test_utils.test(**F64)
def test_dynamic_loop_with_branch_on_non_carried_value():
    x, loss, xv = _setup_xy(4)
    y = qd.field(qd.f64, shape=8, needs_grad=True)
    yv = np.array([0.5, -1.0, 2.0, -0.25, 1.5, -3.0, 0.75, 1.0])
    y.from_numpy(yv)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                if y[j] > 0:
                    s = s + qd.sin(x[i]) * y[j]
                else:
                    s = s - x[i] * x[i]
                if j % 3 == 0:
                    s = s + x[i]
            loss[None] += s

    n = 8
    pos = yv[yv > 0].sum()
    neg = (yv <= 0).sum()
    expected = np.cos(xv) * pos - 2 * xv * neg + 3  # j = 0, 3, 6
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


_BUG_TEMP_CARRIED = (
    "BUG: a local assigned inside a dynamic loop body (a per-iteration temporary, "
    "written before it is read in every iteration) is treated as loop-carried, because "
    "its alloca is hoisted to the top of the parallel loop body and CarriedVariables() "
    "counts every variable stored in the loop whose alloca lies outside it; so "
    "`k = (i + j) % 5; s = s + x[k] * x[i]` or `t = x[i] * j; s = s + qd.sin(t)` in "
    "range(n) raise 'needs the adstack' although no value is carried")


@test_utils.test(**F64)
def test_dynamic_loop_index_from_loop_variable():
    # The index varies per iteration but is computed from the loop variable,
    # not carried: no adstack needed.
    x, loss, xv = _setup_xy(5)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                k = (i + j) % 5
                s = s + x[k] * x[i]
            loss[None] += s

    n = 3
    # loss = sum_i x_i * sum_{j<n} x_{(i+j)%5}
    expected = np.zeros(5)
    for i in range(5):
        for j in range(n):
            k = (i + j) % 5
            expected[k] += xv[i]
            expected[i] += xv[k]
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@test_utils.test(**F64)
def test_dynamic_loop_with_per_iteration_temporary_feeding_sin():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                t = x[i] * j
                s = s + qd.sin(t)
            loss[None] += s

    n = 4
    expected = sum(j * np.cos(xv * j) for j in range(n))
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@qd.func
def _clipped_square(a):
    # Both branches assign r, then r decides a branch: r is fresh in every
    # call, so a loop calling this carries nothing through it.
    r = 0.0
    if a > 1.0:
        r = 2.0 * a - 1.0
    else:
        r = a * a
    if r > 3.0:
        r = 3.0 + 0.5 * (r - 3.0)
    return r


@test_utils.test(**F64)
def test_locals_assigned_in_both_branches_of_an_if_are_not_carried():
    # A function's locals assigned by an if/else in every iteration of a
    # dynamic loop, then tested: no adstack (not enabled here) and the
    # closed-form gradient.
    x, loss, xv = _setup_xy(6, seed=4)
    x.from_numpy(xv * 1.7)  # spread t over all three pieces

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                t = x[i] * (j + 1) * 0.5
                s = s + _clipped_square(t)
            loss[None] += s

    n = 5
    xs = xv * 1.7
    expected = np.zeros_like(xs)
    for j in range(n):
        t = xs * (j + 1) * 0.5
        inner = np.where(t > 1.0, 2.0 * t - 1.0, t * t)
        slope = np.where(t > 1.0, 2.0, 2.0 * t) * np.where(inner > 3.0, 0.5, 1.0)
        expected += slope * (j + 1) * 0.5
    _check_against_fd(forward, loss, x, xs, n, closed_form=expected)


@test_utils.test(**F64)
def test_a_local_assigned_in_one_branch_only_is_still_carried():
    # Without an else, r keeps the previous iteration's value when the
    # branch is not taken, and it is multiplied: the adstack is needed, and
    # the message says so.
    x, loss, _ = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            r = 1.0
            for j in range(n):
                if x[i] > 0.0:
                    r = r * x[i]
            loss[None] += r

    with pytest.raises(qd.QuadrantsCompilationError, match="needs the adstack"):
        with qd.ad.Tape(loss=loss):
            forward(3)


@test_utils.test(**F64)
def test_dynamic_loop_inside_run_time_branch():
    x, loss, xv = _setup_xy(6)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            if x[i] > 0.0:
                for j in range(n):
                    s = s + x[i] * x[i]
            else:
                s = qd.sin(x[i])
            loss[None] += s

    n = 3
    expected = np.where(xv > 0, 2 * n * xv, np.cos(xv))
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@test_utils.test(**F64)
def test_select_on_loop_index_inside_dynamic_loop():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                s = s + (x[i] * x[i] if j % 2 == 0 else qd.sin(x[i]))
            loss[None] += s

    n = 5  # even j: 0, 2, 4; odd: 1, 3
    _check_against_fd(forward, loss, x, xv, n, closed_form=6 * xv + 2 * np.cos(xv))


@test_utils.test(**F64)
def test_dynamic_loop_carried_value_scaled_by_constant():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = qd.sin(x[i])
            for j in range(n):
                v = v * 0.5 + x[i]
            loss[None] += v

    # v_n = 0.5^n sin x + x (1 - 0.5^n) / 0.5
    n = 5
    expected = 0.5 ** n * np.cos(xv) + (1 - 0.5 ** n) / 0.5
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)


@test_utils.test(**F64)
def test_dynamic_loop_bound_from_field_value():
    x, loss, xv = _setup_xy(4)
    count = qd.field(qd.i32, shape=())

    @qd.kernel
    def forward():
        for i in x:
            s = 0.0
            for j in range(count[None]):
                s = s + x[i] * x[i]
            loss[None] += s

    count[None] = 4
    _check_against_fd(forward, loss, x, xv, closed_form=8 * xv)


# ---- fields without gradients, 2-D layouts, global writes -------------------------

@test_utils.test(**F64)
def test_field_without_needs_grad_is_a_constant():
    # Reading a float field created without needs_grad is fine in a
    # differentiated kernel: it acts as a constant (no error, no gradient).
    x, loss, xv = _setup_xy(4)
    w = qd.field(qd.f64, shape=4)
    wv = np.array([1.5, -2.0, 0.25, 3.0])
    w.from_numpy(wv)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                s = s + w[i] * qd.sin(x[i])
            loss[None] += s + w[i] * w[i]

    n = 2
    _check_against_fd(forward, loss, x, xv, n, closed_form=n * wv * np.cos(xv))
    np.testing.assert_array_equal(w.to_numpy(), wv)


@test_utils.test(**F64)
def test_2d_field_placed_with_its_grad_and_ndrange_loop():
    m, n = 3, 4
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x = qd.field(qd.f64, needs_grad=True)
    qd.root.dense(qd.ij, (m, n)).place(x, x.grad)
    xv = np.arange(m * n, dtype=np.float64).reshape(m, n) * 0.15 - 0.8
    x.from_numpy(xv)

    @qd.kernel
    def forward():
        for i, j in qd.ndrange(m, n):
            loss[None] += qd.sin(x[i, j]) * (i + 1) + x[i, j] * j

    @qd.kernel
    def forward_struct():
        for i, j in x:
            loss[None] += qd.sin(x[i, j]) * (i + 1) + x[i, j] * j

    rows = np.arange(m)[:, None] + 1.0
    cols = np.arange(n)[None, :] * 1.0
    expected = np.cos(xv) * rows + cols
    for k in (forward, forward_struct):
        (grad,) = _tape_grad(k, loss, [x])
        assert grad == pytest.approx(expected, **EXACT)
    fd = _finite_differences(_field_loss_runner(forward, loss, x), xv)
    assert expected == pytest.approx(fd, **FD_TOL)


@test_utils.test(**F64)
def test_global_written_then_read_in_same_kernel():
    # y[i] is stored and read back in the same thread; the reverse pass must
    # route the read's adjoint through the store.
    x, loss, xv = _setup_xy(5)
    y = qd.field(qd.f64, shape=5, needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            y[i] = qd.sin(x[i])
            loss[None] += y[i] * y[i]

    _check_against_fd(forward, loss, x, xv, closed_form=2 * np.sin(xv) * np.cos(xv))


@test_utils.test(**F64)
def test_global_overwritten_in_same_kernel_is_correct_or_rejected():
    x, loss, xv = _setup_xy(5)
    y = qd.field(qd.f64, shape=5, needs_grad=True)

    @qd.kernel
    def forward():
        for i in x:
            y[i] = x[i]
            y[i] = qd.sin(y[i])
            loss[None] += y[i]

    try:
        (grad,) = _tape_grad(forward, loss, [x])
    except qd.QuadrantsError:
        return  # a clear error is acceptable; a wrong gradient is not
    assert grad == pytest.approx(np.cos(xv), **EXACT)


# ---- branches -------------------------------------------------------------------

@test_utils.test(**F64)
def test_if_elif_else_on_run_time_conditions():
    x, loss, xv = _setup_xy(8, seed=5)
    xv = np.array([-0.9, -0.6, -0.3, -0.1, 0.15, 0.4, 0.7, 0.95])
    x.from_numpy(xv)

    @qd.kernel
    def forward():
        for i in x:
            v = x[i]
            if v > 0.5:
                t = qd.sin(v)
                v = t * t
            elif v > 0.0:
                v = qd.exp(v) * 2.0
            else:
                if v < -0.5:
                    v = v * v * v
                else:
                    v = -v
            loss[None] += v

    expected = np.select([xv > 0.5, xv > 0.0, xv < -0.5],
                         [2 * np.sin(xv) * np.cos(xv), 2 * np.exp(xv), 3 * xv * xv], -1.0)
    _check_against_fd(forward, loss, x, xv, closed_form=expected)


@test_utils.test(**F64)
def test_if_condition_from_other_field_and_loop_index():
    x, loss, xv = _setup_xy(6)
    flag = qd.field(qd.i32, shape=6)
    flag.from_numpy(np.array([1, 0, 1, 1, 0, 0], dtype=np.int32))

    @qd.kernel
    def forward():
        for i in x:
            if flag[i] == 1 and i % 2 == 0:
                loss[None] += qd.cos(x[i])
            else:
                loss[None] += x[i] * 4.0

    take = np.array([True, False, True, False, False, False])
    expected = np.where(take, -np.sin(xv), 4.0)
    _check_against_fd(forward, loss, x, xv, closed_form=expected)


# ---- atomics over many elements ------------------------------------------------

@test_utils.test(**F64)
def test_atomic_sum_of_squares_over_ten_thousand_elements_is_exact():
    n = 10_000
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    rng = np.random.default_rng(7)
    xv = rng.uniform(-3, 3, n)
    x.from_numpy(xv)

    @qd.kernel
    def forward():
        for i in x:
            loss[None] += x[i] * x[i]

    with qd.ad.Tape(loss=loss):
        forward()
    # d/dx x*x = 1*x + 1*x = 2x exactly in binary floating point.
    np.testing.assert_array_equal(x.grad.to_numpy(), 2 * xv)
    # Every thread adds into the same loss adjoint read: a second backward
    # pass by hand adds another 2x.
    loss.grad[None] = 1
    forward.grad()
    np.testing.assert_array_equal(x.grad.to_numpy(), 4 * xv)


@test_utils.test(**F64)
def test_gradient_scatters_atomically_into_shared_inputs():
    # 10^4 threads all read the same few inputs: their adjoints collide.
    n = 10_000
    w = qd.field(qd.f64, shape=4, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    wv = np.array([0.5, -1.25, 2.0, 0.75])
    w.from_numpy(wv)

    @qd.kernel
    def forward():
        for i in range(n):
            loss[None] += w[i % 4] * 2.0 + w[0] * w[3]

    with qd.ad.Tape(loss=loss):
        forward()
    per = n // 4
    expected = np.full(4, 2.0 * per)
    expected[0] += n * wv[3]
    expected[3] += n * wv[0]
    np.testing.assert_array_equal(w.grad.to_numpy(), expected)


# ---- ndarray arguments ----------------------------------------------------------

@test_utils.test(**F64)
def test_ndarray_argument_with_needs_grad_gets_gradient():
    n = 6
    x = qd.ndarray(qd.f64, n, needs_grad=True)
    out = qd.ndarray(qd.f64, n, needs_grad=True)
    xv = np.linspace(-1.0, 1.2, n)
    x.from_numpy(xv)

    @qd.kernel
    def forward(a: qd.types.ndarray(qd.f64, 1), b: qd.types.ndarray(qd.f64, 1)):
        for i in range(a.shape[0]):
            b[i] = qd.sin(a[i]) * a[i]

    forward(x, out)
    np.testing.assert_allclose(out.to_numpy(), np.sin(xv) * xv, rtol=1e-15)
    seed = np.arange(1.0, n + 1)
    out.grad.from_numpy(seed)
    forward.grad(x, out)
    np.testing.assert_allclose(x.grad.to_numpy(), seed * (np.cos(xv) * xv + np.sin(xv)),
                               rtol=1e-13)


@test_utils.test(**F64)
def test_ndarray_arguments_under_tape_with_field_loss():
    n = 5
    x = qd.ndarray(qd.f64, n, needs_grad=True)
    y = np.linspace(0.5, 2.5, n)  # a plain numpy array: its gradient is discarded
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.linspace(-1.0, 1.0, n)
    x.from_numpy(xv)

    @qd.kernel
    def forward(a: qd.types.ndarray(qd.f64, 1), b: qd.types.ndarray(qd.f64, 1)):
        for i in range(a.shape[0]):
            loss[None] += qd.exp(a[i]) * b[i]

    x.grad.fill(123.0)  # stale: Tape clears ndarray adjoints on entry
    with qd.ad.Tape(loss=loss):
        forward(x, y)
    np.testing.assert_allclose(x.grad.to_numpy(), np.exp(xv) * y, rtol=1e-14)
    np.testing.assert_array_equal(y, np.linspace(0.5, 2.5, n))

    def run(values):
        x.from_numpy(values)
        loss[None] = 0
        forward(x, y)
        return loss[None]

    fd = _finite_differences(run, xv)
    assert x.grad.to_numpy() == pytest.approx(fd, **FD_TOL)


@test_utils.test(**F64)
def test_2d_ndarray_gradient_with_inner_dynamic_loop():
    m, n = 3, 4
    a = qd.ndarray(qd.f64, (m, n), needs_grad=True)
    out = qd.ndarray(qd.f64, m, needs_grad=True)
    av = np.arange(m * n, dtype=np.float64).reshape(m, n) * 0.1 - 0.5
    a.from_numpy(av)

    @qd.kernel
    def rowsum(src: qd.types.ndarray(qd.f64, 2), dst: qd.types.ndarray(qd.f64, 1)):
        for i in range(src.shape[0]):
            s = 0.0
            for j in range(src.shape[1]):
                s = s + src[i, j] * src[i, j]
            dst[i] = s

    rowsum(a, out)
    out.grad.from_numpy(np.array([1.0, -2.0, 0.5]))
    rowsum.grad(a, out)
    expected = 2 * av * np.array([1.0, -2.0, 0.5])[:, None]
    np.testing.assert_allclose(a.grad.to_numpy(), expected, rtol=1e-14)


# ---- patterns that need the adstack ---------------------------------------------
# Each kernel's dynamic loop carries a value the reverse pass needs per
# iteration. With ad_stack_experimental_enabled=False (the default) .grad()
# must raise QuadrantsCompilationError naming the file and the loop's line.

def _adstack_kernels(x, loss, y):
    kernels = {}

    @qd.kernel
    def nonlinear_op(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):  # <- dynamic loop
                v = qd.sin(v)
            loss[None] += v
    kernels["nonlinear_op"] = nonlinear_op

    @qd.kernel
    def times_runtime_value(n: qd.i32):
        for i in x:
            v = 1.0
            for j in range(n):  # <- dynamic loop
                v = v * x[i]
            loss[None] += v
    kernels["times_runtime_value"] = times_runtime_value

    @qd.kernel
    def carried_index(n: qd.i32):
        for i in x:
            k = 0
            s = 0.0
            for j in range(n):  # <- dynamic loop
                s = s + y[k] * x[i]
                k = k + 1
            loss[None] += s
    kernels["carried_index"] = carried_index

    @qd.kernel
    def carried_branch(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):  # <- dynamic loop
                if v > 0.5:
                    v = v - 1.0
                else:
                    v = v + x[i]
            loss[None] += v
    kernels["carried_branch"] = carried_branch

    @qd.kernel
    def while_loop(n: qd.i32):
        for i in x:
            v = x[i]
            j = 0
            while j < n:  # <- dynamic loop
                v = v + x[i]
                j = j + 1
            loss[None] += v
    kernels["while_loop"] = while_loop

    @qd.kernel
    def carried_select(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):  # <- dynamic loop
                v = v - 1.0 if v > 0.5 else v + x[i]
            loss[None] += v
    kernels["carried_select"] = carried_select

    @qd.kernel
    def carried_square(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):  # <- dynamic loop
                v = v * v * 0.5
            loss[None] += v
    kernels["carried_square"] = carried_square

    @qd.kernel
    def carried_divisor(n: qd.i32):
        for i in x:
            v = x[i] + 2.0
            for j in range(n):  # <- dynamic loop
                v = 1.0 / v + 1.0
            loss[None] += v
    kernels["carried_divisor"] = carried_divisor

    @qd.kernel
    def carried_through_temp_and_func(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):  # <- dynamic loop
                t = v + 1.0
                v = _square_half(t)
            loss[None] += v
    kernels["carried_through_temp_and_func"] = carried_through_temp_and_func

    @qd.kernel
    def inner_of_nested(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                v = x[i]
                for k in range(j):  # <- dynamic loop
                    v = qd.exp(v * 0.5)
                s = s + v
            loss[None] += s
    kernels["inner_of_nested"] = inner_of_nested

    return kernels


@qd.func
def _square_half(t):
    return t * t * 0.5


ADSTACK_CASES = ["nonlinear_op", "times_runtime_value", "carried_index", "carried_branch",
                 "while_loop", "carried_select", "carried_square", "carried_divisor",
                 "carried_through_temp_and_func",
                 # Only the inner loop carries v (it is reassigned at the top of
                 # every outer iteration): the error must name the inner loop.
                 "inner_of_nested"]


def _adstack_fixture():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    y = qd.field(qd.f64, shape=16, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.3, -0.2, 0.7, 1.1]))
    y.from_numpy(np.linspace(-1, 1, 16))
    return x, y, loss


def _assert_adstack_error(excinfo, kernel):
    message = str(excinfo.value)
    line = _line_of(kernel, "# <- dynamic loop")
    assert f"{os.path.basename(__file__)}:{line}" in message, (line, message)
    assert kernel.name in message
    assert "adstack" in message
    assert "ad_stack_experimental_enabled" in message


@pytest.mark.parametrize("case", ADSTACK_CASES)
@test_utils.test(**F64)
def test_loop_needing_adstack_raises_naming_the_loop_line(case):
    x, y, loss = _adstack_fixture()
    kernel = _adstack_kernels(x, loss, y)[case]
    kernel(3)  # the forward kernel itself is fine
    with pytest.raises(qd.QuadrantsCompilationError) as excinfo:
        kernel.grad(3)
    _assert_adstack_error(excinfo, kernel)
    # The same under qd.ad.Tape, and the gradients are left untouched rather
    # than silently wrong.
    with pytest.raises(qd.QuadrantsCompilationError) as excinfo:
        with qd.ad.Tape(loss=loss):
            kernel(3)
    _assert_adstack_error(excinfo, kernel)
    assert np.all(x.grad.to_numpy() == 0)


@pytest.mark.filterwarnings("ignore:.*default_ad_stack_size")
@pytest.mark.parametrize("case", [
    c
    for c in ["nonlinear_op", "times_runtime_value", "carried_index", "carried_branch",
              "while_loop", "carried_select", "carried_square", "carried_divisor",
              "carried_through_temp_and_func", "inner_of_nested"]])
@test_utils.test(arch=[qd.cpu, qd.cuda, qd.amdgpu], ad_stack_experimental_enabled=True, **F64)
def test_loop_needing_adstack_differentiates_with_adstack_enabled(case):
    # SPEC 3.2: with ad_stack_experimental_enabled=True the same kernels give
    # correct gradients (LLVM backends carry the adstack).
    x, y, loss = _adstack_fixture()
    kernel = _adstack_kernels(x, loss, y)[case]
    xv = x.to_numpy()
    for n in (0, 1, 3):
        (grad,) = _tape_grad(kernel, loss, [x], n)
        fd = _finite_differences(_field_loss_runner(kernel, loss, x, n), xv)
        assert grad == pytest.approx(fd, **FD_TOL), n
        if n == 3:
            assert np.any(grad != 1.0) and np.any(grad != 0.0)


# Linear counterparts: the same shapes with the dependence on the carried
# value removed need no adstack and differentiate correctly.

@test_utils.test(**F64)
def test_linear_counterpart_of_nonlinear_op():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v + qd.sin(x[i])  # the sin reads no carried value
            loss[None] += v

    _check_against_fd(forward, loss, x, xv, 3, closed_form=1 + 3 * np.cos(xv))


@test_utils.test(**F64)
def test_linear_counterpart_of_times_runtime_value():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = 1.0
            for j in range(n):
                v = v * 1.5 + x[i] * x[i]  # carried value times a constant
            loss[None] += v

    # v_n = 1.5^n + x^2 (1.5^n - 1) / 0.5
    n = 4
    _check_against_fd(forward, loss, x, xv, n,
                      closed_form=2 * xv * (1.5 ** n - 1) / 0.5)


@test_utils.test(**F64)
def test_linear_counterpart_of_carried_index():
    x, loss, xv = _setup_xy(4)
    y = qd.field(qd.f64, shape=16, needs_grad=True)
    yv = np.linspace(-1, 1, 16)
    y.from_numpy(yv)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            s = 0.0
            for j in range(n):
                s = s + y[j + i] * x[i]  # index from the loop variable
            loss[None] += s

    n = 5
    expected = np.array([yv[i:i + n].sum() for i in range(4)])
    _check_against_fd(forward, loss, x, xv, n, closed_form=expected)
    (gy,) = _tape_grad(forward, loss, [y], n)
    expected_y = np.zeros(16)
    for i in range(4):
        expected_y[i:i + n] += xv[i]
    assert gy == pytest.approx(expected_y, **EXACT)


@test_utils.test(**F64)
def test_linear_counterpart_of_carried_branch():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                if j % 2 == 0:  # the branch reads no carried value
                    v = v - 1.0
                else:
                    v = v + x[i]
            loss[None] += v

    n = 5  # odd j: 1, 3
    _check_against_fd(forward, loss, x, xv, n, closed_form=np.full(4, 3.0))


@test_utils.test(**F64)
def test_linear_counterpart_of_while_loop():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v + x[i]
            loss[None] += v * v

    n = 3  # v = 4x, loss = 16 x^2
    _check_against_fd(forward, loss, x, xv, n, closed_form=32 * xv)


@test_utils.test(**F64)
def test_linear_counterpart_of_carried_select():
    x, loss, xv = _setup_xy(4)

    @qd.kernel
    def forward(n: qd.i32):
        for i in x:
            v = x[i]
            for j in range(n):
                v = v - 1.0 if x[i] > 0.0 else v + x[i]  # condition not carried
            loss[None] += v

    n = 3
    _check_against_fd(forward, loss, x, xv, n, closed_form=np.where(xv > 0, 1.0, 4.0))


# ---- qd.ad.Tape over a chain of kernels -----------------------------------------

@test_utils.test(**F64)
def test_tape_over_three_kernel_chain_matches_manual_reverse_order():
    n = 6
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    y = qd.field(qd.f64, shape=n, needs_grad=True)
    z = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.linspace(-1.2, 1.3, n)
    x.from_numpy(xv)

    @qd.kernel
    def k1():
        for i in x:
            y[i] = qd.sin(x[i]) * x[i]

    @qd.kernel
    def k2():
        for i in y:
            z[i] = qd.exp(y[i]) + y[i] * y[i]

    @qd.kernel
    def k3():
        for i in z:
            loss[None] += qd.sqrt(z[i])

    def forward():
        loss[None] = 0
        k1()
        k2()
        k3()

    with qd.ad.Tape(loss=loss):
        forward()
    tape = [f.grad.to_numpy() for f in (x, y, z)]

    # By hand: zero, seed, reverse order.
    for f in (x, y, z, loss):
        f.grad.fill(0)
    loss.grad[None] = 1
    k3.grad()
    k2.grad()
    k1.grad()
    manual = [f.grad.to_numpy() for f in (x, y, z)]
    for a, b in zip(tape, manual):
        np.testing.assert_array_equal(a, b)

    # Closed form and finite differences of the whole chain.
    yv = np.sin(xv) * xv
    zv = np.exp(yv) + yv * yv
    dz = 0.5 / np.sqrt(zv)
    dy = dz * (np.exp(yv) + 2 * yv)
    dx = dy * (np.cos(xv) * xv + np.sin(xv))
    # y and z are overwritten by plain stores, so their adjoints are consumed
    # by the reverse of those stores and end at zero.
    assert np.all(tape[2] == 0) and np.all(tape[1] == 0)
    assert tape[0] == pytest.approx(dx, **EXACT)

    def run(values):
        x.from_numpy(values)
        forward()
        return loss[None]
    assert tape[0] == pytest.approx(_finite_differences(run, xv), **FD_TOL)

    # A second Tape, without clearing anything by hand (the adjoints still
    # hold the manual pass's values): the Tape clears on entry.
    assert np.all(x.grad.to_numpy() != 0)
    with qd.ad.Tape(loss=loss):
        forward()
    again = [f.grad.to_numpy() for f in (x, y, z)]
    for a, b in zip(tape, again):
        np.testing.assert_array_equal(a, b)
    assert loss.grad[None] == 1


@test_utils.test(**F64)
def test_tape_replays_kernel_arguments_and_repeated_launches():
    # The same kernel launched twice with different scalar arguments: each
    # recorded launch's gradient runs with its own arguments.
    n = 4
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    y = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.array([0.2, -0.4, 0.9, 1.3])
    x.from_numpy(xv)

    @qd.kernel
    def scale_into_y(a: qd.f64):
        for i in x:
            y[i] += qd.sin(x[i]) * a

    @qd.kernel
    def reduce():
        for i in y:
            loss[None] += y[i] * y[i]

    def forward():
        y.fill(0)
        loss[None] = 0
        scale_into_y(2.0)
        scale_into_y(-0.5)
        reduce()

    with qd.ad.Tape(loss=loss):
        forward()
    # y = 1.5 sin x, loss = 2.25 sum sin^2 x
    expected = 4.5 * np.sin(xv) * np.cos(xv)
    assert x.grad.to_numpy() == pytest.approx(expected, **EXACT)
    assert y.grad.to_numpy() == pytest.approx(3.0 * np.sin(xv), **EXACT)


@test_utils.test(ad_stack_experimental_enabled=True, default_fp=qd.f64)
def test_continue_in_the_parallel_loop_and_in_a_dynamic_loop():
    x = qd.field(qd.f64, shape=6, needs_grad=True)
    mask = qd.field(qd.i32, shape=6)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def masked(n: qd.i32):
        for i in x:
            if mask[i] == 0:
                continue
            v = x[i]
            for j in range(n):
                if j % 2 == 1:
                    continue
                v = qd.sin(v)
            loss[None] += v * v

    xs = np.linspace(0.1, 0.9, 6)
    keep = np.array([1, 0, 1, 1, 0, 1])
    x.from_numpy(xs)
    mask.from_numpy(keep)
    with qd.ad.Tape(loss=loss):
        masked(5)

    def f(v):
        for j in range(5):
            if j % 2 == 0:
                v = np.sin(v)
        return v * v

    h = 1e-6
    expected = (f(xs + h) - f(xs - h)) / (2 * h) * keep
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-6, atol=1e-8)
