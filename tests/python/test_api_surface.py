"""Smaller public API pieces: qd.select, qd.types.NDArray,
quadrants.lang.impl.current_cfg, quadrants.lang.misc.get_host_arch_list,
qd.ad.grad_replaced / qd.ad.grad_for, qd.loop_config.

Gradients here are of polynomials and compared with closed forms: in f32
they are exact small multiples of the inputs (products of at most two
values, one rounding), so test_utils.approx's f32 floor holds; in f64 rel
1e-12. A wrong or missing adjoint, or the autodiff backward running in place
of the custom one, is off by a factor of 2 or more.
"""
import inspect

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import impl, misc, options, runtime
from tests import test_utils


def _line_of(kernel, marker):
    lines, start = inspect.getsourcelines(kernel.fn)
    hits = [start + k for k, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


# ---- qd.select -----------------------------------------------------------------

@test_utils.test()
def test_select_in_kernel_elementwise_with_promotion():
    @qd.kernel
    def relu_like(x: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in x:
            out[i] = qd.select(x[i] > 0, x[i], 0)  # i32 literal promoted to f32

    xv = np.array([-2.0, -0.5, 0.0, 0.5, 3.0], dtype=np.float32)
    out = np.zeros_like(xv)
    relu_like(xv, out)
    np.testing.assert_array_equal(out, np.maximum(xv, 0))

    @qd.kernel
    def pick_int(c: qd.types.ndarray(), out: qd.types.ndarray()):
        for i in c:
            out[i] = qd.select(c[i], i * 10, -i)

    c = np.array([1, 0, 1, 0], dtype=np.int32)
    out_i = np.zeros(4, dtype=np.int32)
    pick_int(c, out_i)
    np.testing.assert_array_equal(out_i, [0, -1, 20, -3])


@test_utils.test()
def test_select_folds_compile_time_values():
    assert qd.select(True, 1, 2) == 1
    assert qd.select(0, 1.5, 2.5) == 2.5
    np.testing.assert_array_equal(qd.select(np.array([True, False]), np.array([1, 2]),
                                            np.array([3, 4])), [1, 4])
    flag = False

    @qd.kernel
    def folded(out: qd.types.ndarray()):
        for i in out:
            out[i] = qd.select(flag, 1.0, i * 2.0)

    out = np.zeros(3, dtype=np.float32)
    folded(out)
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    assert "select" not in folded.ir(out)


@test_utils.test(default_fp=qd.f64, require=qd.extension.data64)
def test_select_is_differentiable():
    n = 6
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.array([-1.5, -0.25, 0.5, 1.0, 2.0, -3.0])
    x.from_numpy(xv)

    @qd.kernel
    def piecewise():
        for i in x:
            loss[None] += qd.select(x[i] > 0, x[i] * x[i], 3 * x[i])

    with qd.ad.Tape(loss=loss):
        piecewise()
    assert loss[None] == pytest.approx(float(np.sum(np.where(xv > 0, xv * xv, 3 * xv))),
                                       rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), np.where(xv > 0, 2 * xv, 3.0), rtol=1e-12)


@test_utils.test()
def test_select_bad_condition():
    @qd.kernel
    def float_cond(x: qd.types.ndarray()):
        for i in x:
            x[i] = qd.select(x[i], 1.0, 2.0)

    with pytest.raises(qd.QuadrantsTypeError,
                       match=rf"(?s)test_api_surface.py:{_line_of(float_cond, 'qd.select')}: in "
                             rf"kernel 'float_cond':.*integer or boolean condition, found f32"):
        float_cond(np.zeros(2, dtype=np.float32))
    with pytest.raises(qd.QuadrantsTypeError, match="integer or boolean condition"):
        qd.select(0.5, 1, 2)
    with pytest.raises(qd.QuadrantsTypeError, match="condition, got str"):
        qd.select("yes", 1, 2)


# ---- qd.types.NDArray ------------------------------------------------------------

@test_utils.test()
def test_ndarray_annotation_alias():
    @qd.kernel
    def typed(a: qd.types.NDArray[qd.f32, 1], b: qd.types.NDArray[qd.i32, 2]):
        for i in a:
            a[i] = b[i, 1] * 2.0

    @qd.kernel
    def untyped(a: qd.types.NDArray):
        for i in a:
            a[i] += 1

    a = qd.ndarray(qd.f32, 3)
    b = np.arange(6, dtype=np.int32).reshape(3, 2)
    typed(a, b)
    np.testing.assert_array_equal(a.to_numpy(), [2.0, 6.0, 10.0])
    untyped(a)
    c = np.zeros(2, dtype=np.int64)
    untyped(c)
    np.testing.assert_array_equal(a.to_numpy(), [3.0, 7.0, 11.0])
    np.testing.assert_array_equal(c, [1, 1])
    with pytest.raises(qd.QuadrantsTypeError, match=r"expects an ndarray of f32, got one of f64"):
        typed(np.zeros(3), b)
    with pytest.raises(qd.QuadrantsTypeError, match=r"expects an ndarray with 2 dimensions"):
        typed(a, np.zeros(3, dtype=np.int32))
    assert qd.types.NDArray[qd.f64].dtype == qd.f64 and qd.types.NDArray[qd.f64].ndim is None


def test_ndarray_annotation_bad_parameters():
    with pytest.raises(qd.QuadrantsTypeError, match="ndim must be an int"):
        qd.types.NDArray[qd.f32, "x"]  # pylint: disable=pointless-statement
    with pytest.raises(qd.QuadrantsTypeError, match="takes a dtype and an optional ndim, got 3"):
        qd.types.NDArray[qd.f32, 1, 2]  # pylint: disable=pointless-statement
    with pytest.raises(qd.QuadrantsTypeError, match="must be a Quadrants type"):
        qd.types.NDArray["no such type", 1]  # pylint: disable=pointless-statement


# ---- current_cfg / get_host_arch_list ---------------------------------------------

@test_utils.test(debug=True, ad_stack_size=64, default_fp=qd.f64,
                 cpu_max_num_threads=3, require=qd.extension.data64)
def test_current_cfg_reflects_init_options():
    cfg = qd.lang.impl.current_cfg()
    assert cfg.arch == qd.lang.runtime.state.arch  # the arch the test runs on
    assert cfg.arch in (qd.cpu, qd.cuda, qd.vulkan)
    assert cfg.debug is True
    assert cfg.ad_stack_size == 64
    assert cfg.default_fp == qd.f64
    assert cfg.cpu_max_num_threads == 3
    assert cfg.ad_stack_experimental_enabled is False  # defaults are filled in
    assert cfg.default_ad_stack_size == 256
    for name in options.INIT_OPTIONS:  # every option qd.init() takes is readable
        getattr(cfg, name)
    with pytest.raises(AttributeError, match="no option 'not_an_option'"):
        cfg.not_an_option  # pylint: disable=pointless-statement
    with pytest.raises(AttributeError, match="no option 'not_an_option'"):
        cfg.not_an_option = 1
    with pytest.raises(AttributeError, match="chosen by qd.init"):
        cfg.arch = qd.cpu


@test_utils.test(arch=[qd.cpu, qd.vulkan])
def test_setting_an_option_after_init_changes_later_compiles():
    a = qd.ndarray(qd.i32, shape=(4,))

    def make():
        @qd.kernel
        def poke(arr: qd.types.ndarray(qd.i32, ndim=1), k: qd.i32):
            arr[k] = 1
        return poke

    make()(a, 7)  # no bounds checks: out of range goes unnoticed
    qd.cfg.debug = True
    assert qd.lang.impl.current_cfg().debug is True and qd.cfg.debug is True
    with pytest.raises(qd.QuadrantsError, match="Out of bound access"):
        make()(a, 7)   # a kernel compiled now checks indices
        qd.sync()
    with pytest.raises(qd.QuadrantsTypeError):
        qd.cfg.debug = "yes"

    @qd.kernel
    def third() -> qd.f64:
        return qd.cast(1.0 / 3.0, qd.f64)

    qd.lang.impl.get_runtime().set_default_fp(qd.f64)
    assert qd.cfg.default_fp == qd.f64
    assert third() == pytest.approx(1 / 3, rel=1e-15)   # the literals are f64 now


def test_current_cfg_needs_init():
    qd.reset()
    assert impl.current_cfg is qd.lang.impl.current_cfg
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"not initialized.*qd.init\(\)"):
        impl.current_cfg()
    qd.init(arch=qd.cpu)
    try:
        assert impl.current_cfg().debug is False
    finally:
        qd.reset()


def test_get_host_arch_list():
    archs = misc.get_host_arch_list()
    assert archs == [qd.cpu]
    assert qd.x64 in archs
    assert all(runtime.is_arch_available(a) for a in archs)


# ---- qd.ad.grad_replaced / grad_for -------------------------------------------------

def _scaling_setup(n=4):
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    y = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.arange(1, n + 1, dtype=np.float32))

    @qd.kernel
    def scale(a: qd.f32):
        for i in x:
            y[i] = x[i] * a

    @qd.kernel
    def scale_backward_doubled(a: qd.f32):
        # Twice the true gradient, so the tests can tell it ran.
        for i in x:
            x.grad[i] += 2 * a * y.grad[i]

    @qd.kernel
    def total():
        for i in y:
            loss[None] += y[i]

    return x, y, loss, scale, scale_backward_doubled, total


@test_utils.test()
def test_grad_replaced_runs_custom_backward_under_tape():
    x, y, loss, scale, scale_backward_doubled, total = _scaling_setup()
    calls = []

    @qd.ad.grad_replaced
    def forward(a):
        calls.append(("forward", a))
        scale(a)

    @qd.ad.grad_for(forward)
    def backward(a):
        calls.append(("backward", a))
        scale_backward_doubled(a)

    with qd.ad.Tape(loss=loss):
        forward(3.0)
        total()
    np.testing.assert_array_equal(y.to_numpy(), [3, 6, 9, 12])
    assert loss[None] == 30
    # Autodiff of scale would give 3; the custom backward gives 2 * 3.
    np.testing.assert_array_equal(x.grad.to_numpy(), [6, 6, 6, 6])
    assert calls == [("forward", 3.0), ("backward", 3.0)]
    assert forward.grad is backward
    assert forward.__name__ == "forward"


@test_utils.test()
def test_grad_replaced_without_tape_and_direct_grad_call():
    x, y, _, scale, scale_backward_doubled, _ = _scaling_setup()

    @qd.ad.grad_replaced
    def forward(a):
        scale(a)

    @qd.ad.grad_for(forward)
    def backward(a):
        scale_backward_doubled(a)

    forward(2.0)
    np.testing.assert_array_equal(y.to_numpy(), [2, 4, 6, 8])
    y.grad.fill(1.0)
    forward.grad(2.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), [4, 4, 4, 4])


@test_utils.test()
def test_no_grad_contributes_nothing():
    x, _, loss, scale, _, total = _scaling_setup()

    @qd.ad.no_grad
    def forward(a):
        scale(a)

    with qd.ad.Tape(loss=loss):
        forward(5.0)
        total()
    assert loss[None] == 50
    np.testing.assert_array_equal(x.grad.to_numpy(), [0, 0, 0, 0])


@test_utils.test()
def test_grad_for_errors():
    _, _, loss, scale, _, total = _scaling_setup()

    def plain(a):
        scale(a)

    with pytest.raises(qd.QuadrantsTypeError, match="decorated with qd.ad.grad_replaced"):
        qd.ad.grad_for(plain)
    with pytest.raises(qd.QuadrantsTypeError, match="got a kernel"):
        qd.ad.grad_for(scale)
    with pytest.raises(qd.QuadrantsTypeError, match="plain Python function"):
        qd.ad.grad_replaced(scale)

    @qd.ad.grad_replaced
    def forward(a):
        scale(a)

    with pytest.raises(qd.QuadrantsTypeError, match="decorates a function, got 3"):
        qd.ad.grad_for(forward)(3)
    # A missing backward fails when the tape replays, naming the function.
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"'forward' .* has no backward"):
        with qd.ad.Tape(loss=loss):
            forward(1.0)
            total()
    assert runtime.state.tape is None

    @qd.ad.grad_for(forward)
    def backward(a):  # pylint: disable=unused-argument
        pass

    with pytest.raises(qd.QuadrantsRuntimeError, match="already has a backward"):
        qd.ad.grad_for(forward)(backward)


# ---- qd.loop_config ---------------------------------------------------------------

@test_utils.test(cpu_max_num_threads=4)
def test_serialized_outermost_loop_runs_in_order():
    n = 1 << 13
    work = qd.ndarray(qd.i32, n)
    b = qd.ndarray(qd.i32, n)
    order = qd.ndarray(qd.i32, n)
    counter = qd.ndarray(qd.i32, 1)

    @qd.kernel
    def scan(work: qd.types.ndarray(), b: qd.types.ndarray(), order: qd.types.ndarray(),
             counter: qd.types.ndarray()):
        qd.loop_config(serialize=True)
        for i in range(1, b.shape[0]):
            spin = 0
            for k in range(200):  # enough work per iteration for threads to overlap
                spin = (spin * 7 + k + i) % 1000003
            work[i] = spin
            b[i] = b[i - 1] + 1  # reads the previous iteration's write
            order[qd.atomic_add(counter[0], 1)] = i

    # Run in parallel (without the loop_config line) this fails every time on
    # two or more cores: threads read b[i - 1] before it is written and
    # interleave their slots in `order`. Serially both are exact.
    for _ in range(3):
        b.fill(0)
        counter.fill(0)
        scan(work, b, order, counter)
        np.testing.assert_array_equal(b.to_numpy(), np.arange(n))
        np.testing.assert_array_equal(order.to_numpy()[:n - 1], np.arange(1, n))


@test_utils.test(cpu_max_num_threads=4)
def test_serialize_applies_to_the_next_loop_only():
    @qd.kernel
    def two_loops(a: qd.types.ndarray(), hits: qd.types.ndarray()):
        qd.loop_config(serialize=True)
        for i in a:
            if a[i] < 0:
                break  # allowed: the loop is serial
            hits[0] += 1
        for i in a:
            hits[1] += 1

    a = np.array([3, 1, 4, -1, 5, 9], dtype=np.int32)
    hits = np.zeros(2, dtype=np.int32)
    two_loops(a, hits)
    np.testing.assert_array_equal(hits, [3, 6])
    ir = two_loops.ir(a, hits)
    assert ir.count("range_for") == 3  # the serial task's loop, its loop, the parallel loop

    @qd.kernel
    def parallel_break(a: qd.types.ndarray()):
        for i in a:
            if a[i] < 0:
                break

    with pytest.raises(qd.QuadrantsSyntaxError, match="Cannot break in the outermost loop"):
        parallel_break(a)


@test_utils.test(cpu_max_num_threads=4)
def test_serialize_over_field_and_ndrange():
    f = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def number():
        qd.loop_config(serialize=True)
        for i, j in f:
            f[i, j] = f[(i * 4 + j - 1) // 4, (i * 4 + j - 1) % 4] + 1 if i + j > 0 else 0

    number()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(12).reshape(3, 4))
    g = qd.ndarray(qd.i32, (2, 5))

    counter = qd.ndarray(qd.i32, 1)

    @qd.kernel
    def number_nd(g: qd.types.ndarray(), counter: qd.types.ndarray()):
        qd.loop_config(serialize=True, block_dim=128)
        for i, j in qd.ndrange(g.shape[0], g.shape[1]):
            g[i, j] = qd.atomic_add(counter[0], 1)

    number_nd(g, counter)
    np.testing.assert_array_equal(g.to_numpy(), np.arange(10).reshape(2, 5))


@test_utils.test(cpu_max_num_threads=4, default_fp=qd.f64,
                 require=qd.extension.data64)
def test_serialized_loop_reverse_mode():
    n = 6
    x = qd.field(qd.f64, shape=n, needs_grad=True)
    a = qd.field(qd.f64, shape=n, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.linspace(0.5, 1.5, n)
    x.from_numpy(xv)

    @qd.kernel
    def running_product():
        a[0] = x[0]
        qd.loop_config(serialize=True)
        for i in range(1, n):
            a[i] = a[i - 1] * x[i]
        loss[None] = a[n - 1]

    with qd.ad.Tape(loss=loss):
        running_product()
    assert loss[None] == pytest.approx(float(np.prod(xv)), rel=1e-12)
    # d prod / d x_k = prod / x_k (six f64 products: rel 1e-12).
    np.testing.assert_allclose(x.grad.to_numpy(), np.prod(xv) / xv, rtol=1e-12)


@test_utils.test()
def test_block_dim_is_accepted_on_cpu():
    @qd.kernel
    def fill(a: qd.types.ndarray()):
        qd.loop_config(block_dim=32)
        for i in a:
            a[i] = i

    a = np.zeros(100, dtype=np.int32)
    fill(a)
    np.testing.assert_array_equal(a, np.arange(100))


@test_utils.test()
def test_loop_config_takes_a_local_bound_once_to_a_number():
    @qd.kernel
    def fill(a: qd.types.ndarray(), b: qd.types.ndarray()):
        n = 4
        qd.loop_config(block_dim=n)      # its one value is known
        for i in a:
            a[i] = n * 10 + i            # elsewhere it is a variable, as upstream
        scale = 2
        for j in b:
            b[j] = j * scale

    a = np.zeros(8, dtype=np.int32)
    b = np.zeros(3, dtype=np.int32)
    fill(a, b)
    np.testing.assert_array_equal(a, 40 + np.arange(8))
    np.testing.assert_array_equal(b, 2 * np.arange(3))

    @qd.kernel
    def not_static():
        n = 4
        qd.static_assert(n == 4)

    with pytest.raises(qd.QuadrantsTypeError, match="non-static"):
        not_static()

    @qd.kernel
    def reassigned(a: qd.types.ndarray()):
        n = 4
        n = n + 1                         # assigned twice: a run-time variable
        qd.loop_config(block_dim=n)
        for i in a:
            a[i] = n

    with pytest.raises(qd.QuadrantsTypeError, match="compile-time value"):
        reassigned(a)


@test_utils.test()
def test_loop_config_errors():
    a = np.zeros(4, dtype=np.int32)

    @qd.kernel
    def unknown(a: qd.types.ndarray()):
        qd.loop_config(serialise=True)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match=rf"(?s)test_api_surface.py:{_line_of(unknown, 'serialise')}: in "
                             rf"kernel 'unknown':.*qd.loop_config\(\) got an unknown option "
                             rf"'serialise'"):
        unknown(a)

    @qd.kernel
    def bad_block_dim(a: qd.types.ndarray()):
        qd.loop_config(block_dim=0)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsTypeError,
                       match=rf"(?s)test_api_surface.py:{_line_of(bad_block_dim, 'block_dim=0')}: "
                             rf"in kernel 'bad_block_dim':.*block_dim.*positive int.*got 0"):
        bad_block_dim(a)

    @qd.kernel
    def bad_serialize(a: qd.types.ndarray()):
        qd.loop_config(serialize=1)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsTypeError, match=r"serialize=\.\.\.\) must be a bool, got 1"):
        bad_serialize(a)

    @qd.kernel
    def runtime_value(a: qd.types.ndarray()):
        qd.loop_config(serialize=a[0] > 0)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsTypeError, match="needs a compile-time value"):
        runtime_value(a)

    @qd.kernel
    def positional(a: qd.types.ndarray()):
        qd.loop_config(True)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="keyword arguments only"):
        positional(a)

    @qd.kernel
    def statement_between(a: qd.types.ndarray()):
        qd.loop_config(serialize=True)   # configures the next loop, as upstream
        a[0] = 5
        for i in a:
            if i == 3:
                break                    # allowed: the loop is serial
            a[i] = 2

    a[:] = 0
    statement_between(a)
    assert list(a[:4]) == [2, 2, 2, 0]

    @qd.kernel
    def at_end(a: qd.types.ndarray()):
        for i in a:
            a[i] = 1
        qd.loop_config(serialize=True)

    with pytest.raises(qd.QuadrantsSyntaxError, match="found nothing"):
        at_end(a)

    with pytest.raises(qd.QuadrantsSyntaxError, match="only be called in kernel code"):
        qd.loop_config(serialize=True)
