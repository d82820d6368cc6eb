"""Plain Python functions, lambdas and bound methods called from kernel code
with run-time values (inlined like a @qd.func), and Field / Ndarray
has_grad() / has_dual().

Values are compared with numpy references. Gradients are compared with the
closed-form derivatives; inputs lie in [-1, 1] where every derivative used
here is O(1), so f32 rounding of a few operations bounds the error by a few
ulps: rtol=1e-5, atol=1e-6 leaves margin without hiding a wrong term (the
smallest term any test could lose is >= 1e-2).
"""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

N = 16
XS = np.linspace(-1.0, 1.0, N).astype(np.float32)
RTOL, ATOL = 1e-5, 1e-6


def _fields(needs_grad=False):
    x = qd.field(qd.f32, shape=N, needs_grad=needs_grad)
    y = qd.field(qd.f32, shape=N, needs_grad=needs_grad)
    x.from_numpy(XS)
    return x, y


# ---- helpers at module level, as users write them ------------------------------

def square_plus_sin(v):
    return v * v + qd.sin(v)


def scaled(v, scale=2.0, *, shift=1.0):
    return scale * v + shift


def sin_cos(v):
    return qd.sin(v), qd.cos(v)


def piecewise(v):
    r = v * v
    if v < 0:
        r = -3.0 * v
    return r


def outer(v):
    return square_plus_sin(v) * 2.0 + inner_qd(v)


@qd.func
def inner_qd(v):
    return qd.exp(v)


@qd.func
def qd_func_calling_plain(v):
    return square_plus_sin(v) + 1.0


tanh_lambda = lambda v: qd.tanh(v)  # noqa: E731
double, triple = lambda v: v * 2.0, lambda v: v * 3.0  # noqa: E731
sq = lambda v: v * v  # noqa: E731
quartic = lambda v: sq(sq(v))  # noqa: E731
with_default = lambda v, k=5.0: k * v  # noqa: E731
LAMBDA_TABLE = {
    "cube": lambda v: v * v * v,
    "neg": lambda v: -v,
}


# ---- def functions ----------------------------------------------------------------

@test_utils.test()
def test_def_function_with_runtime_values():
    x, y = _fields()

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = square_plus_sin(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), XS * XS + np.sin(XS), rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_def_function_nested_calls_and_qd_funcs():
    x, y = _fields()
    z = qd.field(qd.f32, shape=N)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = outer(x[i])                 # plain -> plain and plain -> qd.func
            z[i] = qd_func_calling_plain(x[i])  # qd.func -> plain

    run()
    base = XS * XS + np.sin(XS)
    np.testing.assert_allclose(y.to_numpy(), 2.0 * base + np.exp(XS), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.to_numpy(), base + 1.0, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_def_function_default_and_keyword_args():
    x, y = _fields()
    z = qd.field(qd.f32, shape=N)
    w = qd.field(qd.f32, shape=N)

    @qd.kernel
    def run(s: qd.f32):
        for i in range(N):
            y[i] = scaled(x[i])
            z[i] = scaled(x[i], 3.0)
            w[i] = scaled(x[i], scale=s, shift=s)

    run(-0.5)
    np.testing.assert_allclose(y.to_numpy(), 2.0 * XS + 1.0, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.to_numpy(), 3.0 * XS + 1.0, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w.to_numpy(), -0.5 * XS - 0.5, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_def_function_returning_tuple():
    x, y = _fields()
    z = qd.field(qd.f32, shape=N)

    @qd.kernel
    def run():
        for i in range(N):
            s, c = sin_cos(x[i])
            y[i] = s
            z[i] = c

    run()
    np.testing.assert_allclose(y.to_numpy(), np.sin(XS), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.to_numpy(), np.cos(XS), rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_def_function_with_runtime_control_flow():
    x, y = _fields()

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = piecewise(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), np.where(XS < 0, -3.0 * XS, XS * XS),
                               rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_nested_def_with_closure():
    x, y = _fields()
    gain = 4.0

    def local_helper(v):
        return gain * v + x[0]  # a closure constant and a field read at run time

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = local_helper(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), 4.0 * XS + XS[0], rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_bound_method():
    x, y = _fields()

    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, v):
            return self.k * v + 1.0

    scaler = Scaler(3.0)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = scaler.apply(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), 3.0 * XS + 1.0, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_field_argument_is_read_at_run_time():
    # A Python function given a field indexes it in the kernel, not on the
    # host at compile time: a later host write shows in the next launch of
    # the already compiled kernel.
    x, y = _fields()

    def first(f):
        return f[0]

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = first(x)

    run()
    np.testing.assert_allclose(y.to_numpy(), np.full(N, XS[0]))
    x[0] = 7.5
    run()
    np.testing.assert_allclose(y.to_numpy(), np.full(N, 7.5))


@test_utils.test()
def test_compile_time_call_still_runs_in_python():
    y = qd.field(qd.i32, shape=N)
    calls = []

    def python_only(n):
        calls.append(n)
        return sum([k for k in range(n)])  # a comprehension: Python, not kernel code

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = python_only(5) + i

    run()
    assert calls == [5]
    np.testing.assert_array_equal(y.to_numpy(), np.arange(N) + 10)


# ---- lambdas ----------------------------------------------------------------------

@test_utils.test()
def test_lambda_single_line():
    x, y = _fields()

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = tanh_lambda(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), np.tanh(XS), rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_two_lambdas_on_one_line():
    x, y = _fields()
    z = qd.field(qd.f32, shape=N)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = double(x[i])
            z[i] = triple(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), 2.0 * XS, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.to_numpy(), 3.0 * XS, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_lambda_calling_lambda_default_arg_and_table():
    x, y = _fields()
    z = qd.field(qd.f32, shape=N)
    w = qd.field(qd.f32, shape=N)
    u = qd.field(qd.f32, shape=N)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = quartic(x[i])
            z[i] = with_default(x[i])
            w[i] = with_default(x[i], 0.5)
            u[i] = LAMBDA_TABLE["cube"](x[i]) + LAMBDA_TABLE["neg"](x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), XS ** 4, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.to_numpy(), 5.0 * XS, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(w.to_numpy(), 0.5 * XS, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(u.to_numpy(), XS ** 3 - XS, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_local_lambda_capturing_a_closure():
    x, y = _fields()
    offset = 0.25
    shifted = lambda v: v + offset  # noqa: E731

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = shifted(x[i])

    run()
    np.testing.assert_allclose(y.to_numpy(), XS + 0.25, rtol=RTOL, atol=ATOL)


# ---- reverse-mode gradients through them ------------------------------------------

@test_utils.test()
def test_gradient_through_def_and_lambda():
    x, y = _fields(needs_grad=True)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = square_plus_sin(x[i]) + tanh_lambda(x[i]) + triple(x[i])

    run()
    y.grad.fill(1.0)
    run.grad()
    expected = 2.0 * XS + np.cos(XS) + (1.0 - np.tanh(XS) ** 2) + 3.0
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_gradient_through_tuple_return_and_branch():
    x = qd.field(qd.f32, shape=N, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(XS)

    @qd.kernel
    def run():
        for i in range(N):
            s, c = sin_cos(x[i])
            loss[None] += s * c + piecewise(x[i])

    run()
    loss.grad[None] = 1.0
    run.grad()
    # d/dv sin v cos v = cos 2v; piecewise: -3 for v < 0, else 2v.
    expected = np.cos(2.0 * XS) + np.where(XS < 0, -3.0, 2.0 * XS)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=RTOL, atol=ATOL)


@test_utils.test()
def test_gradient_through_nested_plain_calls():
    x, y = _fields(needs_grad=True)

    @qd.kernel
    def run():
        for i in range(N):
            y[i] = outer(x[i]) + quartic(x[i])

    run()
    y.grad.fill(1.0)
    run.grad()
    expected = 2.0 * (2.0 * XS + np.cos(XS)) + np.exp(XS) + 4.0 * XS ** 3
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=RTOL, atol=ATOL)


# ---- errors -----------------------------------------------------------------------

def _call_line(kernel_fn, marker):
    lines, start = __import__("inspect").getsourcelines(kernel_fn.fn)
    for k, line in enumerate(lines):
        if marker in line:
            return start + k
    raise AssertionError(marker)


@test_utils.test()
def test_function_without_source_is_a_clear_error():
    x, y = _fields()
    namespace = {"qd": qd}
    exec("def no_source(v):\n    return v + 1.0\n", namespace)  # pylint: disable=exec-used
    no_source = namespace["no_source"]

    @qd.kernel
    def run_no_source():
        for i in range(N):
            y[i] = no_source(x[i])  # <- CALL

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        run_no_source()
    message = str(info.value)
    assert "no_source" in message and "@qd.func" in message
    assert "run_no_source" in message
    assert f"{__file__}:{_call_line(run_no_source, '<- CALL')}" in message


@test_utils.test()
def test_lambda_without_source_is_a_clear_error():
    x, y = _fields()
    evaluated = eval("lambda v: v * 2.0")  # pylint: disable=eval-used

    @qd.kernel
    def run_eval_lambda():
        for i in range(N):
            y[i] = evaluated(x[i])  # <- CALL

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        run_eval_lambda()
    message = str(info.value)
    assert "<lambda>" in message and "@qd.func" in message
    assert f"{__file__}:{_call_line(run_eval_lambda, '<- CALL')}" in message


@test_utils.test()
def test_builtin_with_runtime_values_keeps_its_error():
    x, y = _fields()

    @qd.kernel
    def run_math_sin():
        for i in range(N):
            y[i] = math.sin(x[i])

    with pytest.raises(qd.QuadrantsTypeError, match="cannot call Python function sin"):
        run_math_sin()


@test_utils.test()
def test_unsupported_code_in_callee_names_its_line():
    x, y = _fields()

    def uses_comprehension(v):
        return len({v for _ in range(2)})  # <- BAD

    @qd.kernel
    def run_bad_callee():
        for i in range(N):
            y[i] = uses_comprehension(x[i])

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        run_bad_callee()
    lines, start = __import__("inspect").getsourcelines(uses_comprehension)
    bad = start + next(k for k, line in enumerate(lines) if "<- BAD" in line)
    message = str(info.value)
    assert f"{__file__}:{bad}" in message and "run_bad_callee" in message
    assert "set comprehension" in message


@test_utils.test()
def test_wrong_argument_count_names_function_and_kernel():
    x, y = _fields()

    @qd.kernel
    def run_bad_args():
        for i in range(N):
            y[i] = square_plus_sin(x[i], 2.0)

    with pytest.raises(qd.QuadrantsTypeError) as info:
        run_bad_args()
    message = str(info.value)
    assert "square_plus_sin" in message and "run_bad_args" in message


@test_utils.test()
def test_recursive_python_function_is_an_error():
    x, y = _fields()

    def forever(v):
        return forever(v) + 1.0

    @qd.kernel
    def run_recursive():
        for i in range(N):
            y[i] = forever(x[i])

    with pytest.raises(qd.QuadrantsCompilationError, match="recursion"):
        run_recursive()


_AMBIGUOUS_SCRIPT = textwrap.dedent("""
    import quadrants as qd
    qd.init(arch=qd.cpu)
    y = qd.field(qd.f32, shape=4)
    first, second = lambda v: v * 2.0, lambda v: v * 3.0

    @qd.kernel
    def run(s: qd.f32):
        for i in range(4):
            y[i] = second(s)

    try:
        run(1.0)
    except qd.QuadrantsSyntaxError as e:
        print("ERROR:", e)
    else:
        print("VALUE:", y.to_numpy()[0])
""")


# Front-end only (the subprocess compiles on the CPU): which lambda a line
# means does not depend on the backend.
@test_utils.test(arch=qd.cpu)
def test_lambdas_on_one_line_without_column_info(tmp_path):
    # Without column positions (-X no_debug_ranges) two lambdas with the same
    # parameters on one line cannot be told apart: a clear error, never the
    # wrong lambda. With them, the right one runs.
    script = tmp_path / "ambiguous.py"
    script.write_text(_AMBIGUOUS_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(root, "quadrants", "python"), os.environ.get("PYTHONPATH", "")]))
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300, check=False)
    assert "VALUE: 3.0" in plain.stdout, plain.stdout + plain.stderr
    stripped = subprocess.run([sys.executable, "-X", "no_debug_ranges", str(script)],
                              capture_output=True, text=True, env=env, timeout=300,
                              check=False)
    assert "ERROR:" in stripped.stdout, stripped.stdout + stripped.stderr
    assert "cannot tell which lambda on line 5" in stripped.stdout
    assert "@qd.func" in stripped.stdout


# ---- has_grad / has_dual ----------------------------------------------------------

@test_utils.test()
def test_field_has_grad_and_has_dual():
    plain = qd.field(qd.f32, shape=4)
    with_grad = qd.field(qd.f32, shape=4, needs_grad=True)
    with_dual = qd.field(qd.f32, shape=4, needs_dual=True)
    ints = qd.field(qd.i32, shape=4)
    assert (plain.has_grad(), plain.has_dual()) == (False, False)
    assert (with_grad.has_grad(), with_grad.has_dual()) == (True, False)
    assert (with_dual.has_grad(), with_dual.has_dual()) == (False, True)
    assert (ints.has_grad(), ints.has_dual()) == (False, False)
    assert with_grad.grad.has_grad() is False  # a companion has no adjoint of its own


@test_utils.test()
def test_field_has_grad_after_explicit_place_and_lazy_grad():
    a = qd.field(qd.f32)
    b = qd.field(qd.f32)
    unplaced = qd.field(qd.f32, needs_grad=True)  # its adjoint comes with it
    assert unplaced.has_grad() is True
    qd.root.dense(qd.i, 4).place(a, a.grad)
    qd.root.dense(qd.i, 4).place(b)
    assert a.has_grad() is True
    assert b.has_grad() is False
    qd.root.lazy_grad()
    assert b.has_grad() is True
    assert b.has_dual() is False
    qd.root.lazy_dual()
    assert b.has_dual() is True


@test_utils.test()
def test_ndarray_has_grad_and_has_dual():
    with_grad = qd.ndarray(qd.f32, shape=(3,), needs_grad=True)
    plain = qd.ndarray(qd.f32, shape=(3,))
    assert with_grad.has_grad() is True
    assert plain.has_grad() is False
    assert with_grad.has_dual() is False and plain.has_dual() is False
    assert with_grad.grad.has_grad() is False
