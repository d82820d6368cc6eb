"""The global data access rule and overwrite semantics of reverse mode
(SPEC 3.1b).

Gradients are checked against central differences of the forward kernels
run in f64 with h = 1e-6: the truncation error h^2 |f'''| / 6 is below 1e-11
for the smooth, O(1) functions below, and the round-off of two forward runs
is about eps * sum|terms| / h < 1e-9, so rel 1e-6 / abs 1e-8 leaves ample
margin while a dropped or doubled adjoint term is off by O(1).
"""
import inspect

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

F64 = dict(default_fp=qd.f64)
FD = dict(rel=1e-6, abs=1e-8)
H = 1e-6


def _central_differences(run, values):
    """d run(values) / d values by central differences (run returns a float)."""
    grad = np.zeros_like(values)
    for idx in np.ndindex(values.shape):
        plus, minus = values.copy(), values.copy()
        plus[idx] += H
        minus[idx] -= H
        grad[idx] = (run(plus) - run(minus)) / (2 * H)
    return grad


def _line_of(fn, text):
    """The absolute line number of the first source line of fn containing text."""
    lines, start = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


# ---- time stepping through fields indexed by step ----------------------------------

@test_utils.test(**F64)
def test_two_line_time_step_kernel_matches_finite_differences():
    n, steps, dt = 4, 6, 0.1
    x = qd.field(qd.f64)
    v = qd.field(qd.f64)
    qd.root.dense(qd.ij, (steps + 1, n)).place(x, x.grad, v, v.grad)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def step(t: qd.i32):
        for i in range(n):
            v[t + 1, i] = v[t, i] - dt * qd.sin(x[t, i])
            x[t + 1, i] = x[t, i] + dt * v[t + 1, i]

    @qd.kernel
    def compute_loss():
        for i in range(n):
            loss[None] += x[steps, i] * x[steps, i]

    x0 = np.linspace(0.2, 1.1, n)

    def run(initial):
        x.fill(0)
        v.fill(0)
        for i in range(n):
            x[0, i] = initial[i]
        loss[None] = 0
        for t in range(steps):
            step(t)
        compute_loss()
        return loss[None]

    with qd.ad.Tape(loss=loss):
        run(x0)
    grad = x.grad.to_numpy()[0]
    assert grad == pytest.approx(_central_differences(run, x0), **FD)
    assert np.any(np.abs(grad) > 0.1)


@test_utils.test(**F64)
def test_in_kernel_time_loop_matches_finite_differences():
    n, steps, dt = 3, 8, 0.05
    x = qd.field(qd.f64, shape=(steps + 1, n), needs_grad=True)
    v = qd.field(qd.f64, shape=(steps + 1, n), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def simulate():
        for i in range(n):
            for t in range(steps):
                v[t + 1, i] = v[t, i] - dt * x[t, i] * x[t, i]
                x[t + 1, i] = x[t, i] + dt * v[t + 1, i]
            loss[None] += qd.cos(x[steps, i])

    x0 = np.array([0.3, -0.7, 1.2])

    def run(initial):
        x.fill(0)
        v.fill(0)
        for i in range(n):
            x[0, i] = initial[i]
        loss[None] = 0
        simulate()
        return loss[None]

    with qd.ad.Tape(loss=loss):
        run(x0)
    tape_grad = x.grad.to_numpy()[0]
    assert tape_grad == pytest.approx(_central_differences(run, x0), **FD)

    # The same through kernel.grad() by hand.
    run(x0)
    x.grad.fill(0)
    v.grad.fill(0)
    loss.grad[None] = 1
    simulate.grad()
    assert x.grad.to_numpy()[0] == pytest.approx(tape_grad, rel=1e-12, abs=1e-14)


@test_utils.test(**F64)
def test_prefix_sum_in_serial_loop_matches_finite_differences():
    n = 7
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    out = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def prefix():
        for _ in range(1):
            out[0] = x[0]
            for i in range(1, n):
                out[i] = out[i - 1] * 0.9 + qd.sin(x[i])
        for i in range(n):
            loss[None] += out[i] * out[i]

    xv = np.linspace(-0.8, 1.0, n)

    def run(values):
        x.from_numpy(values)
        loss[None] = 0
        prefix()
        return loss[None]

    with qd.ad.Tape(loss=loss):
        run(xv)
    assert x.grad.to_numpy() == pytest.approx(_central_differences(run, xv), **FD)


@test_utils.test(**F64)
def test_ndarray_state_stepped_by_time_index():
    n, steps = 3, 5

    @qd.kernel
    def simulate(state: qd.types.ndarray(qd.f64, 2), loss: qd.types.ndarray(qd.f64, 1)):
        for i in range(n):
            for t in range(steps):
                state[t + 1, i] = qd.tanh(state[t, i]) + 0.5
            loss[0] += state[steps, i]

    s0 = np.array([0.1, -0.4, 0.9])

    def run(initial):
        state = np.zeros((steps + 1, n))
        state[0] = initial
        loss = np.zeros(1)
        simulate(state, loss)
        return loss[0]

    state = qd.ndarray(qd.f64, (steps + 1, n), needs_grad=True)
    loss = qd.ndarray(qd.f64, 1, needs_grad=True)
    state.from_numpy(np.vstack([s0, np.zeros((steps, n))]))
    simulate(state, loss)
    loss.grad[0] = 1
    simulate.grad(state, loss)
    assert state.grad.to_numpy()[0] == pytest.approx(_central_differences(run, s0), **FD)


# ---- what the rule accepts and rejects ------------------------------------------

@test_utils.test(**F64)
def test_read_then_overwrite_same_element_names_variable_and_both_lines():
    temperature = qd.field(qd.f64, shape=4, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def heat():
        for i in range(4):
            old = temperature[i]
            temperature[i] = qd.sin(old)
            loss[None] += temperature[i]

    heat()  # the forward kernel alone is fine
    with pytest.raises(qd.QuadrantsCompilationError) as err:
        heat.grad()
    message = str(err.value)
    file = inspect.getsourcefile(heat.fn)
    assert "'temperature'" in message
    assert "field1" not in message and "field2" not in message
    assert f"{file}:{_line_of(heat.fn, 'old = temperature[i]')}" in message
    assert f"{file}:{_line_of(heat.fn, 'temperature[i] = qd.sin(old)')}" in message
    assert "heat" in message


@test_utils.test(**F64)
def test_reading_an_element_a_later_iteration_overwrites_is_rejected():
    n = 5
    out = qd.field(qd.f64, shape=n + 1, needs_grad=True)

    @qd.kernel
    def shift():
        for _ in range(1):
            for j in range(n):
                out[j] = qd.sin(out[j + 1])  # out[j + 1] is written next iteration

    with pytest.raises(qd.QuadrantsCompilationError, match="'out'"):
        shift.grad()


@test_utils.test(**F64)
def test_linear_shift_over_a_later_iteration_matches_finite_differences():
    # out[j] = 2 out[j + 1] + x[j] overwrites what the previous iteration
    # read, but only linearly: no adjoint needs the overwritten value.
    n = 5
    out = qd.field(qd.f64, shape=n + 1, needs_grad=True)
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    w = qd.field(qd.f64, shape=n + 1)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    w.from_numpy(np.linspace(0.5, 3.0, n + 1))

    @qd.kernel
    def shift():
        for _ in range(1):
            for j in range(n):
                out[j] = out[j + 1] * 2.0 - 0.5 * x[j] + out[j + 1] / 4.0

    @qd.kernel
    def weigh():
        for j in out:
            loss[None] += w[j] * out[j] * out[j]

    def run(initial):
        out.from_numpy(initial[:n + 1])
        x.from_numpy(initial[n + 1:])
        loss[None] = 0
        shift()
        weigh()
        return loss[None]

    start = np.linspace(-1.0, 1.0, 2 * n + 1)
    with qd.ad.Tape(loss=loss):
        run(start)
    grad = np.concatenate([out.grad.to_numpy(), x.grad.to_numpy()])
    assert grad == pytest.approx(_central_differences(run, start), **FD)


@test_utils.test(**F64)
def test_in_place_accumulation_at_the_kernel_top_is_differentiated():
    n = 4
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    out = qd.field(qd.f64, shape=n, needs_grad=True)

    @qd.kernel
    def accumulate():
        for i in range(n):
            out[i] = out[i] + x[None] * 3.0

    x[None] = 1.0
    accumulate()
    for i in range(n):
        out.grad[i] = i + 1.0
    accumulate.grad()
    # d/dx sum_i (i + 1) out[i] = 3 * (1 + 2 + 3 + 4); out's own adjoint
    # passes through unchanged.
    assert x.grad[None] == pytest.approx(30.0, rel=1e-12)
    assert out.grad.to_numpy() == pytest.approx([1.0, 2.0, 3.0, 4.0], rel=1e-12)


@test_utils.test(**F64)
def test_in_place_nonlinear_update_is_still_rejected():
    out = qd.field(qd.f64, shape=4, needs_grad=True)

    @qd.kernel
    def square():
        for i in range(4):
            out[i] = out[i] * out[i] + 1.0

    with pytest.raises(qd.QuadrantsCompilationError, match="'out' is read"):
        square.grad()


@pytest.mark.parametrize("in_func", [False, True])
@test_utils.test(**F64)
def test_cross_iteration_read_in_a_parallel_loop_is_rejected(in_func):
    n = 4
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    out = qd.field(qd.f64, shape=n, needs_grad=True)

    @qd.func
    def chain():
        for i in range(n):
            if i == 0:
                out[i] = x[None]
            else:
                out[i] = out[i - 1] + x[None]

    @qd.kernel
    def prefix():
        if qd.static(in_func):
            chain()
        else:
            for i in range(n):
                if i == 0:
                    out[i] = x[None]
                else:
                    out[i] = out[i - 1] + x[None]

    with pytest.raises(qd.QuadrantsCompilationError) as err:
        prefix.grad()
    message = str(err.value)
    assert "Cross-iteration read-after-write through field 'out'" in message
    assert "in kernel 'prefix'" in message
    assert "serialize=True" in message


@test_utils.test(**F64)
def test_cross_iteration_chain_in_a_serialized_loop_is_differentiated():
    n = 4
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    out = qd.field(qd.f64, shape=n, needs_grad=True)

    @qd.kernel
    def prefix():
        qd.loop_config(serialize=True)
        for i in range(n):
            if i == 0:
                out[i] = x[None]
            else:
                out[i] = out[i - 1] + x[None]

    x[None] = 1.0
    prefix()
    assert out.to_numpy() == pytest.approx([1.0, 2.0, 3.0, 4.0])
    out.grad[n - 1] = 1.0
    prefix.grad()
    assert x.grad[None] == pytest.approx(float(n), rel=1e-12)


@test_utils.test(**F64)
def test_a_neighbour_read_of_another_field_is_not_cross_iteration():
    n = 5
    src = qd.field(qd.f64, shape=n + 1, needs_grad=True)
    dst = qd.field(qd.f64, shape=n, needs_grad=True)

    @qd.kernel
    def difference():
        for i in range(n):
            dst[i] = src[i + 1] - src[i]

    dst.grad.fill(1.0)
    difference.grad()
    assert src.grad.to_numpy() == pytest.approx([-1.0, 0, 0, 0, 0, 1.0], abs=1e-12)


@test_utils.test(**F64)
def test_matrix_components_written_then_read_with_run_time_indices():
    m = qd.Matrix.field(2, 2, qd.f64, 3, needs_grad=True)
    a = qd.Matrix.field(2, 2, qd.f64, 3, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def scale():
        for i in range(3):
            for j, k in qd.ndrange(2, 2):
                m[i][j, k] = (j + 1) * (k + 2) * a[i][j, k]
                loss[None] += m[i][j, k]

    loss.grad[None] = 1.0
    scale.grad()
    expected = np.array([[2.0, 3.0], [4.0, 6.0]])
    for i in range(3):
        assert a.grad[i].to_numpy() == pytest.approx(expected, rel=1e-12)


@test_utils.test(**F64)
def test_constant_outside_the_written_range_is_accepted():
    n = 6
    y = qd.field(qd.f64, shape=n, needs_grad=True)
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def spread():
        for _ in range(1):
            for j in range(1, n):
                y[j] = y[0] * x[j] * x[j]
            y[n - 1] = y[1] + y[2]  # different constants: read 1, 2; write n - 1
        for j in range(n):
            loss[None] += y[j]

    xv = np.linspace(0.5, 1.5, n)

    def run(values):
        x.from_numpy(values)
        y.fill(0)
        y[0] = 1.5
        loss[None] = 0
        spread()
        return loss[None]

    with qd.ad.Tape(loss=loss):
        run(xv)
    assert x.grad.to_numpy() == pytest.approx(_central_differences(run, xv), **FD)

    @qd.kernel
    def spread_over_itself():
        for _ in range(1):
            for j in range(n):  # j = 0 overwrites the y[0] every iteration reads
                y[j] = y[0] * x[j]

    with pytest.raises(qd.QuadrantsCompilationError, match="'y'"):
        spread_over_itself.grad()


@test_utils.test(**F64)
def test_overwrite_in_a_later_parallel_loop_is_rejected():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    y = qd.field(qd.f64, shape=4, needs_grad=True)

    @qd.kernel
    def two_loops():
        for i in range(4):
            y[i] = qd.exp(x[i])
        for i in range(4):
            x[i] = y[i] * 2.0

    with pytest.raises(qd.QuadrantsCompilationError) as err:
        two_loops.grad()
    assert "'x'" in str(err.value)


@test_utils.test(**F64)
def test_ndarray_read_then_overwrite_names_the_parameter():
    @qd.kernel
    def square_in_place(values: qd.types.ndarray(qd.f64, 1)):
        for i in range(values.shape[0]):
            values[i] = values[i] * values[i]

    a = qd.ndarray(qd.f64, 3, needs_grad=True)
    with pytest.raises(qd.QuadrantsCompilationError, match="ndarray 'values'"):
        square_in_place.grad(a)


# ---- overwrite semantics -------------------------------------------------------

@test_utils.test(**F64)
def test_store_overwrite_through_tape_and_by_hand():
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def times(k: qd.f64):
        loss[None] = k * x[None]

    x[None] = 3.0
    with qd.ad.Tape(loss=loss):
        times(1.0)
        times(2.0)
        times(4.0)
    assert x.grad[None] == 4.0  # only the last store reaches the loss
    assert loss.grad[None] == 0.0

    x.grad[None] = 0
    loss.grad[None] = 1
    for k in (4.0, 2.0, 1.0):
        times.grad(k)
    assert x.grad[None] == 4.0


@test_utils.test(**F64)
def test_chain_of_stores_intermediate_grads_are_zero():
    x, a, b, c, d, e = (qd.field(qd.f64, shape=(), needs_grad=True) for _ in range(6))

    @qd.kernel
    def copy_a():
        a[None] = x[None]

    @qd.kernel
    def double_b():
        b[None] = 2 * a[None]

    @qd.kernel
    def triple_c():
        c[None] = 3 * b[None]

    @qd.kernel
    def quadruple_d():
        d[None] = 4 * c[None]

    @qd.kernel
    def quintuple_e():
        e[None] = 5 * d[None]

    kernels = [copy_a, double_b, triple_c, quadruple_d, quintuple_e]
    x[None] = 1.0
    with qd.ad.Tape(loss=e):
        for k in kernels:
            k()
    assert x.grad[None] == 120.0
    assert [f.grad[None] for f in (a, b, c, d, e)] == [0.0] * 5

    for f in (x, a, b, c, d):
        f.grad[None] = 0
    e.grad[None] = 1
    for k in reversed(kernels):
        k.grad()
    assert x.grad[None] == 120.0
    assert [f.grad[None] for f in (a, b, c, d, e)] == [0.0] * 5


@test_utils.test(**F64)
def test_augmented_assignment_keeps_accumulating():
    x = qd.field(qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def add(k: qd.f64):
        loss[None] += k * x[None]

    with qd.ad.Tape(loss=loss):
        add(1.0)
        add(2.0)
        add(4.0)
    assert x.grad[None] == 7.0
    assert loss.grad[None] == 1.0


@test_utils.test(**F64)
def test_tape_validation_reports_the_violation_at_the_launch():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    b = qd.field(qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def breaks_rule():
        loss[None] = x[1] * b[None]
        b[None] += 100  # b was read above: its old value is lost

    launched_after = []
    with pytest.raises(qd.QuadrantsAssertionError) as err:
        with qd.ad.Tape(loss=loss, validation=True):
            breaks_rule()
            launched_after.append(True)
    assert not launched_after  # raised at the launch, not on exit
    assert isinstance(err.value, qd.QuadrantsCompilationError)
    assert "'b'" in str(err.value)

    @qd.kernel
    def fine():
        loss[None] = x[1] * b[None]

    with qd.ad.Tape(loss=loss, validation=True) as tape:
        fine()
        fine()
    assert [fn for fn, _ in tape.calls] == [fine, fine]
    with pytest.raises(qd.QuadrantsTypeError, match="validation"):
        qd.ad.Tape(loss=loss, validation="yes")


@test_utils.test(**F64)
def test_serialized_outer_time_loop_matches_finite_differences():
    n, steps, dt = 3, 6, 0.1
    x = qd.field(qd.f64, shape=(steps + 1, n), needs_grad=True)
    v = qd.field(qd.f64, shape=(steps + 1, n), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def simulate():
        qd.loop_config(serialize=True)
        for t in range(steps):
            for i in range(n):
                v[t + 1, i] = v[t, i] - dt * qd.sin(x[t, i])
                x[t + 1, i] = x[t, i] + dt * v[t + 1, i]
        for i in range(n):
            loss[None] += x[steps, i] ** 2

    def run(initial):
        x.fill(0)
        v.fill(0)
        for i in range(n):
            x[0, i] = initial[i]
        loss[None] = 0
        simulate()
        return loss[None]

    x0 = np.array([0.3, 0.9, -0.5])
    with qd.ad.Tape(loss=loss):
        run(x0)
    assert x.grad.to_numpy()[0] == pytest.approx(_central_differences(run, x0), **FD)


# ---- what the gradient kernel cannot replay: clear errors -----------------------

@test_utils.test(**F64)
def test_using_an_atomic_result_in_a_differentiated_kernel_is_an_error():
    n = 4
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    y = qd.field(qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def running_sum():
        for _ in range(1):
            for i in range(n):
                old = qd.atomic_add(y[None], x[i])  # the replay would see the final y
                loss[None] += old * x[i]

    running_sum()
    with pytest.raises(qd.QuadrantsCompilationError, match="atomic operation returns"):
        running_sum.grad()
    with pytest.raises(RuntimeError, match="running_sum"):  # also a RuntimeError
        running_sum.grad()


@test_utils.test(**F64)
def test_an_atomic_counter_handing_out_integer_slots_differentiates():
    n = 6
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    picked = qd.field(qd.i32, shape=n)
    count = qd.field(qd.i32, shape=())
    out = qd.field(qd.f64, shape=n)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def compact_and_reduce():
        for i in range(n):
            if x[i] > 0:
                k = qd.atomic_add(count[None], 1)  # only integer data depends on k
                if k < n:
                    picked[k] = i
            loss[None] += x[i] * x[i] * x[i]

    x0 = np.array([0.5, -1.0, 2.0, 0.25, -0.5, 1.5])
    x.from_numpy(x0)
    with qd.ad.Tape(loss=loss):
        compact_and_reduce()
    assert sorted(picked.to_numpy()[:count[None]].tolist()) == [0, 2, 3, 5]
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * x0**2, rtol=1e-12)

    @qd.kernel
    def scatter_floats():
        for i in range(n):
            k = qd.atomic_add(count[None], 1)
            out[k % n] = x[i]  # the float store's index would be replayed wrong

    with pytest.raises(qd.QuadrantsCompilationError, match="atomic operation returns"):
        scatter_floats.grad()


@test_utils.test(**F64)
def test_a_narrowing_index_cast_is_not_assumed_distinct():
    n = 4
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def wraps():
        for i in range(n):
            loss[None] += x[i] * x[i]
            x[qd.cast(i + 256, qd.u8)] = 5.0  # u8 wraps i + 256 back onto i

    with pytest.raises(qd.QuadrantsCompilationError, match="'x'"):
        wraps.grad()


@test_utils.test(**F64)
def test_a_nested_struct_for_that_stores_is_an_error():
    x = qd.field(qd.f64, shape=4, needs_grad=True)
    y = qd.field(qd.f64, shape=1, needs_grad=True)

    @qd.kernel
    def last_wins():
        for _ in range(1):
            for j in x:  # only the last cell's store survives
                y[0] = x[j] * x[j]

    with pytest.raises(qd.QuadrantsCompilationError, match="struct-for"):
        last_wins.grad()


@test_utils.test(**F64)
def test_one_array_bound_to_two_parameters_one_written_is_an_error():
    n = 3

    @qd.kernel
    def k(p: qd.types.ndarray(), q: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in range(n):
            out[0] += p[i] * p[i]
            q[i] = 0.0

    a = qd.ndarray(qd.f64, n, needs_grad=True)
    loss = qd.ndarray(qd.f64, 1, needs_grad=True)
    a.from_numpy(np.array([1.0, 2.0, 3.0]))
    k(a, a, loss)
    with pytest.raises(qd.QuadrantsCompilationError, match="'p' and 'q' are the same array"):
        k.grad(a, a, loss)
    b = qd.ndarray(qd.f64, n, needs_grad=True)  # distinct arrays are fine
    b.from_numpy(np.array([1.0, 2.0, 3.0]))
    loss.grad[0] = 1.0
    k.grad(b, a, loss)
    np.testing.assert_allclose(b.grad.to_numpy(), [2.0, 4.0, 6.0])
