"""qd.real_func: functions compiled once per kernel and signature and called
at run time (so they may recurse), with scalar, vector, matrix, struct and
tuple results, returns anywhere in the body, qd.ref parameters the callee
writes through, templates, kernel ndarrays and data_oriented methods; and
the errors: missing annotations, unsupported backends (SPIR-V) and
gradients."""
from typing import Tuple

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

LLVM = [qd.cpu, qd.cuda, qd.amdgpu]


def _functions_in(kernel, *args):
    return kernel.ir(*args).count("\nfunction fn")


@test_utils.test(arch=LLVM)
def test_side_effects_of_each_call_happen_once():
    total = qd.field(qd.i32, shape=())

    @qd.real_func
    def add(v: qd.i32):
        total[None] += v

    @qd.kernel
    def run():
        add(40)
        add(2)

    total[None] = 0
    run()
    assert total[None] == 42
    run()
    assert total[None] == 84


@test_utils.test(arch=LLVM, debug=True)
def test_returned_value_and_side_effect():
    total = qd.field(qd.i32, shape=())

    @qd.real_func
    def add_and_echo(v: qd.i32) -> qd.i32:
        total[None] += v
        return v * 3

    @qd.kernel
    def run() -> qd.i32:
        a = add_and_echo(5)
        b = add_and_echo(2)
        assert a == 15
        return a + b

    total[None] = 0
    assert run() == 21
    assert total[None] == 7


@test_utils.test(arch=LLVM)
def test_one_function_per_signature():
    @qd.real_func
    def twice(v: qd.i32) -> qd.i32:
        return v * 2

    @qd.real_func
    def halve(v: qd.f32) -> qd.f32:
        return v / 2

    @qd.kernel
    def run(n: qd.i32) -> qd.f32:
        return twice(n) + twice(n + 1) + twice(3) + halve(n) + halve(1.0)

    assert run(4) == pytest.approx(8 + 10 + 6 + 2 + 0.5)
    assert _functions_in(run, 4) == 2


@test_utils.test(arch=LLVM)
def test_templates_give_one_instance_each():
    a = qd.field(qd.i32, shape=())
    b = qd.field(qd.i32, shape=())
    seen = qd.field(qd.i32, shape=4)

    @qd.real_func
    def bump(f: qd.template(), by: qd.i32):
        f[None] += by

    @qd.kernel
    def run(go: qd.u1):
        a[None] = 10
        b[None] = 20
        if go:
            bump(a, 1)
        seen[0] = a[None]
        seen[1] = b[None]
        if go:
            bump(b, 5)
            bump(b, 1)
        seen[2] = a[None]
        seen[3] = b[None]

    run(True)
    assert seen.to_numpy().tolist() == [11, 20, 11, 26]
    run(False)
    assert seen.to_numpy().tolist() == [10, 20, 10, 20]
    assert _functions_in(run, True) == 2


@test_utils.test(arch=LLVM)
def test_arguments_convert_to_the_annotation():
    @qd.real_func
    def add(x: qd.f32, y: qd.f32) -> qd.f32:
        return x + y

    @qd.kernel
    def run() -> qd.i32:
        return add(1, 2.5)

    assert run() == 3


@test_utils.test(arch=LLVM)
def test_recursion_over_halves():
    data = qd.field(qd.i32, shape=100)

    @qd.real_func
    def total(f: qd.template(), lo: qd.i32, hi: qd.i32) -> qd.i32:
        if lo == hi:
            return f[lo]
        mid = (lo + hi) // 2
        return total(f, lo, mid) + total(f, mid + 1, hi)

    @qd.kernel
    def run() -> qd.i32:
        return total(data, 0, 99)

    data.from_numpy(np.arange(100, dtype=np.int32) * 3)
    assert run() == 3 * 99 * 50


def _deep_recursion(depth):
    @qd.real_func
    def tri(n: qd.i32) -> qd.i32:
        if n == 0:
            return 0
        return tri(n - 1) + n

    @qd.kernel
    def run(n: qd.i32) -> qd.i32:
        return tri(n)

    assert run(100) == 5050
    assert run(depth) == depth * (depth + 1) // 2


@test_utils.test(arch=[qd.cpu])
def test_deep_recursion():
    _deep_recursion(3000)


@test_utils.test(arch=[qd.cuda], cuda_stack_limit=32768)
def test_deep_recursion_on_cuda_with_a_larger_stack():
    # 32 KiB of stack per thread: the driver's default (1 KiB) faults at
    # this depth with an illegal address, which poisons the context.
    _deep_recursion(400)


@test_utils.test(arch=LLVM)
def test_mutual_recursion():
    @qd.real_func
    def is_even(n: qd.i32) -> qd.i32:
        if n == 0:
            return 1
        return is_odd(n - 1)

    @qd.real_func
    def is_odd(n: qd.i32) -> qd.i32:
        if n == 0:
            return 0
        return is_even(n - 1)

    @qd.kernel
    def run(n: qd.i32) -> qd.i32:
        return is_even(n) * 10 + is_odd(n)

    assert run(7) == 1
    assert run(10) == 10


@test_utils.test(arch=LLVM)
def test_returns_in_nested_branches():
    x = qd.field(qd.i32, shape=())

    @qd.real_func
    def step(v: qd.i32) -> qd.i32:
        if x[None] > 10:
            if x[None] > 20:
                return 1
            x[None] += 1
        x[None] += v
        return 0

    @qd.kernel
    def run() -> qd.i32:
        return step(15) * 100 + step(10) * 10 + step(100)

    x[None] = 0
    assert run() == 1
    assert x[None] == 26


@test_utils.test(arch=LLVM)
def test_return_inside_loops():
    @qd.real_func
    def in_for() -> qd.i32:
        for _ in range(10):
            return 42
        return 0

    @qd.real_func
    def in_while() -> qd.i32:
        i = 1
        while i:
            return 43
        return 0

    @qd.real_func
    def prefix_sum(a: qd.i32) -> qd.i32:
        s = 0
        for i in range(100):
            if i == a + 1:
                return s
            s = s + i
        return s

    @qd.kernel
    def run(a: qd.i32) -> qd.i32:
        return in_for() + in_while() + prefix_sum(a)

    assert run(10) == 42 + 43 + 55
    assert run(200) == 42 + 43 + 99 * 50


@test_utils.test(arch=LLVM)
def test_break_and_continue():
    @qd.real_func
    def until_five() -> qd.i32:
        a = 0
        for i in range(10):
            if i == 5:
                break
            a += 1
        return a

    @qd.real_func
    def odd_count() -> qd.i32:
        a = 0
        for i in range(10):
            if i % 2 == 0:
                continue
            a += 1
        return a

    @qd.kernel
    def run() -> qd.i32:
        return until_five() * 10 + odd_count()

    assert run() == 55


@test_utils.test(arch=LLVM, debug=True)
def test_ref_parameters_write_the_callers_variable():
    @qd.real_func
    def set_seven(a: qd.ref(qd.f32)):
        a = 7

    @qd.real_func
    def double(a: qd.ref(qd.f32)):
        a += a

    @qd.real_func
    def set_then_double(a: qd.ref(qd.f32)):
        set_seven(a)
        double(a)

    @qd.kernel
    def run() -> qd.f32:
        a = 5.0
        set_seven(a)
        assert a == 7
        b = 5.0
        double(b)
        assert b == 10.0
        c = 1.0
        set_then_double(c)
        return a + b + c

    assert run() == pytest.approx(7 + 10 + 14)


@test_utils.test(arch=LLVM)
def test_ref_in_parallel_loop():
    out = qd.field(qd.i32, shape=64)

    @qd.real_func
    def square_in_place(v: qd.ref(qd.i32)):
        v = v * v

    @qd.kernel
    def run():
        for i in range(64):
            v = i
            square_in_place(v)
            out[i] = v

    run()
    assert out.to_numpy().tolist() == [i * i for i in range(64)]


@test_utils.test(arch=LLVM)
def test_ref_needs_a_local_variable():
    x = qd.field(qd.f32, shape=())

    @qd.real_func
    def set_seven(a: qd.ref(qd.f32)):
        a = 7

    @qd.kernel
    def on_field():
        set_seven(x[None])

    @qd.kernel
    def wrong_dtype():
        a = 1
        set_seven(a)

    with pytest.raises(qd.QuadrantsTypeError, match=r"'a' is qd.ref\(f32\) and needs a local"):
        on_field()
    with pytest.raises(qd.QuadrantsTypeError, match=r"variable passed is i32"):
        wrong_dtype()


@test_utils.test(arch=LLVM)
def test_kernel_ndarray_argument():
    @qd.real_func
    def corner(w: qd.types.NDArray[qd.f32, 3]) -> qd.f32:
        return w[1, 1, 1]

    @qd.kernel
    def run(w: qd.types.NDArray[qd.f32, 3]) -> qd.f32:
        return corner(w)

    w = qd.ndarray(dtype=qd.f32, shape=(2, 2, 2))
    w.fill(42.0)
    assert run(w) == 42.0


@test_utils.test(arch=LLVM)
def test_captured_ndarray_argument():
    # A Python-scope ndarray the kernel captures becomes a hidden kernel
    # parameter, so the function reads it like a kernel argument.
    w = qd.ndarray(dtype=qd.f32, shape=(2, 2, 2))

    @qd.real_func
    def corner(weight: qd.types.NDArray[qd.f32, 3]) -> qd.f32:
        return weight[1, 1, 1]

    @qd.kernel
    def run() -> qd.f32:
        return corner(w)

    w.fill(42.0)
    assert run() == 42.0
    w.fill(3.0)
    assert run() == 3.0


@test_utils.test(arch=LLVM)
def test_ndarray_captured_inside_the_function_body():
    # The capture adds a hidden kernel parameter while the function body is
    # compiled, after the function was declared.
    table = qd.ndarray(dtype=qd.i32, shape=(4,))

    @qd.real_func
    def lookup(i: qd.i32) -> qd.i32:
        return table[i] * 10

    @qd.kernel
    def run(i: qd.i32) -> qd.i32:
        return lookup(i) + lookup(i + 1)

    table.from_numpy(np.array([1, 2, 3, 4], dtype=np.int32))
    assert run(1) == 50


@test_utils.test(arch=LLVM)
def test_non_ndarray_for_an_ndarray_parameter():
    @qd.real_func
    def corner(weight: qd.types.NDArray[qd.f32, 3]) -> qd.f32:
        return weight[1, 1, 1]

    @qd.kernel
    def run() -> qd.f32:
        return corner(1.0)

    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"Expected ndarray in the kernel argument for argument weight"):
        run()


@test_utils.test(arch=LLVM)
def test_vector_ndarray_read_and_write():
    vec3 = qd.math.vec3

    @qd.real_func
    def first(x: qd.types.NDArray[vec3, 1]) -> vec3:
        return x[0]

    @qd.real_func
    def put_ones(a: qd.types.NDArray[vec3, 1]):
        a[0] = vec3(1)

    @qd.kernel
    def read(x: qd.types.NDArray[vec3, 1]) -> vec3:
        return first(x)

    @qd.kernel
    def write_between(a: qd.types.NDArray[vec3, 1]):
        a[0] = vec3(3)
        put_ones(a)
        a[1] = a[0] * 2

    x = qd.Vector.ndarray(3, qd.f32, shape=(2,))
    x[0] = vec3(1, 2, 3)
    assert np.allclose(read(x).to_numpy(), [1, 2, 3])
    write_between(x)
    assert np.allclose(x.to_numpy(), [[1, 1, 1], [2, 2, 2]])


@test_utils.test(arch=LLVM)
def test_matrix_arguments_and_results():
    @qd.real_func
    def entry_sum(a: qd.math.mat2, b: qd.math.vec2) -> float:
        return a[0, 0] + a[0, 1] + a[1, 0] + a[1, 1] + b[0] + b[1]

    @qd.real_func
    def make() -> qd.math.mat2:
        return qd.math.mat2(1, 2, 3, 4)

    b = qd.Vector.field(n=2, dtype=float, shape=())
    b[()] = [5, 6]

    @qd.kernel
    def run() -> float:
        return entry_sum(qd.math.mat2(1, 2, 3, 4), b[()])

    @qd.kernel
    def made() -> qd.math.mat2:
        return make()

    assert run() == pytest.approx(21)
    assert np.allclose(made().to_numpy(), [[1, 2], [3, 4]])


@test_utils.test(arch=LLVM, require=qd.extension.data64)
def test_struct_results():
    s = qd.types.struct(a=qd.i16, b=qd.f64)
    s0 = qd.types.struct(a=qd.math.vec3, b=qd.i16)
    s1 = qd.types.struct(a=qd.f32, b=s0)

    @qd.real_func
    def flat() -> s:
        return s(a=123, b=qd.f64(1.2345e300))

    @qd.real_func
    def nested() -> s1:
        return s1(a=1, b=s0(a=qd.Vector([100, 0.2, 3], dt=qd.f32), b=65537))

    @qd.kernel
    def run_flat() -> qd.f64:
        v = flat()
        return v.a * v.b

    @qd.kernel
    def run_nested() -> qd.f32:
        v = nested()
        return v.a + v.b.a[0] + v.b.a[1] + v.b.a[2] + v.b.b

    assert run_flat() == pytest.approx(123 * 1.2345e300)
    assert run_nested() == pytest.approx(105.2)  # 65537 wraps to 1 as an i16


@test_utils.test(arch=LLVM)
def test_struct_argument_with_a_matrix():
    mat = qd.types.matrix(3, 2, qd.f32)
    s0 = qd.types.struct(a=mat, b=qd.f32)
    s1 = qd.types.struct(a=qd.i32, b=s0)

    @qd.real_func
    def weigh(a: s1) -> qd.i32:
        ret = a.a + a.b.b
        for i in range(3):
            for j in range(2):
                ret += a.b.a[i, j] * (i + 1) * (j + 2)
        return ret

    @qd.kernel
    def run(a: s1) -> qd.i32:
        return weigh(a)

    expected = 1 + 123 + sum((i + 1) * (j + 2) * (i * 2 + j + 1)
                             for i in range(3) for j in range(2))
    assert run(s1(a=1, b=s0(a=mat(1, 2, 3, 4, 5, 6), b=123))) == expected


def _check_pair(ret):
    first, second = ret
    assert first == pytest.approx(1)
    assert np.allclose(second.a.to_numpy(), [100, 0.2, 3])
    assert second.b == 1


@test_utils.test(arch=LLVM)
def test_tuple_results_in_each_spelling():
    s0 = qd.types.struct(a=qd.math.vec3, b=qd.i16)

    @qd.real_func
    def builtin_tuple() -> tuple[qd.f32, s0]:
        return 1, s0(a=qd.math.vec3([100, 0.2, 3]), b=65537)

    @qd.real_func
    def typing_tuple() -> Tuple[qd.f32, s0]:
        return 1, s0(a=qd.math.vec3([100, 0.2, 3]), b=65537)

    @qd.real_func
    def literal_tuple() -> (qd.f32, s0):
        return 1, s0(a=qd.math.vec3([100, 0.2, 3]), b=65537)

    @qd.kernel
    def a() -> tuple[qd.f32, s0]:
        return builtin_tuple()

    @qd.kernel
    def b() -> Tuple[qd.f32, s0]:
        return typing_tuple()

    @qd.kernel
    def c() -> (qd.f32, s0):
        return literal_tuple()

    for k in (a, b, c):
        _check_pair(k())


@test_utils.test(arch=LLVM)
def test_data_oriented_methods():
    @qd.data_oriented
    class Grid:
        def __init__(self, n, m):
            self.n, self.m = n, m
            self.val = qd.field(qd.f32, shape=(n, m))

        @qd.real_func
        def bump(self, i: qd.i32, j: qd.i32):
            self.val[i, j] += i * j

        @qd.real_func
        def product(self, i: qd.i32, j: qd.i32) -> qd.i32:
            return i * j

        @qd.kernel
        def fill(self):
            for i, j in self.val:
                self.bump(i, j)
                self.val[i, j] += self.product(i, j)

    grid = Grid(32, 16)
    grid.fill()
    i, j = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    assert np.array_equal(grid.val.to_numpy(), (2 * i * j).astype(np.float32))


@test_utils.test(arch=LLVM)
def test_serial_result_read_by_a_later_parallel_loop():
    out = qd.field(qd.i32, shape=8)

    @qd.real_func
    def double(v: qd.i32) -> qd.i32:
        return v * 2

    @qd.kernel
    def run(n: qd.i32):
        base = double(n)
        for i in range(8):
            out[i] = double(i) + base

    run(4)
    assert out.to_numpy().tolist() == [2 * i + 8 for i in range(8)]


@test_utils.test(arch=LLVM)
def test_nesting_with_inlined_funcs():
    out = qd.field(qd.i32, shape=4)

    @qd.func
    def plus_one(v):
        return v + 1

    @qd.real_func
    def twice_next(v: qd.i32) -> qd.i32:
        return plus_one(v) * 2

    @qd.func
    def offset(v):
        return twice_next(v) + 100

    @qd.kernel
    def run():
        for i in range(4):
            out[i] = offset(i)

    run()
    assert out.to_numpy().tolist() == [102, 104, 106, 108]


@test_utils.test(arch=LLVM)
def test_bool_results_and_references():
    @qd.real_func
    def big(v: qd.i32) -> qd.u1:
        return v > 3

    @qd.real_func
    def set_big(flag: qd.ref(qd.u1), v: qd.i32):
        flag = v > 5

    @qd.kernel
    def run() -> qd.i32:
        count = 0
        for i in range(8):
            if big(i):
                count += 1
        yes = False
        set_big(yes, 7)  # declared after the parallel loop, used by a call
        no = True
        set_big(no, 1)
        return count * 100 + qd.cast(yes, qd.i32) * 10 + qd.cast(no, qd.i32)

    assert run() == 410


@test_utils.test(arch=LLVM)
def test_reassigned_parameters_and_defaults():
    @qd.real_func
    def scaled(v: qd.i32, by: qd.i32 = 10) -> qd.i32:
        v = v * by
        return v

    @qd.kernel
    def run(n: qd.i32) -> qd.i32:
        return scaled(n) + scaled(n, by=2) + n

    assert run(3) == 30 + 6 + 3


@test_utils.test(arch=LLVM)
def test_print_inside(capfd):
    @qd.real_func
    def show(v: qd.i32):
        print("value", v)

    @qd.kernel
    def run():
        show(5)

    run()
    qd.sync()
    assert "value 5" in capfd.readouterr().out


@pytest.mark.parametrize("qd_arch", [qd.cpu], ids=["cpu"])
def test_random_draws_from_the_calling_iterations_stream(qd_arch):
    # The same draws as qd.random() written in the loop itself.
    def run(use_real_func):
        qd.init(arch=qd_arch, random_seed=7)
        try:
            out = qd.field(qd.f32, shape=4096)

            @qd.real_func
            def draw() -> qd.f32:
                return qd.random(qd.f32)

            @qd.kernel
            def fill_real():
                for i in out:
                    out[i] = draw()

            @qd.kernel
            def fill_inline():
                for i in out:
                    out[i] = qd.random(qd.f32)

            (fill_real if use_real_func else fill_inline)()
            return out.to_numpy()
        finally:
            qd.reset()

    through_call, inline = run(True), run(False)
    assert np.array_equal(through_call, inline)
    assert 0.0 <= through_call.min() and through_call.max() < 1.0
    assert abs(through_call.mean() - 0.5) < 0.03
    assert len(np.unique(through_call)) > 4000


@test_utils.test(arch=LLVM)
def test_missing_parameter_annotation():
    with pytest.raises(qd.QuadrantsSyntaxError, match="must be type annotated"):

        @qd.real_func
        def add(a, b: qd.i32) -> qd.i32:
            return a + b


@test_utils.test(arch=LLVM)
def test_missing_return_annotation():
    @qd.real_func
    def add(a: qd.i32, b: qd.i32):
        return a + b

    @qd.kernel
    def run():
        add(30, 2)

    with pytest.raises(qd.QuadrantsCompilationError, match="return value must be annotated"):
        run()


@test_utils.test(arch=LLVM)
def test_annotated_result_without_return():
    @qd.real_func
    def nothing(a: qd.i32) -> qd.i32:
        a + 1  # pylint: disable=pointless-statement

    @qd.kernel
    def run() -> qd.i32:
        return nothing(1)

    with pytest.raises(qd.QuadrantsSyntaxError, match="does not have a return statement"):
        run()


@test_utils.test(arch=LLVM)
def test_called_outside_kernel_code():
    @qd.real_func
    def one() -> qd.i32:
        return 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="can only be called from kernel code"):
        one()


@test_utils.test(arch=LLVM)
def test_gradient_of_a_kernel_calling_one_is_an_error():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.real_func
    def square(v: qd.f32) -> qd.f32:
        return v * v

    @qd.kernel
    def run():
        for i in x:
            loss[None] += square(x[i])

    run()
    with pytest.raises(qd.QuadrantsCompilationError,
                       match=r"kernel 'run' calls qd.real_func 'square'.*cannot be "
                             r"differentiated"):
        run.grad()


@test_utils.test(arch=[qd.vulkan, qd.metal])
def test_spirv_backends_reject_real_functions():
    @qd.real_func
    def one() -> qd.i32:
        return 1

    @qd.kernel
    def run() -> qd.i32:
        return one()

    with pytest.raises(qd.QuadrantsCompilationError,
                       match=r"(?s)test_real_func.py:\d+: kernel 'run' calls qd.real_func 'one'.*"
                             r"vulkan, metal"):
        run()


@pytest.mark.parametrize("qd_arch", [qd.cpu], ids=["cpu"])
def test_offline_cache_keys_on_function_bodies(tmp_path, qd_arch):
    def build(step):
        @qd.real_func
        def tri(n: qd.i32) -> qd.i32:
            if n == 0:
                return 0
            return tri(n - 1) + n * step

        @qd.kernel
        def run(n: qd.i32) -> qd.i32:
            return tri(n)
        return run

    results = []
    for step in (1, 1, 2):
        qd.init(arch=qd_arch, offline_cache=True, offline_cache_file_path=str(tmp_path))
        try:
            results.append((build(step)(10),
                            qd.lang.runtime.program().offline_cache_stats()["hits"]))
        finally:
            qd.reset()
    # The second run reads the first one's entry; a different body (step 2
    # is a different constant in the function) is a new entry.
    assert results == [(55, 0), (55, 1), (110, 0)]
