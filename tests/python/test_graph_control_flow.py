"""qd.graph.do_while loops and qd.graph.parallel_context regions in
@qd.kernel(graph=True) kernels: results against plain Python, and the errors
for what the graph form forbids."""
import warnings

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

I32 = qd.types.ndarray(qd.i32, ndim=1)
COUNTER = qd.types.ndarray(qd.i32, ndim=0)


def _counter(value):
    c = qd.ndarray(qd.i32, shape=())
    c.from_numpy(np.array(value, dtype=np.int32))
    return c


@test_utils.test()
def test_do_while_runs_its_body_until_the_counter_reaches_zero():
    @qd.kernel(graph=True)
    def count_down(x: I32, counter: COUNTER):
        while qd.graph.do_while(counter):
            for i in range(x.shape[0]):
                x[i] = x[i] + i
            for _ in range(1):
                counter[()] = counter[()] - 1

    x = qd.ndarray(qd.i32, shape=(16,))
    for iterations in (5, 1, 12):
        x.fill(0)
        c = _counter(iterations)
        count_down(x, c)
        assert c.to_numpy() == 0
        np.testing.assert_array_equal(x.to_numpy(), np.arange(16) * iterations)


@test_utils.test()
def test_do_while_body_runs_once_even_when_the_counter_starts_at_zero_after_it():
    @qd.kernel(graph=True)
    def once(x: I32, keep_going: COUNTER):
        while qd.graph.do_while(keep_going):
            for i in range(x.shape[0]):
                x[i] += 1
                keep_going[()] = 0

    x = qd.ndarray(qd.i32, shape=(4,))
    once(x, _counter(1))
    np.testing.assert_array_equal(x.to_numpy(), [1, 1, 1, 1])


@test_utils.test()
def test_statements_around_loops_run_once_and_nested_loops_multiply():
    @qd.kernel(graph=True)
    def nested(x: I32, log: I32, outer: COUNTER, inner: COUNTER, inner_start: qd.i32):
        for i in range(1):
            log[0] += 1                      # once, before the loops
        while qd.graph.do_while(outer):
            for i in range(1):
                inner[()] = inner_start
            while qd.graph.do_while(inner):
                for i in range(x.shape[0]):
                    x[i] += 1
                for i in range(1):
                    inner[()] -= 1
            for i in range(1):
                outer[()] -= 1
        log[1] += 1                          # a bare statement: once, after
        while qd.graph.do_while(inner):      # a sibling loop
            for i in range(1):
                log[2] += 1
                inner[()] = 0

    x = qd.ndarray(qd.i32, shape=(8,))
    log = qd.ndarray(qd.i32, shape=(3,))
    nested(x, log, _counter(3), _counter(0), 4)
    np.testing.assert_array_equal(x.to_numpy(), np.full(8, 12))
    np.testing.assert_array_equal(log.to_numpy(), [1, 1, 1])


@test_utils.test()
def test_do_while_counter_as_a_data_oriented_member():
    @qd.data_oriented
    class Solver:
        def __init__(self):
            self.counter = _counter(0)
            self.x = qd.ndarray(qd.f32, shape=(4,))

        @qd.kernel(graph=True)
        def relax(self):
            while qd.graph.do_while(self.counter):
                for i in range(4):
                    self.x[i] = 0.5 * self.x[i] + 1.0
                for _ in range(1):
                    self.counter[()] -= 1

    s = Solver()
    s.counter.from_numpy(np.array(6, dtype=np.int32))
    s.relax()
    expected = 0.0
    for _ in range(6):
        expected = 0.5 * expected + 1.0
    np.testing.assert_allclose(s.x.to_numpy(), expected, rtol=1e-6)


@test_utils.test(arch=qd.cuda)
def test_cuda_runs_do_while_loops_on_the_device():
    """On CUDA the whole plan is one graph whose loops are conditional while
    nodes: the launch replays it, and each counter array passed in is the
    one its loop reads (through a slot written at every launch)."""
    @qd.kernel(graph=True)
    def count_down(x: I32, counter: COUNTER, other: COUNTER):
        for i in range(x.shape[0]):
            x[i] = 0
        while qd.graph.do_while(counter):
            for i in range(x.shape[0]):
                x[i] = x[i] + i
            for _ in range(1):
                counter[()] = counter[()] - 1
        while qd.graph.do_while(other):
            for i in range(x.shape[0]):
                x[i] = x[i] * 2
            for _ in range(1):
                other[()] = other[()] - 1

    x = qd.ndarray(qd.i32, shape=(64,))
    prog = qd.lang.runtime.program()
    for first, second in ((5, 1), (1, 3), (40, 2)):
        a, b = _counter(first), _counter(second)
        count_down(x, a, b)
        assert prog.last_launch_device_loops == 2
        assert a.to_numpy() == 0 and b.to_numpy() == 0
        np.testing.assert_array_equal(x.to_numpy(), np.arange(64) * first * 2 ** second)


@test_utils.test(arch=qd.cuda)
def test_cuda_parallel_sections_run_as_graph_branches():
    """Each qd.graph.parallel() section is a branch of the kernel's graph,
    joined by one empty node before what follows the region; inside a
    do_while body too."""
    F32 = qd.types.ndarray(qd.f32, ndim=1)

    @qd.kernel(graph=True)
    def fork_join(x: F32, y: F32, z: F32):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                for i in range(x.shape[0]):
                    x[i] = x[i] + 1.0
                for i in range(x.shape[0]):
                    x[i] = x[i] * 3.0
            with qd.graph.parallel():
                for i in range(y.shape[0]):
                    y[i] = y[i] + 2.0
        for i in range(z.shape[0]):
            z[i] = x[i] + y[i]

    @qd.kernel(graph=True)
    def repeated(x: F32, y: F32, z: F32, counter: COUNTER):
        while qd.graph.do_while(counter):
            with qd.graph.parallel_context():
                with qd.graph.parallel():
                    for i in range(x.shape[0]):
                        x[i] = x[i] + 1.0
                with qd.graph.parallel():
                    for i in range(y.shape[0]):
                        y[i] = y[i] + 2.0
            for i in range(z.shape[0]):
                z[i] = z[i] + x[i] + y[i]
            for _ in range(1):
                counter[()] = counter[()] - 1

    n = 4096
    x, y, z = (qd.ndarray(qd.f32, shape=(n,)) for _ in range(3))
    for a in (x, y, z):
        a.fill(0)
    prog = qd.lang.runtime.program()
    fork_join(x, y, z)
    tasks = prog.get_num_offloaded_tasks_on_last_call()
    assert tasks == 4 and prog.get_graph_num_nodes_on_last_call() == tasks + 1
    np.testing.assert_allclose(z.to_numpy(), 5.0)
    for a in (x, y, z):
        a.fill(0)
    repeated(x, y, z, _counter(3))
    assert prog.last_launch_device_loops == 1
    # z sums x + y = 3, 6, 9 over the iterations.
    np.testing.assert_allclose(z.to_numpy(), 18.0)


@test_utils.test(arch=qd.cuda)
def test_cuda_do_while_with_random_numbers_runs_on_the_host():
    """A part drawing qd.random() needs a new random key per iteration,
    which a replayed graph would repeat: that plan runs with host checks."""
    @qd.kernel(graph=True)
    def draws(x: qd.types.ndarray(qd.f32, ndim=1), counter: COUNTER):
        while qd.graph.do_while(counter):
            for i in range(x.shape[0]):
                x[i] += qd.random()
            for _ in range(1):
                counter[()] -= 1

    x = qd.ndarray(qd.f32, shape=(1000,))
    draws(x, _counter(4))
    assert qd.lang.runtime.program().last_launch_device_loops == 0
    values = x.to_numpy()
    assert 1.0 < values.mean() < 3.0 and len(np.unique(values)) > 900


@test_utils.test()
def test_do_while_misuse_is_reported():
    @qd.kernel
    def not_graph(counter: COUNTER):
        while qd.graph.do_while(counter):
            pass

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"requires @qd.kernel\(graph=True\)"):
        not_graph(_counter(1))

    @qd.kernel(graph=True)
    def unknown(counter: COUNTER):
        while qd.graph.do_while(count):  # noqa: F821
            pass

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match="'count' which does not resolve to an ndarray kernel parameter"):
        unknown(_counter(1))

    @qd.kernel(graph=True)
    def in_loop(x: I32, counter: COUNTER):
        for i in range(1):
            while qd.graph.do_while(counter):
                x[i] += 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel top level"):
        in_loop(qd.ndarray(qd.i32, shape=(1,)), _counter(1))

    @qd.kernel(graph=True)
    def other_while(x: I32, counter: COUNTER):
        n = 0
        while n < 3:
            n += 1
        while qd.graph.do_while(counter):
            x[0] += n

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match=r"may not contain a While statement.*\[offending stmt 1: While\]"):
        other_while(qd.ndarray(qd.i32, shape=(1,)), _counter(1))


@test_utils.test()
def test_flat_spelling_works_and_is_deprecated():
    assert qd.graph.do_while is qd.graph_do_while
    assert qd.graph.parallel is qd.graph_parallel
    assert qd.graph.parallel_context is qd.graph_parallel_context

    @qd.kernel(graph=True)
    def old(x: I32, counter: COUNTER):
        while qd.graph_do_while(counter):
            for i in range(1):
                x[0] += 1
                counter[()] -= 1

    x = qd.ndarray(qd.i32, shape=(1,))
    with pytest.warns(DeprecationWarning, match=r"qd\.graph\.do_while"):
        old(x, _counter(3))
    assert x.to_numpy()[0] == 3


def test_outside_kernels_the_names_act_as_python():
    assert qd.graph.do_while(3) is True and qd.graph.do_while(0) is False
    ran = []
    with qd.graph.parallel_context():
        with qd.graph.parallel():
            ran.append(1)
    assert ran == [1]


@test_utils.test()
def test_parallel_sections_join_before_what_follows():
    @qd.kernel(graph=True)
    def fork_join(x: I32, y: I32, z: I32, counter: COUNTER):
        while qd.graph.do_while(counter):
            with qd.graph.parallel_context():
                with qd.graph.parallel():
                    for i in range(x.shape[0]):
                        x[i] += 1
                with qd.graph.parallel():
                    for i in range(y.shape[0]):
                        y[i] += 2
                for k in qd.static(range(2)):
                    with qd.graph.parallel():
                        for i in range(1):
                            z[k] += 100
            for i in range(z.shape[0]):
                z[i] += x[i] + y[i]
            for _ in range(1):
                counter[()] -= 1

    x, y, z = (qd.ndarray(qd.i32, shape=(4,)) for _ in range(3))
    fork_join(x, y, z, _counter(2))
    np.testing.assert_array_equal(x.to_numpy(), [2] * 4)
    np.testing.assert_array_equal(z.to_numpy(), [3 + 6 + 200, 3 + 6 + 200, 9, 9])


@test_utils.test()
def test_parallel_region_misuse_is_reported():
    x = qd.ndarray(qd.i32, shape=(2,))

    @qd.kernel
    def not_graph(x: I32):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                x[0] = 1

    @qd.kernel(graph=True)
    def stray_section(x: I32):
        with qd.graph.parallel():
            x[0] = 1

    @qd.kernel(graph=True)
    def nested_sections(x: I32):
        with qd.graph.parallel_context():
            with qd.graph.parallel():
                with qd.graph.parallel():
                    x[0] = 1

    @qd.kernel(graph=True)
    def work_in_region(x: I32):
        with qd.graph.parallel_context():
            for i in range(2):
                x[i] = 1

    @qd.kernel(graph=True)
    def with_arguments(x: I32):
        with qd.graph.parallel_context():
            with qd.graph.parallel(name="a"):
                x[0] = 1

    for kernel, message in [
            (not_graph, r"requires @qd.kernel\(graph=True\)"),
            (stray_section, "can only be used directly inside a qd.graph.parallel_context"),
            (nested_sections, "sections cannot be nested"),
            (work_in_region, r"may contain only 'with qd.graph.parallel\(\):' blocks.*For"),
            (with_arguments, r"qd\.graph\.parallel\(\) takes no arguments")]:
        with pytest.raises(qd.QuadrantsSyntaxError, match=message):
            kernel(x)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        qd.graph.do_while(1)  # the canonical spelling never warns
    assert not [w for w in seen if issubclass(w.category, DeprecationWarning)]


# ---- checkpoints: pause and resume -------------------------------------------------

class Stage:
    """Labels as upstream users write them (an IntEnum is fine too)."""
    LOAD = 3
    SIM = 7


@test_utils.test()
def test_a_stage_yields_and_the_kernel_resumes_after_it():
    @qd.kernel(graph=True, checkpoints=True)
    def step(x: I32, flag: COUNTER):
        for i in range(x.shape[0]):               # an unlabelled stage
            x[i] += 1
        with qd.checkpoint(Stage.LOAD, yield_on=flag):
            for i in range(x.shape[0]):
                x[i] += 10
        with qd.checkpoint(Stage.SIM, yield_on=flag):
            for i in range(x.shape[0]):
                x[i] += 100

    x = qd.ndarray(qd.i32, shape=(3,))
    status = step(x, _counter(0))
    assert status == qd.GraphStatus(False) and status.checkpoint is None
    np.testing.assert_array_equal(x.to_numpy(), [111] * 3)

    x.fill(0)
    flag = _counter(1)
    status = step(x, flag)                       # the first yielding stage wins
    assert status.yielded and status.checkpoint == Stage.LOAD
    assert repr(status) == "GraphStatus(yielded=True, checkpoint=3)"
    np.testing.assert_array_equal(x.to_numpy(), [11] * 3)
    assert flag.to_numpy() == 1                  # never cleared for the user

    flag.from_numpy(np.array(0, dtype=np.int32))
    status = step.resume(x, flag, from_checkpoint=Stage.SIM)
    assert not status.yielded
    np.testing.assert_array_equal(x.to_numpy(), [111] * 3)

    with pytest.raises(RuntimeError, match=r"from_checkpoint=99 does not match any "
                       r"qd\.checkpoint\(cp_id=\.\.\.\) in kernel 'step'.*\[3, 7\]"):
        step.resume(x, flag, from_checkpoint=99)
    with pytest.raises(RuntimeError, match="must be an int or IntEnum value"):
        step.resume(x, flag, from_checkpoint="SIM")


@test_utils.test()
def test_a_yield_leaves_the_do_while_loop_and_bare_statements_still_run():
    @qd.kernel(graph=True, checkpoints=True)
    def solve(x: I32, log: I32, counter: COUNTER, overflow: COUNTER):
        log[0] += 1                               # prologue: always runs
        while qd.graph.do_while(counter):
            for i in range(1):
                x[0] += 1
                counter[()] -= 1
            with qd.checkpoint(0, yield_on=overflow):
                for i in range(1):
                    if x[0] == 3:
                        overflow[()] = 1
        for i in range(1):
            log[1] += 1

    x = qd.ndarray(qd.i32, shape=(1,))
    log = qd.ndarray(qd.i32, shape=(2,))
    status = solve(x, log, _counter(10), _counter(0))
    assert status.yielded and status.checkpoint == 0
    assert x.to_numpy()[0] == 3
    np.testing.assert_array_equal(log.to_numpy(), [1, 0])
    status = solve(x, log, _counter(2), _counter(0))
    assert not status.yielded and x.to_numpy()[0] == 5
    np.testing.assert_array_equal(log.to_numpy(), [2, 1])


@test_utils.test()
def test_checkpoint_misuse_is_reported():
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"checkpoints=True\) requires graph=True"):
        @qd.kernel(checkpoints=True)
        def not_graph(x: I32):
            pass

    @qd.kernel(graph=True)
    def not_opted_in(x: I32, flag: COUNTER):
        with qd.checkpoint(0, yield_on=flag):
            for i in range(1):
                x[0] = 1

    @qd.kernel(graph=True, checkpoints=True)
    def bare(x: I32, flag: COUNTER):
        with qd.checkpoint(0, yield_on=flag):
            x[0] = 1

    @qd.kernel(graph=True, checkpoints=True)
    def twice(x: I32, flag: COUNTER):
        with qd.checkpoint(1, yield_on=flag):
            for i in range(1):
                x[0] = 1
        with qd.checkpoint(1, yield_on=flag):
            for i in range(1):
                x[0] = 2

    @qd.kernel(graph=True, checkpoints=True)
    def no_flag(x: I32, flag: COUNTER):
        with qd.checkpoint(0):
            for i in range(1):
                x[0] = 1

    @qd.kernel(graph=True, checkpoints=True)
    def bad_label(x: I32, flag: COUNTER):
        with qd.checkpoint("first", yield_on=flag):
            for i in range(1):
                x[0] = 1

    x = qd.ndarray(qd.i32, shape=(1,))
    for kernel, message in [
            (not_opted_in, "not decorated with `checkpoints=True`"),
            (bare, r"bare top-level Assign statement.*for _ in range\(1\):"),
            (twice, "already used by another checkpoint"),
            (no_flag, "missing required argument `yield_on`"),
            (bad_label, "must be an int literal or an IntEnum value")]:
        with pytest.raises(qd.QuadrantsSyntaxError, match=message):
            kernel(x, _counter(0))
    ran = []
    with qd.checkpoint(0, None):
        ran.append(1)
    assert ran == [1]


# ---- gradients through do_while ----------------------------------------------------

@test_utils.test(default_fp=qd.f64)
def test_gradient_of_a_do_while_solver_matches_central_differences():
    # x <- x - 0.1 (x^3 - b) for n sweeps (a relaxation towards b^(1/3)),
    # through tmp as differentiable kernels write it;
    # loss = sum(w * x). d loss / d x0 and d loss / d b against central
    # differences in f64: h = 1e-6 gives truncation ~1e-12 and round-off
    # ~1e-10 on O(1) values, so rel 1e-6 leaves a wide margin while a
    # missing or doubled iteration is off by O(0.1).
    F64 = qd.types.ndarray(qd.f64, ndim=1)

    @qd.kernel(graph=True)
    def relax(x: F64, tmp: F64, b: F64, w: F64, loss: F64, sweeps: COUNTER):
        while qd.graph.do_while(sweeps):
            for i in range(x.shape[0]):
                tmp[i] = x[i] - 0.1 * (x[i] * x[i] * x[i] - b[i])
            for i in range(x.shape[0]):
                x[i] = tmp[i]
            for _ in range(1):
                sweeps[()] -= 1
        for i in range(x.shape[0]):
            loss[0] += w[i] * x[i]

    n, steps = 4, 7
    rng = np.random.default_rng(3)
    x0 = rng.uniform(0.5, 1.5, n)
    b0 = rng.uniform(0.5, 2.0, n)
    w0 = rng.uniform(-1.0, 1.0, n)

    def run(x_init, b_init, need_grad=False):
        x = qd.ndarray(qd.f64, shape=(n,), needs_grad=need_grad)
        tmp = qd.ndarray(qd.f64, shape=(n,), needs_grad=need_grad)
        b = qd.ndarray(qd.f64, shape=(n,), needs_grad=need_grad)
        w = qd.ndarray(qd.f64, shape=(n,))
        loss = qd.ndarray(qd.f64, shape=(1,), needs_grad=need_grad)
        sweeps = _counter(steps)
        x.from_numpy(x_init)
        b.from_numpy(b_init)
        w.from_numpy(w0)
        relax(x, tmp, b, w, loss, sweeps)
        return x, tmp, b, w, loss, sweeps

    x, tmp, b, w, loss, sweeps = run(x0, b0, need_grad=True)
    final_x = x.to_numpy()
    loss.grad.from_numpy(np.ones(1))
    # The counter is 0 now; the gradient replays the launch from its inputs.
    relax.grad(x, tmp, b, w, loss, sweeps)
    np.testing.assert_array_equal(x.to_numpy(), final_x)  # the primal is put back
    assert sweeps.to_numpy() == 0

    h = 1e-6

    def loss_of(x_init, b_init):
        return run(x_init, b_init)[4].to_numpy()[0]

    fd_x, fd_b = np.zeros(n), np.zeros(n)
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        fd_x[i] = (loss_of(x0 + e, b0) - loss_of(x0 - e, b0)) / (2 * h)
        fd_b[i] = (loss_of(x0, b0 + e) - loss_of(x0, b0 - e)) / (2 * h)
    np.testing.assert_allclose(x.grad.to_numpy(), fd_x, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(b.grad.to_numpy(), fd_b, rtol=1e-6, atol=1e-9)


@test_utils.test()
def test_gradient_of_a_do_while_kernel_over_fields_is_refused():
    state = qd.field(qd.f32, shape=4, needs_grad=True)

    @qd.kernel(graph=True)
    def step(counter: COUNTER, x: qd.types.ndarray(qd.f32, ndim=1)):
        while qd.graph.do_while(counter):
            for i in range(4):
                state[i] = state[i] * 0.5 + x[i]
            for _ in range(1):
                counter[()] -= 1

    x = qd.ndarray(qd.f32, shape=(4,), needs_grad=True)
    c = _counter(2)
    step(c, x)
    before = state.to_numpy()
    with pytest.raises(qd.QuadrantsTypeError, match="uses 'state', which is not one"):
        step.grad(c, x)
    np.testing.assert_array_equal(state.to_numpy(), before)  # nothing replayed


@test_utils.test()
def test_the_plan_is_visible_under_upstreams_names():
    @qd.kernel(graph=True, checkpoints=True)
    def k(x: I32, outer: COUNTER, inner: COUNTER, flag: COUNTER):
        while qd.graph.do_while(outer):
            while qd.graph.do_while(inner):
                for i in range(1):
                    x[0] += 1
                    inner[()] = 0
            with qd.checkpoint(5, yield_on=flag):
                for i in range(1):
                    outer[()] = 0
        for i in range(1):
            x[0] += 10

    k(qd.ndarray(qd.i32, shape=(1,)), _counter(1), _counter(1), _counter(0))
    levels = k._primal.graph_do_while_levels
    assert [(lv.cond_arg_name, lv.parent_id) for lv in levels] == [("outer", -1), ("inner", 0)]
    assert levels[0].cond_cpp_arg_id != levels[1].cond_cpp_arg_id
    assert k.graph_do_while_arg == "outer"
    assert k.checkpoint_user_labels_by_cp_id == [None, 5, None]
    assert k.checkpoint_yield_on_args == [None, "flag", None]
    assert k.checkpoint_yield_on_cpp_arg_ids == [-1, 3, -1]


@test_utils.test(arch=qd.cuda)
def test_cuda_compute_capability_is_reported():
    capability = qd.lang.impl.get_cuda_compute_capability()
    assert capability >= 50 and f"sm_{capability}" in \
        qd.lang.runtime.program().device_description


@test_utils.test(arch=qd.cpu)
def test_compute_capability_needs_cuda():
    with pytest.raises(qd.QuadrantsRuntimeError, match="does not run on qd.cuda"):
        qd.lang.impl.get_cuda_compute_capability()
