"""Kernels and funcs that return values, as upstream user code writes them:
scalars (cast to the annotation), vectors, matrices, structs and tuples,
returns that qd.static if/for decide at compile time, and the errors for
returns that cannot work (no annotation, a run-time branch, a shape that
does not match the annotation, an annotated function that never returns)."""
from typing import Tuple

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_scalar_return_is_cast_to_the_annotation():
    @qd.kernel
    def as_float() -> qd.f32:
        return 7

    @qd.kernel
    def as_int() -> qd.i32:
        return 9.75

    assert as_float() == 7.0 and isinstance(as_float(), float)
    assert as_int() == 9 and isinstance(as_int(), int)


@pytest.mark.parametrize("dt_a,dt_b,dt_out", [(qd.i32, qd.f32, qd.f32), (qd.f32, qd.i32, qd.i32),
                                              (qd.i32, qd.i32, qd.i32)])
@test_utils.test()
def test_return_of_arguments(dt_a, dt_b, dt_out):
    @qd.kernel
    def product(a: dt_a, b: dt_b) -> dt_out:
        return a * b

    for a, b in [(1, 2), (3, 5), (0, 4)]:
        a = float(a) + 0.5 if dt_a == qd.f32 else a
        b = float(b) + 0.25 if dt_b == qd.f32 else b
        expected = float(np.float32(a) * np.float32(b))
        expected = int(expected) if dt_out == qd.i32 else expected
        assert product(a, b) == test_utils.approx(expected)


@test_utils.test()
def test_return_reads_fields_written_earlier_in_the_kernel():
    x = qd.field(qd.f32, shape=16)

    @qd.kernel
    def fill_and_total() -> qd.f32:
        for i in x:
            x[i] = i * 0.5
        total = 0.0
        for i in qd.static(range(16)):  # top-level serial code after the loop
            total += x[i]
        return total

    assert fill_and_total() == test_utils.approx(sum(i * 0.5 for i in range(16)))


@test_utils.test()
def test_vector_and_matrix_returns():
    @qd.kernel
    def vec(s: qd.f32) -> qd.types.vector(3, qd.f32):
        return qd.Vector([s, 2 * s, 3 * s])

    @qd.kernel
    def mat() -> qd.types.matrix(2, 2, qd.i32):
        return qd.Matrix([[1, 2], [3, 4]])

    v = vec(1.5)
    assert [v[0], v[1], v[2]] == [1.5, 3.0, 4.5]
    m = mat()
    assert m[1, 0] == 3 and m[0, 1] == 2


@test_utils.test()
def test_struct_return_with_nested_members():
    inner = qd.types.struct(a=qd.types.vector(3, qd.f32), b=qd.i16)
    outer = qd.types.struct(a=qd.f32, b=inner)

    @qd.kernel
    def make() -> outer:
        return outer(a=1, b=inner(a=qd.Vector([100, 0.25, 3]), b=65537))

    r = make()
    assert r.a == 1.0
    assert [r.b.a[0], r.b.a[1], r.b.a[2]] == [100.0, 0.25, 3.0]
    assert r.b.b == 1  # 65537 wraps in i16


@test_utils.test()
def test_tuple_returns_in_every_spelling():
    point = qd.types.struct(p=qd.types.vector(2, qd.f32), w=qd.i32)

    @qd.func
    def parts(k: qd.i32) -> Tuple[qd.f32, point]:
        return k * 0.5, point(p=qd.Vector([k, -k]), w=k)

    @qd.kernel
    def typing_tuple(k: qd.i32) -> Tuple[qd.f32, point]:
        return parts(k)

    @qd.kernel
    def builtin_tuple(k: qd.i32) -> tuple[qd.f32, qd.i32]:
        return k * 2.0, k + 1

    @qd.kernel
    def literal_tuple() -> (qd.i32, qd.f32):
        return 4, 0.5

    a, b = typing_tuple(6)
    assert a == 3.0 and b.w == 6 and [b.p[0], b.p[1]] == [6.0, -6.0]
    assert builtin_tuple(5) == (10.0, 6)
    assert literal_tuple() == (4, 0.5)


@test_utils.test()
def test_return_decided_by_static_if_and_static_for():
    @qd.kernel
    def pick(a: qd.template()) -> qd.i32:
        if qd.static(a == 1):
            return 10
        elif qd.static(a == 2):
            return 20
        return 30

    @qd.kernel
    def squares_until_eight() -> qd.i32:
        s = 0
        for i in qd.static(range(10)):
            s += i * i
            if qd.static(i == 8):
                return s

    assert (pick(1), pick(2), pick(7)) == (10, 20, 30)
    assert squares_until_eight() == sum(i * i for i in range(9))


@test_utils.test()
def test_func_return_cast_and_early_static_return():
    @qd.func
    def truncate(a: qd.f32) -> qd.i32:
        return a

    @qd.func
    def sign_of(a: qd.template()):
        if qd.static(a < 0):
            return -1
        return 1

    @qd.kernel
    def run(a: qd.f32) -> qd.f32:
        return truncate(a) + sign_of(-3) * 100

    assert run(2.75) == -98.0


@test_utils.test()
def test_func_returning_a_struct_field_element():
    rec = qd.types.struct(a=qd.i32, b=qd.f32)
    f = rec.field(shape=2)

    @qd.func
    def second() -> rec:
        return f[1]

    @qd.kernel
    def setup():
        f[1].a = 41
        f[1].b = 0.5

    @qd.kernel
    def get() -> rec:
        return second()

    setup()
    r = get()
    assert r.a == 41 and r.b == 0.5


@test_utils.test()
def test_void_returns():
    hits = qd.field(qd.i32, shape=())

    @qd.kernel
    def bare():
        hits[None] += 1
        return

    @qd.kernel
    def explicit_none():
        hits[None] += 1
        return None

    assert bare() is None and explicit_none() is None
    assert hits[None] == 2


@test_utils.test()
def test_large_vector_return():
    vec256 = qd.types.vector(256, qd.i32)

    @qd.kernel
    def iota() -> vec256:
        v = vec256(0)
        for i in qd.static(range(256)):
            v[i] = i * 3
        return v

    r = iota()
    assert all(r[i] == i * 3 for i in range(256))


@test_utils.test(require=qd.extension.data64, exclude=[qd.vulkan])
def test_u64_and_f64_returns_keep_every_bit():
    @qd.kernel
    def big() -> qd.u64:
        return qd.u64(2 ** 64 - 1)

    @qd.kernel
    def precise() -> qd.f64:
        return qd.f64(1.0) / qd.f64(3.0)

    assert big() == 2 ** 64 - 1
    assert precise() == 1.0 / 3.0


@test_utils.test()
def test_gradient_of_a_kernel_that_also_returns():
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def square_sum() -> qd.f32:
        for i in x:
            loss[None] += x[i] * x[i]
        return 1.5

    x.from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))
    with qd.ad.Tape(loss=loss):
        assert square_sum() == 1.5
    np.testing.assert_allclose(x.grad.to_numpy(), [2, 4, 6, 8])


# ---- errors ----------------------------------------------------------------------

@test_utils.test()
def test_return_without_annotation_is_an_error():
    @qd.kernel
    def k():
        return 1

    with pytest.raises(qd.QuadrantsCompilationError, match="no return type annotation"):
        k()


@test_utils.test()
def test_return_in_run_time_branch_or_loop_is_an_error():
    @qd.func
    def safe_sqrt(a):
        if a > 0:
            return qd.sqrt(a)
        else:
            return 0.0

    @qd.kernel
    def in_if(a: qd.f32) -> qd.f32:
        return safe_sqrt(a)

    @qd.kernel
    def in_for() -> qd.i32:
        for i in range(10):
            return i

    for k, args in ((in_if, (2.0,)), (in_for, ())):
        with pytest.raises(qd.QuadrantsCompilationError,
                           match="Return inside non-static if/for is not supported"):
            k(*args)


@test_utils.test()
def test_missing_return_statement_is_an_error():
    @qd.kernel
    def k() -> qd.i32:
        pass

    @qd.func
    def f() -> qd.i32:
        pass

    @qd.kernel
    def calls_f() -> qd.i32:
        return f()

    with pytest.raises(qd.QuadrantsSyntaxError,
                       match="Kernel has a return type but does not have a return statement"):
        k()
    with pytest.raises(qd.QuadrantsCompilationError,
                       match="Function has a return type but does not have a return statement"):
        calls_f()


@test_utils.test()
def test_return_shape_mismatches_are_errors():
    vec3, vec2 = qd.types.vector(3, qd.f32), qd.types.vector(2, qd.f32)
    sphere = qd.types.struct(center=vec3, radius=qd.f32)
    circle = qd.types.struct(center=vec2, radius=qd.f32)

    @qd.kernel
    def vector_for_scalar() -> qd.i32:
        return qd.Vector([1, 2, 3])

    @qd.kernel
    def short_vector() -> qd.types.vector(4, qd.f32):
        return qd.Vector([1.0, 2.0, 3.0])

    @qd.kernel
    def wrong_struct() -> sphere:
        return circle(center=qd.Vector([1.0, 2.0]), radius=2)

    @qd.kernel
    def short_tuple() -> (qd.i32, qd.i32, qd.i32):
        return 1, 2

    for k, message in ((vector_for_scalar, "return type is the scalar i32"),
                       (short_vector, "return type is a"),
                       (wrong_struct, "return type is the struct"),
                       (short_tuple, "tuple of 3")):
        with pytest.raises(qd.QuadrantsCompilationError, match=message) as info:
            k()
        assert "test_upstream_compat_return.py" in str(info.value)
        assert k.__name__ in str(info.value)


# ---- locals shared by the serial code and a parallel loop -------------------------

@test_utils.test()
def test_reduction_into_a_local_is_returned():
    x = qd.field(qd.f32, shape=1000)
    x.from_numpy(np.arange(1000, dtype=np.float32) * 0.5)

    @qd.kernel
    def total_and_count(threshold: qd.f32) -> (qd.f32, qd.i32):
        total = 0.0
        count = 0
        for i in x:
            total += x[i]
            if x[i] > threshold:
                count += 1
        return total, count

    total, count = total_and_count(100.0)
    assert total == test_utils.approx(float(np.sum(np.arange(1000) * 0.5)))
    assert count == int(np.sum(np.arange(1000) * 0.5 > 100.0))


_MIN_OF = qd.atomic_min  # an atomic op under another name


@test_utils.test()
def test_atomic_ops_on_a_local_reduce_across_the_parallel_loop():
    x = qd.field(qd.i32, shape=257)
    x.from_numpy((np.arange(257) * 37 % 101).astype(np.int32))

    @qd.kernel
    def stats() -> (qd.i32, qd.i32, qd.i32):
        total = 0
        biggest = x[0]
        smallest = x[0]
        for i in x:
            qd.atomic_add(total, x[i])
            qd.atomic_max(biggest, x[i])
            _MIN_OF(smallest, x[i])
        return total, biggest, smallest

    values = np.arange(257) * 37 % 101
    assert stats() == (int(values.sum()), int(values.max()), int(values.min()))


@test_utils.test()
def test_local_assigned_twice_then_read_by_a_loop():
    x = qd.field(qd.i32, shape=8)

    @qd.kernel
    def fill(a: qd.i32):
        v = a * 2
        if a > 10:
            v = -1
        for i in x:
            x[i] = v + i

    fill(3)
    assert x.to_numpy().tolist() == [6 + i for i in range(8)]
    fill(11)
    assert x.to_numpy().tolist() == [-1 + i for i in range(8)]


@test_utils.test()
def test_vector_local_written_by_a_loop_is_returned():
    vec = qd.types.vector(128, qd.i32)

    @qd.kernel
    def iota() -> vec:
        r = vec(0)
        for i in range(128):
            r[i] = i * i
        return r

    r = iota()
    assert all(r[i] == i * i for i in range(128))


@test_utils.test()
def test_loop_local_reused_by_name_later_stays_separate():
    x = qd.field(qd.i32, shape=16)

    @qd.kernel
    def run() -> qd.i32:
        for i in x:
            v = i * 3  # a local of each iteration
            x[i] = v
        v = 7
        return v

    assert run() == 7
    assert x.to_numpy().tolist() == [3 * i for i in range(16)]


@test_utils.test()
def test_gradient_through_a_shared_local_reduction():
    x = qd.field(qd.f32, shape=64, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    values = np.linspace(-1, 1, 64).astype(np.float32)
    x.from_numpy(values)

    @qd.kernel
    def energy():
        e = 0.0
        for i in x:
            e += x[i] * x[i]
        loss[None] = e

    with qd.ad.Tape(loss=loss):
        energy()
    assert loss[None] == test_utils.approx(float(np.sum(values.astype(np.float64) ** 2)))
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * values, rtol=1e-6)
