"""@qd.func inlining, qd.template() specialization, qd.static on template
values, and Python scoping of kernel locals. Results are compared with
plain Python / numpy references."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


# ---- @qd.func ------------------------------------------------------------------

@test_utils.test()
def test_func_returns_value():
    out = qd.field(qd.i32, shape=10)

    @qd.func
    def poly(v):
        return 3 * v * v - 2 * v + 1

    @qd.kernel
    def run():
        for i in range(10):
            out[i] = poly(i)

    run()
    np.testing.assert_array_equal(out.to_numpy(), [3 * i * i - 2 * i + 1 for i in range(10)])


@test_utils.test()
def test_func_returns_float_computed_from_float_args():
    out = qd.field(qd.f32, shape=8)

    @qd.func
    def lerp(a, b, t):
        return a + (b - a) * t

    @qd.kernel
    def run(a: qd.f32, b: qd.f32):
        for i in range(8):
            out[i] = lerp(a, b, qd.cast(i, qd.f32) / 7.0)

    run(2.0, 9.0)
    t = np.arange(8, dtype=np.float32) / np.float32(7.0)
    np.testing.assert_allclose(out.to_numpy(), 2.0 + (9.0 - 2.0) * t, rtol=1e-6)


@test_utils.test()
def test_func_returns_tuple():
    q = qd.field(qd.i32, shape=20)
    r = qd.field(qd.i32, shape=20)

    @qd.func
    def divmod_(a, b):
        return a // b, a % b

    @qd.kernel
    def run():
        for i in range(20):
            q[i], r[i] = divmod_(i * 7 + 3, 5)

    run()
    ref = [divmod(i * 7 + 3, 5) for i in range(20)]
    np.testing.assert_array_equal(q.to_numpy(), [a for a, _ in ref])
    np.testing.assert_array_equal(r.to_numpy(), [b for _, b in ref])


@test_utils.test()
def test_func_without_return_value_writes_field():
    out = qd.field(qd.i32, shape=6)

    @qd.func
    def put(i, v):
        out[i] = v * 10

    @qd.kernel
    def run():
        for i in range(6):
            put(i, i + 1)

    run()
    np.testing.assert_array_equal(out.to_numpy(), (np.arange(6) + 1) * 10)


@test_utils.test()
def test_funcs_calling_funcs():
    out = qd.field(qd.i64, shape=12)

    @qd.func
    def square(v):
        return v * v

    @qd.func
    def sum_of_squares(a, b):
        return square(a) + square(b)

    @qd.func
    def pyth(a):
        return sum_of_squares(a, a + 1) - square(a + 1)

    @qd.kernel
    def run():
        for i in range(12):
            out[i] = pyth(i) + sum_of_squares(i, 2)

    run()
    np.testing.assert_array_equal(out.to_numpy(), [i * i + i * i + 4 for i in range(12)])


@test_utils.test()
def test_func_with_loop_and_local_variables():
    out = qd.field(qd.i32, shape=10)

    @qd.func
    def fib(n):
        a = 0
        b = 1
        for _ in range(n):
            t = a + b
            a = b
            b = t
        return a

    @qd.kernel
    def run():
        for i in range(10):
            out[i] = fib(i)

    run()
    np.testing.assert_array_equal(out.to_numpy(), [0, 1, 1, 2, 3, 5, 8, 13, 21, 34])


@test_utils.test()
def test_func_arguments_are_passed_by_value():
    out = qd.field(qd.i32, shape=(5, 2))

    @qd.func
    def bump(v):
        v += 100
        return v

    @qd.kernel
    def run():
        for i in range(5):
            a = i
            b = bump(a)
            out[i, 0] = a     # unchanged by the callee
            out[i, 1] = b

    run()
    np.testing.assert_array_equal(out.to_numpy()[:, 0], np.arange(5))
    np.testing.assert_array_equal(out.to_numpy()[:, 1], np.arange(5) + 100)


@test_utils.test()
def test_func_locals_do_not_clobber_caller_locals():
    out = qd.field(qd.i32, shape=4)

    @qd.func
    def helper(v):
        s = v * 3   # same name as the caller's local
        return s

    @qd.kernel
    def run():
        for i in range(4):
            s = i + 1000
            t = helper(i)
            out[i] = s + t

    run()
    np.testing.assert_array_equal(out.to_numpy(), [i + 1000 + 3 * i for i in range(4)])


@test_utils.test()
def test_func_keyword_and_default_arguments():
    out = qd.field(qd.i32, shape=5)

    @qd.func
    def affine(v, scale=2, offset=0):
        return v * scale + offset

    @qd.kernel
    def run():
        for i in range(5):
            out[i] = affine(i) + affine(i, offset=100) + affine(v=i, scale=-1, offset=1)

    run()
    np.testing.assert_array_equal(out.to_numpy(),
                                  [2 * i + (2 * i + 100) + (1 - i) for i in range(5)])


@test_utils.test()
def test_func_taking_fields():
    a = qd.field(qd.f32, shape=6)
    b = qd.field(qd.f32, shape=6)
    out = qd.field(qd.f32, shape=6)
    a.from_numpy(np.linspace(0, 5, 6, dtype=np.float32))
    b.from_numpy(np.linspace(10, 15, 6, dtype=np.float32))

    @qd.func
    def dot_at(x, y, i):
        return x[i] * y[i]

    @qd.func
    def store(dst, i, v):
        dst[i] = v

    @qd.kernel
    def run():
        for i in range(6):
            store(out, i, dot_at(a, b, i) - dot_at(a, a, i))

    run()
    av, bv = a.to_numpy(), b.to_numpy()
    np.testing.assert_allclose(out.to_numpy(), av * bv - av * av, rtol=1e-6)


@test_utils.test()
def test_func_taking_ndarrays():
    @qd.func
    def row_max(m, i):
        best = m[i, 0]
        for j in range(1, m.shape[1]):
            best = qd.max(best, m[i, j])
        return best

    @qd.kernel
    def run(m: qd.types.ndarray(qd.i32, 2), out: qd.types.ndarray(qd.i32, 1)):
        for i in range(m.shape[0]):
            out[i] = row_max(m, i)

    rng = np.random.default_rng(3)
    m = rng.integers(-1000, 1000, size=(7, 9)).astype(np.int32)
    out = np.zeros(7, dtype=np.int32)
    run(m, out)
    np.testing.assert_array_equal(out, m.max(axis=1))

    nd_m = qd.ndarray(qd.i32, (7, 9))
    nd_m.from_numpy(-m)
    nd_out = qd.ndarray(qd.i32, 7)
    run(nd_m, nd_out)
    np.testing.assert_array_equal(nd_out.to_numpy(), (-m).max(axis=1))


# ---- qd.template() ---------------------------------------------------------------

@test_utils.test()
def test_template_field_parameter_selects_field():
    a = qd.field(qd.i32, shape=5)
    b = qd.field(qd.i32, shape=5)

    @qd.kernel
    def fill(f: qd.template(), v: qd.i32):
        for i in f:
            f[i] = v + i

    fill(a, 10)
    fill(b, 20)
    fill(a, 30)   # reuses the compiled specialization for `a`
    np.testing.assert_array_equal(a.to_numpy(), 30 + np.arange(5))
    np.testing.assert_array_equal(b.to_numpy(), 20 + np.arange(5))


@test_utils.test()
def test_template_fields_of_different_shapes_and_dtypes():
    small = qd.field(qd.i32, shape=3)
    large = qd.field(qd.f64, shape=(2, 4))

    n = qd.field(qd.i32, shape=())

    @qd.kernel
    def size_1d(f: qd.template()):
        for i in f:
            n[None] += 1

    @qd.kernel
    def size_2d(f: qd.template()):
        for i, j in f:
            n[None] += 1

    size_1d(small)
    assert n[None] == 3
    n[None] = 0
    size_2d(large)
    assert n[None] == 8


@test_utils.test()
def test_template_python_value_recompiles_per_value():
    out = qd.field(qd.i32, shape=4)

    @qd.kernel
    def scaled(k: qd.template()):
        for i in range(4):
            out[i] = i * k

    for k in (3, -2, 7, 3):
        scaled(k)
        np.testing.assert_array_equal(out.to_numpy(), np.arange(4) * k)


@test_utils.test()
def test_template_float_and_int_values_differ():
    out = qd.field(qd.f32, shape=())

    @qd.kernel
    def half(v: qd.template()):
        for _ in range(1):
            out[None] = v / 2

    half(5)      # Python true division at compile time: 2.5
    assert out[None] == 2.5
    half(5.0)
    assert out[None] == 2.5
    half(8)
    assert out[None] == 4.0


@test_utils.test()
def test_static_on_template_values_selects_code():
    out = qd.field(qd.i32, shape=5)

    @qd.kernel
    def run(op: qd.template(), times: qd.template()):
        for i in range(5):
            v = i
            for _ in qd.static(range(times)):
                if qd.static(op == "add"):
                    v += 3
                else:
                    v *= 3
            out[i] = v

    run("add", 2)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(5) + 6)
    run("mul", 2)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(5) * 9)
    run("add", 0)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(5))


@test_utils.test()
def test_static_on_template_field_property():
    a = qd.field(qd.i32, shape=4)
    b = qd.field(qd.i32, shape=7)

    @qd.kernel
    def fill_last(f: qd.template()):
        for _ in range(1):
            f[qd.static(f.shape[0] - 1)] = qd.static(f.shape[0]) * 11

    fill_last(a)
    fill_last(b)
    np.testing.assert_array_equal(a.to_numpy(), [0, 0, 0, 44])
    np.testing.assert_array_equal(b.to_numpy(), [0] * 6 + [77])


@test_utils.test()
def test_template_python_callable_parameter():
    out = qd.field(qd.i32, shape=6)

    @qd.func
    def twice(v):
        return 2 * v

    @qd.func
    def cube(v):
        return v * v * v

    @qd.kernel
    def apply(fn: qd.template()):
        for i in range(6):
            out[i] = fn(i)

    apply(twice)
    np.testing.assert_array_equal(out.to_numpy(), 2 * np.arange(6))
    apply(cube)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(6) ** 3)


@test_utils.test()
def test_template_tuple_of_fields():
    a = qd.field(qd.i32, shape=3)
    b = qd.field(qd.i32, shape=3)

    @qd.kernel
    def fill(fields: qd.template()):
        for i in range(3):
            for k, f in qd.static(enumerate(fields)):
                f[i] = (k + 1) * 100 + i

    fill((a, b))
    np.testing.assert_array_equal(a.to_numpy(), 100 + np.arange(3))
    np.testing.assert_array_equal(b.to_numpy(), 200 + np.arange(3))
    fill((b,))
    np.testing.assert_array_equal(b.to_numpy(), 100 + np.arange(3))


@test_utils.test()
def test_func_with_template_like_python_value_argument():
    out = qd.field(qd.i32, shape=4)

    @qd.func
    def power(v, n):
        r = 1
        for _ in qd.static(range(n)):   # n is a Python int: unrolled
            r *= v
        return r

    @qd.kernel
    def run():
        for i in range(4):
            out[i] = power(i + 1, 3) - power(i + 1, 0)

    run()
    np.testing.assert_array_equal(out.to_numpy(), [(i + 1) ** 3 - 1 for i in range(4)])


# ---- Python scoping of locals ------------------------------------------------------

@test_utils.test()
def test_local_assigned_in_both_branches_used_after():
    out = qd.field(qd.i32, shape=10)

    @qd.kernel
    def run(t: qd.i32):
        for i in range(10):
            if i < t:
                v = i * 2
            else:
                v = -i
            out[i] = v + 1

    run(4)
    np.testing.assert_array_equal(out.to_numpy(), [(i * 2 if i < 4 else -i) + 1 for i in range(10)])


@test_utils.test()
def test_local_assigned_in_elif_chain_used_after():
    out = qd.field(qd.i32, shape=9)

    @qd.kernel
    def run():
        for i in range(9):
            if i % 3 == 0:
                w = 1
            elif i % 3 == 1:
                w = 20
            else:
                w = 300
            out[i] = w * (i + 1)

    run()
    np.testing.assert_array_equal(out.to_numpy(), [[1, 20, 300][i % 3] * (i + 1) for i in range(9)])


@test_utils.test()
def test_local_assigned_inside_inner_loop_used_after():
    out = qd.field(qd.i32, shape=6)

    @qd.kernel
    def run():
        for i in range(6):
            last = -1
            for j in range(i + 3):
                last = j * 10 + i
            out[i] = last

    run()
    np.testing.assert_array_equal(out.to_numpy(), [(i + 2) * 10 + i for i in range(6)])


@test_utils.test()
def test_local_first_assigned_inside_inner_loop_used_after():
    out = qd.field(qd.i32, shape=5)

    @qd.kernel
    def run():
        for i in range(5):
            for j in range(4):
                seen = i * 100 + j
            out[i] = seen

    run()
    np.testing.assert_array_equal(out.to_numpy(), [i * 100 + 3 for i in range(5)])


@test_utils.test()
def test_local_first_assigned_inside_while_used_after():
    out = qd.field(qd.i32, shape=5)

    @qd.kernel
    def run():
        for i in range(5):
            k = 0
            while k < i + 2:
                sq = k * k
                k += 1
            out[i] = sq

    run()
    np.testing.assert_array_equal(out.to_numpy(), [(i + 1) ** 2 for i in range(5)])


@test_utils.test()
def test_kernel_level_local_read_inside_parallel_loop():
    out = qd.field(qd.i32, shape=5)

    @qd.kernel
    def run(base: qd.i32):
        offset = base * 2 + 1
        for i in range(5):
            out[i] = i + offset

    run(10)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(5) + 21)


@test_utils.test()
def test_local_keeps_its_first_type():
    out = qd.field(qd.f32, shape=3)

    @qd.kernel
    def run():
        for i in range(3):
            v = 0.5          # a float local: later integer stores convert to float
            v = i
            v += 0.25
            out[i] = v

    run()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(3) + 0.25)


# ---- augmented assignment on locals -------------------------------------------------

@test_utils.test()
def test_augmented_assignment_integer_locals():
    out = qd.field(qd.i32, shape=(8, 10))

    @qd.kernel
    def run():
        for i in range(8):
            base = i + 5
            a = base
            a += 7
            out[i, 0] = a
            a = base
            a -= 9
            out[i, 1] = a
            a = base
            a *= -3
            out[i, 2] = a
            a = base
            a //= 3
            out[i, 3] = a
            a = base
            a %= 4
            out[i, 4] = a
            a = base
            a **= 2
            out[i, 5] = a
            a = base
            a &= 6
            out[i, 6] = a
            a = base
            a |= 9
            out[i, 7] = a
            a = base
            a ^= 5
            out[i, 8] = a
            a = base
            a <<= 2
            a >>= 1
            out[i, 9] = a

    run()
    got = out.to_numpy()
    for i in range(8):
        b = i + 5
        assert got[i].tolist() == [b + 7, b - 9, b * -3, b // 3, b % 4, b ** 2, b & 6, b | 9,
                                   b ^ 5, (b << 2) >> 1], i


@test_utils.test()
def test_augmented_assignment_float_locals():
    out = qd.field(qd.f64, shape=(6, 4))

    @qd.kernel
    def run():
        for i in range(6):
            x = qd.cast(i, qd.f64) + 0.5
            y = x
            y += 1.25
            out[i, 0] = y
            y = x
            y -= 3.0
            out[i, 1] = y
            y = x
            y *= 4.0
            out[i, 2] = y
            y = x
            y /= 8.0
            out[i, 3] = y

    run()
    x = np.arange(6) + 0.5
    np.testing.assert_array_equal(out.to_numpy(), np.stack([x + 1.25, x - 3, x * 4, x / 8], 1))


@test_utils.test()
def test_augmented_assignment_accumulates_in_serial_loop():
    out = qd.field(qd.i64, shape=4)

    @qd.kernel
    def run():
        for i in range(4):
            acc = 1
            for j in range(1, 6):
                acc *= j + i
                acc -= i
            out[i] = acc

    run()
    ref = []
    for i in range(4):
        acc = 1
        for j in range(1, 6):
            acc = acc * (j + i) - i
        ref.append(acc)
    np.testing.assert_array_equal(out.to_numpy(), ref)


@test_utils.test()
def test_kernel_level_values_reach_every_parallel_loop_in_order():
    x = qd.field(qd.f32, shape=4)
    n = qd.field(qd.i32, shape=())

    @qd.kernel
    def two_loops():
        s = 2.0
        m = n[None] + 1  # a field read before the loop that uses it
        for i in x:
            x[i] = s * i + m
        s = 3.0          # reassigned between the loops
        for i in x:
            x[i] += s

    n[None] = 10
    two_loops()
    np.testing.assert_array_equal(x.to_numpy(), 2 * np.arange(4) + 11 + 3)


# ---- qd.func(requires_top_level=True) ------------------------------------------

def _top_level_funcs():
    @qd.func(requires_top_level=True)
    def bump(x: qd.template(), n):
        for i in range(n):  # a top-level parallel loop of the kernel
            x[i] = x[i] + 1

    @qd.func
    def via_helper(x: qd.template(), n):
        bump(x, n)

    return bump, via_helper


@test_utils.test()
def test_a_top_level_func_runs_at_the_top_level_and_in_static_loops():
    bump, via_helper = _top_level_funcs()

    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, ndim=1), n: qd.i32):
        bump(x, n)
        for _ in qd.static(range(2)):
            via_helper(x, n)

    x = qd.ndarray(qd.i32, 8)
    run(x, 8)
    np.testing.assert_array_equal(x.to_numpy(), np.full(8, 3))


@pytest.mark.parametrize("where", ["for", "if", "while", "helper in if"])
@test_utils.test(arch=qd.cpu)
def test_a_top_level_func_nested_in_run_time_control_flow_is_refused(where):
    bump, via_helper = _top_level_funcs()

    @qd.kernel
    def run(x: qd.types.ndarray(qd.i32, ndim=1), n: qd.i32):
        if qd.static(where == "for"):
            for _ in range(1):
                bump(x, n)
        if qd.static(where == "if"):
            if n > 0:
                bump(x, n)
        if qd.static(where == "while"):
            k = n
            while k > 0:
                bump(x, n)
                k = 0
        if qd.static(where == "helper in if"):
            if n > 0:
                via_helper(x, n)

    with pytest.raises(qd.QuadrantsSyntaxError, match="'bump' is marked requires_top_level"):
        run(qd.ndarray(qd.i32, 8), 8)


def test_func_and_kernel_decorator_options_are_checked():
    with pytest.raises(qd.QuadrantsTypeError, match="requires_top_level"):
        qd.func(requires_top_level=1)
    with pytest.raises(qd.QuadrantsTypeError, match="fastcache"):
        qd.kernel(fastcache=1)
    with pytest.raises(qd.QuadrantsTypeError, match="graph"):
        qd.kernel(graph="yes")

    @qd.kernel(fastcache=False)
    def plain() -> qd.i32:
        return 7

    qd.init(arch=qd.cpu)
    assert plain() == 7


# ---- calls that do not match the parameters --------------------------------------

@test_utils.test(arch=qd.cpu)
def test_kernel_and_func_calls_that_do_not_match_name_the_argument():
    @qd.kernel
    def two(a: qd.i32, b: qd.i32) -> qd.i32:
        return a + b

    @qd.func
    def pair(a, b):
        return a - b

    for call, words in ((lambda: two(1), "Missing argument 'b'"),
                        (lambda: two(b=1), "Missing argument 'a'"),
                        (lambda: two(1, 2, c=3), "Unexpected argument 'c'"),
                        (lambda: two(1, 2, 3), "Too many arguments")):
        with pytest.raises(qd.QuadrantsSyntaxError, match=words) as info:
            call()
        assert isinstance(info.value, qd.QuadrantsTypeError) and "kernel 'two'" in str(info.value)

    @qd.kernel
    def duplicate() -> qd.i32:
        return pair(1, a=2)

    with pytest.raises(qd.QuadrantsSyntaxError, match="Multiple values for argument 'a'") as info:
        duplicate()
    assert "qd.func 'pair'" in str(info.value) and "test_funcs_templates.py:" in str(info.value)


@test_utils.test()
def test_a_scalar_func_parameter_takes_its_annotated_type():
    @qd.func
    def truncate(a: qd.i32) -> qd.f32:
        return a

    @qd.kernel
    def run(a: qd.f32) -> qd.f32:
        return truncate(a)

    assert run(1.5) == 1.0 and run(-2.75) == -2.0


@test_utils.test(arch=qd.cpu)
def test_func_parameters_read_in_targets_stay_as_passed():
    """A template read inside an assignment target (a[n] = ...) stays a
    compile-time value; a by-value vector whose component is assigned is
    the func's own copy."""
    a = qd.ndarray(qd.f32, shape=(8,))

    @qd.func
    def put(arr: qd.template(), n: qd.template()):
        arr[n] = 1.0
        qd.static_assert(n == 3)   # still a Python int

    @qd.func
    def bump(v):
        v[0] = 5.0
        return v[0] + v[1]

    @qd.kernel
    def run(arr: qd.types.ndarray(qd.f32, ndim=1)) -> qd.f32:
        put(arr, 3)
        w = qd.Vector([1.0, 2.0])
        total = bump(w)
        return total + w[0]   # the caller's vector is unchanged

    assert run(a) == 8.0
    assert a.to_numpy()[3] == 1.0


@test_utils.test(arch=qd.cpu)
def test_a_vector_argument_must_have_the_annotated_size():
    vec3 = qd.types.vector(3, qd.f32)

    @qd.func
    def first(a: vec3) -> qd.f32:
        return a[0] + a.sum()

    @qd.kernel
    def wrong() -> qd.f32:
        return first(qd.Vector([3.0, 4.0]))

    @qd.kernel
    def right() -> qd.f32:
        return first(qd.Vector([1.0, 2.0, 3.0]))

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match=r"argument 'a' is expected to be a Matrix with n 3, but got 2"):
        wrong()
    assert right() == 7.0


@test_utils.test()
def test_a_template_parameter_names_the_callers_variable():
    @qd.func
    def swap(a: qd.template(), b: qd.template()):
        a, b = b, a

    @qd.func
    def bump(v: qd.template()):
        v += qd.Vector([1, 1])

    @qd.func
    def bump_copy(v):
        v += qd.Vector([1, 1])

    @qd.kernel
    def run() -> qd.i32:
        x, y = 1, 2
        swap(x, y)
        p = qd.Vector([10, 20])
        bump(p)
        q = qd.Vector([10, 20])
        bump_copy(q)  # an unannotated parameter is a copy
        return x * 1000 + y * 100 + p[0] + p[1] - q[0] - q[1]

    assert run() == 2000 + 100 + 32 - 30


@test_utils.test()
def test_a_func_refuses_an_ndarray_its_annotation_does_not_describe():
    @qd.func
    def first_pair(a: qd.types.ndarray(dtype=qd.math.vec2, ndim=1)) -> qd.f32:
        return a[0][0] + a[0][1]

    @qd.kernel
    def run(x: qd.types.ndarray(ndim=1)) -> qd.f32:
        return first_pair(x)

    good = qd.ndarray(qd.math.vec2, (2,))
    good[0] = [1.5, 2.0]
    assert run(good) == 3.5
    for bad in (qd.ndarray(qd.math.vec3, (2,)), qd.ndarray(qd.f32, (2,))):
        with pytest.raises(qd.QuadrantsCompilationError,
                           match="Invalid value for argument a: qd.func 'first_pair'"):
            run(bad)
