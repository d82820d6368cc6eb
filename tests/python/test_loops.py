"""Loops and control flow in kernels: range-for, ndrange, struct-for, serial
loops inside the parallel loop, while/break/continue, static unrolling,
branches and boolean logic. Every result is checked against numpy or a
plain-Python reference computed independently of Quadrants."""
import math

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


# ---- range-for --------------------------------------------------------------

@test_utils.test()
def test_range_one_arg_constant_bound():
    x = qd.field(qd.i32, shape=10)

    @qd.kernel
    def fill():
        for i in range(10):
            x[i] = i * i

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(10) ** 2)


@test_utils.test()
def test_range_two_args_constant_bounds():
    x = qd.field(qd.i32, shape=10)
    x.fill(-1)

    @qd.kernel
    def fill():
        for i in range(3, 8):
            x[i] = i + 100

    fill()
    expected = np.full(10, -1)
    expected[3:8] = np.arange(3, 8) + 100
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_range_bounds_from_scalar_args():
    x = qd.field(qd.i32, shape=20)

    @qd.kernel
    def mark(lo: qd.i32, hi: qd.i32):
        for i in range(lo, hi):
            x[i] += 1

    mark(2, 9)
    mark(5, 20)
    mark(7, 7)   # empty range
    mark(9, 4)   # reversed range is empty, not negative
    expected = np.zeros(20, dtype=np.int32)
    expected[2:9] += 1
    expected[5:20] += 1
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_range_one_arg_runtime_bound_and_negative_begin():
    total = qd.field(qd.i64, shape=())

    @qd.kernel
    def accumulate(n: qd.i32, lo: qd.i32):
        for i in range(n):
            total[None] += i
        for i in range(lo, 0):
            total[None] += i * 1000

    accumulate(37, -4)
    assert total[None] == sum(range(37)) + 1000 * sum(range(-4, 0))


@test_utils.test()
def test_range_bound_from_ndarray_shape():
    @qd.kernel
    def row_sums(a: qd.types.ndarray(qd.f32, 2), out: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            s = 0.0
            for j in range(a.shape[1]):
                s += a[i, j]
            out[i] = s

    a = np.arange(35, dtype=np.float32).reshape(5, 7)
    out = np.zeros(5, dtype=np.float32)
    row_sums(a, out)
    np.testing.assert_array_equal(out, a.sum(axis=1))
    # A different shape with the same dtype/ndim reuses the kernel: bounds
    # must come from the new arguments.
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    out2 = np.zeros(3, dtype=np.float32)
    row_sums(b, out2)
    np.testing.assert_array_equal(out2, b.sum(axis=1))


@test_utils.test()
def test_range_bound_from_field_value():
    n = qd.field(qd.i32, shape=())
    x = qd.field(qd.i32, shape=16)

    @qd.kernel
    def fill():
        for i in range(n[None]):
            x[i] = 1

    n[None] = 11
    fill()
    np.testing.assert_array_equal(x.to_numpy(), (np.arange(16) < 11).astype(np.int32))
    x.fill(0)
    n[None] = 3
    fill()
    np.testing.assert_array_equal(x.to_numpy(), (np.arange(16) < 3).astype(np.int32))


# ---- qd.ndrange ---------------------------------------------------------------

@test_utils.test()
def test_ndrange_1d_int_and_tuple():
    x = qd.field(qd.i32, shape=12)

    @qd.kernel
    def fill():
        for i in qd.ndrange(5):
            x[i] += 1
        for i in qd.ndrange((4, 10)):
            x[i] += 10

    fill()
    expected = np.zeros(12, dtype=np.int32)
    expected[:5] += 1
    expected[4:10] += 10
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_ndrange_2d_ints():
    x = qd.field(qd.i32, shape=(4, 6))

    @qd.kernel
    def fill():
        for i, j in qd.ndrange(4, 6):
            x[i, j] = i * 100 + j

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(4)[:, None] * 100 + np.arange(6))


@test_utils.test()
def test_ndrange_2d_mixed_int_and_tuple():
    x = qd.field(qd.i32, shape=(6, 8))
    x.fill(-1)

    @qd.kernel
    def fill():
        for i, j in qd.ndrange((2, 5), 3):
            x[i, j] = i * 10 + j
        for i, j in qd.ndrange(2, (5, 8)):
            x[i, j] = 1000 + i * 10 + j

    fill()
    expected = np.full((6, 8), -1)
    for i in range(2, 5):
        for j in range(3):
            expected[i, j] = i * 10 + j
    for i in range(2):
        for j in range(5, 8):
            expected[i, j] = 1000 + i * 10 + j
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_ndrange_3d_tuples_each_cell_visited_once():
    x = qd.field(qd.i32, shape=(5, 6, 7))

    @qd.kernel
    def visit():
        for i, j, k in qd.ndrange((1, 4), (2, 6), (0, 7)):
            x[i, j, k] += i * 10000 + j * 100 + k + 1

    visit()
    i, j, k = np.meshgrid(np.arange(5), np.arange(6), np.arange(7), indexing="ij")
    inside = (i >= 1) & (i < 4) & (j >= 2) & (j < 6)
    expected = np.where(inside, i * 10000 + j * 100 + k + 1, 0)
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_ndrange_with_runtime_bounds():
    x = qd.field(qd.i32, shape=(8, 8))

    @qd.kernel
    def fill(n: qd.i32, lo: qd.i32, hi: qd.i32):
        for i, j in qd.ndrange(n, (lo, hi)):
            x[i, j] = 1 + i + j

    fill(3, 2, 6)
    expected = np.zeros((8, 8), dtype=np.int32)
    for i in range(3):
        for j in range(2, 6):
            expected[i, j] = 1 + i + j
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_ndrange_3d_ints_count():
    count = qd.field(qd.i32, shape=())
    checksum = qd.field(qd.i64, shape=())

    @qd.kernel
    def run():
        for i, j, k in qd.ndrange(3, 4, 5):
            count[None] += 1
            checksum[None] += i * 400 + j * 20 + k

    run()
    assert count[None] == 60
    assert checksum[None] == sum(i * 400 + j * 20 + k
                                 for i in range(3) for j in range(4) for k in range(5))


# ---- struct-for ----------------------------------------------------------------

@test_utils.test()
def test_struct_for_1d_field():
    x = qd.field(qd.f32, shape=13)

    @qd.kernel
    def fill():
        for i in x:
            x[i] = i * 0.5

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(13, dtype=np.float32) * 0.5)


@test_utils.test()
def test_struct_for_2d_field_reads_other_field():
    a = qd.field(qd.i32, shape=(5, 3))
    b = qd.field(qd.i32, shape=(5, 3))
    a.from_numpy(np.arange(15, dtype=np.int32).reshape(5, 3))

    @qd.kernel
    def transform():
        for i, j in a:
            b[i, j] = a[i, j] * 2 + i - j

    transform()
    src = np.arange(15).reshape(5, 3)
    np.testing.assert_array_equal(b.to_numpy(),
                                  src * 2 + np.arange(5)[:, None] - np.arange(3)[None, :])


@test_utils.test()
def test_struct_for_over_root_dense_fields():
    a = qd.field(qd.i32)
    b = qd.field(qd.i32)
    qd.root.dense(qd.ij, (4, 3)).place(a, b)

    @qd.kernel
    def fill():
        for i, j in b:
            a[i, j] = i
            b[i, j] = j

    fill()
    np.testing.assert_array_equal(a.to_numpy(), np.repeat(np.arange(4)[:, None], 3, axis=1))
    np.testing.assert_array_equal(b.to_numpy(), np.repeat(np.arange(3)[None, :], 4, axis=0))


# ---- serial loops inside the parallel loop -------------------------------------

@test_utils.test()
def test_nested_serial_loop_bound_depends_on_outer_index():
    x = qd.field(qd.i64, shape=20)

    @qd.kernel
    def triangle():
        for i in range(20):
            s = 0
            for j in range(i):
                s += j
            x[i] = s

    triangle()
    np.testing.assert_array_equal(x.to_numpy(), [i * (i - 1) // 2 for i in range(20)])


@test_utils.test()
def test_triple_nested_loops_with_dependent_begin_and_end():
    x = qd.field(qd.i32, shape=10)

    @qd.kernel
    def count():
        for i in range(10):
            c = 0
            for j in range(i, 10):
                for k in range(j - i, j + 1):
                    c += 1
            x[i] = c

    count()
    expected = [sum(len(range(j - i, j + 1)) for j in range(i, 10)) for i in range(10)]
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_serial_loop_inside_struct_for():
    a = qd.field(qd.i32, shape=8)

    @qd.kernel
    def fact():
        for i in a:
            p = 1
            for k in range(1, i + 1):
                p *= k
            a[i] = p

    fact()
    np.testing.assert_array_equal(a.to_numpy(), [math.factorial(i) for i in range(8)])


# ---- while, break, continue ----------------------------------------------------

def _collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@test_utils.test()
def test_while_loop_collatz():
    steps = qd.field(qd.i32, shape=40)

    @qd.kernel
    def collatz():
        for i in range(1, 40):
            n = i
            s = 0
            while n != 1:
                if n % 2 == 0:
                    n = n // 2
                else:
                    n = 3 * n + 1
                s += 1
            steps[i] = s

    collatz()
    np.testing.assert_array_equal(steps.to_numpy()[1:], [_collatz_steps(i) for i in range(1, 40)])


@test_utils.test()
def test_while_condition_false_at_start_never_runs():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def run(limit: qd.i32):
        for i in range(4):
            v = 100
            while v < limit:
                v += 7
            x[i] = v

    run(50)
    np.testing.assert_array_equal(x.to_numpy(), [100] * 4)
    run(120)
    np.testing.assert_array_equal(x.to_numpy(), [121] * 4)


@test_utils.test()
def test_break_in_serial_range_loop():
    first = qd.field(qd.i32, shape=10)

    @qd.kernel
    def first_multiple():
        for i in range(1, 10):
            found = -1
            for j in range(10, 100):
                if j % i == 0 and j % 7 == 3:
                    found = j
                    break
            first[i] = found

    first_multiple()
    for i in range(1, 10):
        ref = next((j for j in range(10, 100) if j % i == 0 and j % 7 == 3), -1)
        assert first[i] == ref, i


@test_utils.test()
def test_continue_in_serial_range_loop():
    x = qd.field(qd.i32, shape=6)

    @qd.kernel
    def sum_non_multiples():
        for i in range(6):
            s = 0
            for j in range(30):
                if j % (i + 2) == 0:
                    continue
                s += j
            x[i] = s

    sum_non_multiples()
    np.testing.assert_array_equal(
        x.to_numpy(), [sum(j for j in range(30) if j % (i + 2) != 0) for i in range(6)])


@test_utils.test()
def test_break_and_continue_in_while():
    x = qd.field(qd.i32, shape=5)

    @qd.kernel
    def run():
        for i in range(5):
            k = 0
            s = 0
            while True:
                k += 1
                if k > 20 + i:
                    break
                if k % 3 == 0:
                    continue
                s += k
            x[i] = s

    run()
    np.testing.assert_array_equal(
        x.to_numpy(), [sum(k for k in range(1, 21 + i) if k % 3 != 0) for i in range(5)])


@test_utils.test()
def test_break_only_leaves_innermost_loop():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def run():
        for i in range(4):
            c = 0
            for j in range(5):
                for k in range(100):
                    if k >= j + i:
                        break
                    c += 1
                c += 1000
            x[i] = c

    run()
    np.testing.assert_array_equal(x.to_numpy(),
                                  [sum(j + i for j in range(5)) + 5000 for i in range(4)])


@test_utils.test()
def test_continue_in_outer_parallel_range_loop():
    x = qd.field(qd.i32, shape=12)
    x.fill(-5)

    @qd.kernel
    def run():
        for i in range(12):
            if i % 3 == 1:
                continue
            x[i] = i * 2

    run()
    expected = np.where(np.arange(12) % 3 == 1, -5, np.arange(12) * 2)
    np.testing.assert_array_equal(x.to_numpy(), expected)


@test_utils.test()
def test_continue_in_outer_struct_for():
    x = qd.field(qd.i32, shape=(4, 4))

    @qd.kernel
    def run():
        for i, j in x:
            if i == j:
                continue
            x[i, j] = 1

    run()
    np.testing.assert_array_equal(x.to_numpy(), 1 - np.eye(4, dtype=np.int32))


# ---- compile-time loops ---------------------------------------------------------

@test_utils.test()
def test_static_range_unrolls_with_python_int_index():
    x = qd.field(qd.i32, shape=5)
    weights = [3, 1, 4, 1, 5]

    @qd.kernel
    def run():
        for k in qd.static(range(5)):
            # k is a Python int here: it may index a Python list.
            x[k] = weights[k] * (k + 1)

    run()
    np.testing.assert_array_equal(x.to_numpy(), [w * (k + 1) for k, w in enumerate(weights)])


@test_utils.test()
def test_static_range_inside_parallel_loop():
    x = qd.field(qd.i32, shape=8)

    @qd.kernel
    def run():
        for i in range(8):
            s = 0
            for k in qd.static(range(1, 4)):
                s += i ** k if k < 3 else -i
            x[i] = s

    run()
    np.testing.assert_array_equal(x.to_numpy(), [i + i * i - i for i in range(8)])


@test_utils.test()
def test_static_over_python_list_and_tuple_of_fields():
    a = qd.field(qd.i32, shape=4)
    b = qd.field(qd.i32, shape=4)
    c = qd.field(qd.i32, shape=4)
    scales = (2, -3, 7)
    tail = scales[1:]

    @qd.kernel
    def run():
        for i in range(4):
            for f in qd.static([a, b, c]):
                f[i] = i
            for s in qd.static(scales):
                a[i] += s
            for f, s in qd.static(zip((b, c), tail)):
                f[i] *= s

    run()
    np.testing.assert_array_equal(a.to_numpy(), np.arange(4) + sum(scales))
    np.testing.assert_array_equal(b.to_numpy(), np.arange(4) * -3)
    np.testing.assert_array_equal(c.to_numpy(), np.arange(4) * 7)


@pytest.mark.parametrize("unroll", [True, False])
@test_utils.test()
def test_loop_iterable_chosen_by_a_static_condition(unroll):
    # The static branch unrolls (its index is a Python int, so it can pick
    # a field from a list); the other is an ordinary run-time loop.
    fields = [qd.field(qd.i32, shape=4) for _ in range(3)]
    total = qd.field(qd.i32, shape=())

    @qd.kernel
    def run():
        for k in qd.static(range(3)) if qd.static(unroll) else range(3):
            if qd.static(unroll):
                for i in range(4):
                    qd.static(fields)[k][i] = k * 10 + i
            else:
                total[None] += k

    run()
    if unroll:
        for k, f in enumerate(fields):
            np.testing.assert_array_equal(f.to_numpy(), k * 10 + np.arange(4))
    else:
        assert total[None] == 3


@test_utils.test()
def test_tuple_of_indices_inside_a_field_subscript():
    grid = qd.field(qd.i32, shape=(3, 4, 2))

    @qd.kernel
    def fill():
        for i, j, b in qd.ndrange(3, 4, 2):
            ij = (i, j)
            grid[ij, b] = i * 100 + j * 10 + b

    fill()
    i, j, b = np.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing="ij")
    np.testing.assert_array_equal(grid.to_numpy(), i * 100 + j * 10 + b)


@test_utils.test()
def test_static_range_of_template_size():
    x = qd.field(qd.i32, shape=())

    @qd.kernel
    def run(n: qd.template()):
        for _ in range(1):
            s = 0
            for k in qd.static(range(n)):
                s += k
            x[None] = s

    run(5)
    assert x[None] == 10
    run(9)
    assert x[None] == 36


# ---- branches and boolean logic -------------------------------------------------

def _classify(v):
    if v < -5:
        return 1
    elif v < 0:
        return 2
    elif v == 0:
        return 3
    else:
        return 4


@test_utils.test()
def test_if_elif_else():
    values = np.arange(-10, 10, dtype=np.int32)
    out = np.zeros_like(values)

    @qd.kernel
    def classify(v: qd.types.ndarray(qd.i32, 1), o: qd.types.ndarray(qd.i32, 1)):
        for i in range(v.shape[0]):
            if v[i] < -5:
                o[i] = 1
            elif v[i] < 0:
                o[i] = 2
            elif v[i] == 0:
                o[i] = 3
            else:
                o[i] = 4

    classify(values, out)
    np.testing.assert_array_equal(out, [_classify(int(v)) for v in values])


@test_utils.test()
def test_if_without_else_and_nested_if():
    x = qd.field(qd.i32, shape=16)

    @qd.kernel
    def run():
        for i in range(16):
            v = 0
            if i % 2 == 0:
                v += 1
                if i % 4 == 0:
                    v += 10
                    if i % 8 == 0:
                        v += 100
            x[i] = v

    run()
    ref = [(i % 2 == 0) + 10 * (i % 4 == 0) + 100 * (i % 8 == 0) for i in range(16)]
    np.testing.assert_array_equal(x.to_numpy(), ref)


@test_utils.test()
def test_conditional_expression():
    x = qd.field(qd.f32, shape=10)

    @qd.kernel
    def run(t: qd.f32):
        for i in range(10):
            v = i * 1.5
            x[i] = v if v > t else -v

    run(6.0)
    v = np.arange(10, dtype=np.float32) * 1.5
    np.testing.assert_array_equal(x.to_numpy(), np.where(v > 6.0, v, -v))


@test_utils.test()
def test_conditional_expression_mixed_int_and_float_branches():
    x = qd.field(qd.f32, shape=6)

    @qd.kernel
    def run():
        for i in range(6):
            x[i] = 0.25 if i % 2 == 0 else i

    run()
    np.testing.assert_array_equal(x.to_numpy(), [0.25, 1, 0.25, 3, 0.25, 5])


@test_utils.test()
def test_and_or_not_on_runtime_values():
    out = qd.field(qd.i32, shape=(4, 4, 3))

    @qd.kernel
    def run():
        for a, b in qd.ndrange(4, 4):
            out[a, b, 0] = 1 if (a > 1 and b < 3) else 0
            out[a, b, 1] = 1 if (a == 0 or b == 3 or a == b) else 0
            out[a, b, 2] = 1 if not (a < b) else 0

    run()
    got = out.to_numpy()
    for a in range(4):
        for b in range(4):
            assert got[a, b, 0] == int(a > 1 and b < 3)
            assert got[a, b, 1] == int(a == 0 or b == 3 or a == b)
            assert got[a, b, 2] == int(not a < b)


@test_utils.test()
def test_and_or_with_integer_operands_are_truthiness():
    out = qd.field(qd.i32, shape=(3, 3, 2))

    @qd.kernel
    def run():
        for a, b in qd.ndrange(3, 3):
            p = a - 1   # -1, 0, 1: nonzero values are true
            q = b * 2
            out[a, b, 0] = 1 if p and q else 0
            out[a, b, 1] = 1 if p or q else 0

    run()
    got = out.to_numpy()
    for a in range(3):
        for b in range(3):
            p, q = a - 1, b * 2
            assert got[a, b, 0] == int(bool(p and q)), (a, b)
            assert got[a, b, 1] == int(bool(p or q)), (a, b)


@test_utils.test()
def test_chained_comparisons():
    out = qd.field(qd.i32, shape=(10, 2))

    @qd.kernel
    def run(lo: qd.i32, hi: qd.i32):
        for i in range(10):
            out[i, 0] = 1 if lo <= i < hi else 0
            out[i, 1] = 1 if 0 < i != 5 <= hi > lo else 0

    run(3, 7)
    for i in range(10):
        assert out[i, 0] == int(3 <= i < 7), i
        assert out[i, 1] == int(0 < i != 5 <= 7 > 3), i


@test_utils.test()
def test_compile_time_branch_on_template_is_folded():
    x = qd.field(qd.i32, shape=3)

    @qd.kernel
    def run(mode: qd.template()):
        for i in range(3):
            if qd.static(mode == "square"):
                x[i] = i * i
            elif qd.static(mode == "neg"):
                x[i] = -i
            else:
                x[i] = 7

    run("square")
    np.testing.assert_array_equal(x.to_numpy(), [0, 1, 4])
    run("neg")
    np.testing.assert_array_equal(x.to_numpy(), [0, -1, -2])
    run("other")
    np.testing.assert_array_equal(x.to_numpy(), [7, 7, 7])


@test_utils.test()
def test_integer_values_as_conditions():
    out = qd.field(qd.i32, shape=(6, 3))

    @qd.kernel
    def run():
        for i in range(6):
            k = i
            steps = 0
            while k:                 # nonzero int is true
                k -= 1
                steps += 1
            out[i, 0] = steps
            out[i, 1] = 1 if not (i % 3) else 0
            r = 0
            if i & 1:
                r = 7
            out[i, 2] = r

    run()
    got = out.to_numpy()
    assert got[:, 0].tolist() == list(range(6))
    assert got[:, 1].tolist() == [int(not i % 3) for i in range(6)]
    assert got[:, 2].tolist() == [7 if i & 1 else 0 for i in range(6)]


@test_utils.test()
def test_range_with_i64_bounds():
    out = qd.field(qd.i64, shape=())

    @qd.kernel
    def run(lo: qd.i64, hi: qd.i64):
        for i in range(lo, hi):
            out[None] += i

    lo = 2 ** 33
    run(lo, lo + 100)
    assert out[None] == sum(range(lo, lo + 100))


@test_utils.test()
def test_ndrange_negative_begin_with_continue():
    x = qd.field(qd.i32, shape=(4, 3))
    x.fill(-1)

    @qd.kernel
    def run():
        for i, j in qd.ndrange((-2, 2), 3):
            if j == 1:
                continue
            x[i + 2, j] = i * 10 + j + 100

    run()
    expected = np.full((4, 3), -1)
    for i in range(-2, 2):
        for j in (0, 2):
            expected[i + 2, j] = i * 10 + j + 100
    np.testing.assert_array_equal(x.to_numpy(), expected)


# ---- qd.ndrange(..., axes=...) --------------------------------------------------

def _visit_order(dims, axes):
    """Canonical index tuples in the order nesting level 0 (outermost) walks
    canonical axis axes[0], and so on inwards."""
    import itertools  # pylint: disable=import-outside-toplevel
    out = []
    for physical in itertools.product(*[range(dims[a]) for a in axes]):
        canonical = [0] * len(dims)
        for level, axis in enumerate(axes):
            canonical[axis] = physical[level]
        out.append(tuple(canonical))
    return out


@test_utils.test()
def test_ndrange_axes_permute_the_visit_order_not_the_indices():
    dims = (3, 4, 5)
    axes = (2, 0, 1)
    x = qd.field(qd.i32, shape=dims)
    order = qd.field(qd.i32, shape=dims)

    @qd.kernel
    def fill():
        for i, j, k in qd.ndrange(3, 4, 5, axes=axes):
            x[i, j, k] = i * 100 + j * 10 + k

    @qd.kernel
    def visit():
        qd.loop_config(serialize=True)
        for i, j, k in qd.ndrange(3, 4, 5, axes=axes):
            order[i, j, k] = qd.atomic_add(counter[None], 1)

    counter = qd.field(qd.i32, shape=())
    fill()
    want = np.fromfunction(lambda i, j, k: i * 100 + j * 10 + k, dims, dtype=int)
    np.testing.assert_array_equal(x.to_numpy(), want)
    visit()
    got = order.to_numpy()
    for position, index in enumerate(_visit_order(dims, axes)):
        assert got[index] == position, (index, got[index], position)


@test_utils.test()
def test_ndrange_axes_keep_offsets_and_work_grouped_and_static():
    x = qd.field(qd.i32, shape=(8, 8))
    y = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def offsets():
        for i, j in qd.ndrange((2, 6), (3, 7), axes=(1, 0)):
            x[i, j] = i * 10 + j

    @qd.kernel
    def grouped_static():
        for I in qd.grouped(qd.ndrange(3, 4, axes=(1, 0))):
            y[I] += I[0] * 10 + I[1]
        for I in qd.static(qd.grouped(qd.ndrange(3, 4, axes=(1, 0)))):
            y[I] += 1000

    offsets()
    want = np.zeros((8, 8), dtype=np.int32)
    for i in range(2, 6):
        for j in range(3, 7):
            want[i, j] = i * 10 + j
    np.testing.assert_array_equal(x.to_numpy(), want)
    grouped_static()
    np.testing.assert_array_equal(
        y.to_numpy(), np.fromfunction(lambda i, j: i * 10 + j + 1000, (3, 4), dtype=int))


def test_ndrange_axes_in_python_scope_and_their_errors():
    assert list(qd.ndrange(3, 4, axes=(1, 0))) == _visit_order((3, 4), (1, 0))
    assert list(qd.ndrange(3, 4, axes=(0, 1))) == list(qd.ndrange(3, 4))
    assert list(qd.ndrange(axes=())) == [()]
    assert qd.ndrange(3, 4, axes=(0, 1)).axes is None
    assert qd.ndrange(3, 4, axes=[1, 0]).axes == (1, 0)
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"has 3 entries but ndrange has 2"):
        qd.ndrange(4, 5, axes=(0, 1, 2))
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"is not a permutation"):
        qd.ndrange(4, 5, axes=(1, 1))
    with pytest.raises(qd.QuadrantsTypeError, match=r"entries must be Python ints"):
        qd.ndrange(4, 5, axes=(True, False))


# ---- comprehensions (unrolled at compile time) ----------------------------------

@test_utils.test()
def test_list_comprehensions_unroll_at_compile_time():
    x = qd.field(qd.f32, shape=4)
    out = qd.field(qd.f32, shape=(3, 3))

    @qd.kernel
    def build(k: qd.i32):
        for r, c in qd.ndrange(3, 3):
            m = qd.Matrix([[p * 3 + q + x[q] for q in range(3)] for p in range(3)])
            odd = qd.Vector([x[i] * k for i in range(4) if i % 2 == 1])
            total = 0.0
            for v in qd.static([x[i] for i in qd.static(range(4))]):
                total += v
            out[r, c] = m[r, c] + odd[0] + odd[1] + total

    x.from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))
    build(2)
    extra = (2 + 4) * 2 + 10
    want = np.array([[r * 3 + c + (c + 1) + extra for c in range(3)] for r in range(3)])
    np.testing.assert_array_equal(out.to_numpy(), want)


@test_utils.test()
def test_a_comprehension_over_a_run_time_range_is_an_error():
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def bad(n: qd.i32):
        v = qd.Vector([x[i] for i in range(n)])
        x[0] = v[0]

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"needs a compile-time iterable"):
        bad(2)


@test_utils.test()
def test_starred_and_double_starred_call_arguments():
    shape = (3, 4)
    x = qd.field(qd.i32, shape=shape)
    opts = {"axes": (1, 0)}

    @qd.kernel
    def fill(a: qd.types.ndarray()):
        for i, j in qd.ndrange(*shape, **opts):
            x[i, j] = i * 100 + j
        for i, j in qd.ndrange(*a.shape):  # an ndarray's run-time shape
            a[i, j] = qd.max(*[i, j])

    a = np.zeros(shape, dtype=np.int32)
    fill(a)
    np.testing.assert_array_equal(x.to_numpy(), np.fromfunction(lambda i, j: i * 100 + j,
                                                                 shape, dtype=int))
    np.testing.assert_array_equal(a, np.fromfunction(np.maximum, shape, dtype=int))


@test_utils.test()
def test_a_starred_run_time_value_is_an_error():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def bad(n: qd.i32):
        for i in range(4):
            x[i] = qd.max(*n)

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"\*n in a call needs a compile-time"):
        bad(2)


@test_utils.test()
def test_break_and_continue_of_a_static_loop_are_decided_at_compile_time():
    x = qd.field(qd.i32, shape=6)

    @qd.kernel
    def unrolled():
        for i in qd.static(range(6)):
            if qd.static(i == 1):
                continue
            if qd.static(i == 4):
                break
            x[i] = 10 + i

    unrolled()
    assert x.to_numpy().tolist() == [10, 0, 12, 13, 0, 0]

    @qd.kernel
    def run_time_break(n: qd.i32):
        for i in qd.static(range(3)):
            if n > i:
                break

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"must be decided at compile time"):
        run_time_break(1)


# ---- qd.loop_config(name=...) ----------------------------------------------


def _named_loops_kernel(n):
    @qd.kernel
    def named(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1)) -> qd.i32:
        qd.loop_config(name="fill_a")
        for i in range(n):
            a[i] = i
        qd.loop_config(block_dim=32)  # no name: the task stays unnamed
        for i in range(n):
            b[i] = 2 * i
        total = 0
        qd.loop_config(serialize=True, name="serial sum")
        for i in range(11):
            total += i
        return total

    return named


def test_loop_config_name_names_the_tasks_in_the_ir(tmp_path, monkeypatch):
    monkeypatch.setenv("QD_DUMP_IR", "1")
    monkeypatch.setenv("QD_DUMP_IR_DIR", str(tmp_path))
    qd.init(arch=qd.cpu, offline_cache=False)
    try:
        a, b = qd.ndarray(qd.i32, (8,)), qd.ndarray(qd.i32, (8,))
        assert _named_loops_kernel(8)(a, b) == 55
        np.testing.assert_array_equal(a.to_numpy(), np.arange(8))
        np.testing.assert_array_equal(b.to_numpy(), 2 * np.arange(8))
    finally:
        qd.reset()
    dumped = "".join(p.read_text() for p in tmp_path.glob("named_*.ir"))
    assert dumped.count("loop_name=fill_a") == 1, dumped
    assert dumped.count("loop_name=serial sum") == 1, dumped
    assert dumped.count("loop_name=") == 2, dumped


@test_utils.test()
def test_loop_config_name_on_a_nested_loop_is_dropped_with_a_warning(capfd):
    @qd.kernel
    def nested(a: qd.types.ndarray(qd.i32, 1)):
        for k in range(2):
            qd.loop_config(name="inner_fill")
            for i in range(a.shape[0]):
                a[i] = i + k * 0

    a = qd.ndarray(qd.i32, (4,))
    capfd.readouterr()
    nested(a)
    printed = "".join(capfd.readouterr())
    assert "inner_fill" in printed and "nested inside another for-loop" in printed
    np.testing.assert_array_equal(a.to_numpy(), np.arange(4))


@test_utils.test(arch=qd.cpu)
def test_loop_config_name_must_be_a_string():
    @qd.kernel
    def bad(a: qd.types.ndarray(qd.i32, 1)):
        qd.loop_config(name=3)
        for i in range(a.shape[0]):
            a[i] = i

    with pytest.raises(qd.QuadrantsTypeError, match=r"name=\.\.\.\) must be a non-empty str"):
        bad(qd.ndarray(qd.i32, (2,)))


@test_utils.test(arch=qd.cpu)
def test_static_loop_names_end_with_the_loop_and_tuples_bind_values():
    x = qd.Matrix.field(3, 3, qd.f32, shape=())

    @qd.kernel
    def fill():
        w = [0, 1, 2]
        for i, j in qd.static(qd.ndrange(3, 3)):
            x[None][i, j] = w[i] + w[j] * 2  # i, j index a Python list

    fill()
    np.testing.assert_array_equal(x[None], np.add.outer([0, 1, 2], [0, 2, 4]))

    @qd.kernel
    def after():
        for k in qd.static(range(3)):
            pass
        print(k)

    with pytest.raises(qd.QuadrantsCompilationError, match="'k'"):
        after()


@test_utils.test()
def test_loop_config_name_in_a_static_loop_names_each_copy_without_a_warning(capfd):
    @qd.kernel
    def unrolled(a: qd.types.ndarray(qd.i32, 1)):
        for _ in qd.static(range(2)):
            qd.loop_config(name="copy")
            for i in range(a.shape[0]):
                a[i] = a[i] + 1

    a = qd.ndarray(qd.i32, (4,))
    capfd.readouterr()
    unrolled(a)
    assert "nested inside another for-loop" not in "".join(capfd.readouterr())
    np.testing.assert_array_equal(a.to_numpy(), [2] * 4)


@test_utils.test()
def test_a_local_changed_before_a_parallel_loop_is_read_after_it():
    out = qd.field(qd.i32, 4)

    @qd.kernel
    def run() -> qd.i32:
        m = qd.Matrix([[1, 2], [3, 4]])
        steps = 0
        while steps < 3:
            m[0, 0] += 10
            steps += 1
        for i in range(4):
            out[i] = i
        m[1, 1] -= 1
        return m.sum() + steps

    # m = [[31, 2], [3, 3]] after the serial code on both sides.
    assert run() == 39 + 3
    assert list(out.to_numpy()) == [0, 1, 2, 3]


@test_utils.test()
def test_a_loop_under_a_compile_time_if_is_the_parallel_loop():
    x = qd.field(qd.i32, 8)

    @qd.kernel
    def fill(double: qd.template()) -> qd.i32:
        total = 0
        if qd.static(double):
            for i in range(8):
                t = i * 2
                x[i] = t
                total += t
        else:
            for i in range(8):
                x[i] = i
                total += i
        for k in qd.static(range(2)):
            for i in range(8):
                x[i] += k
        return total

    assert fill(True) == 56
    assert list(x.to_numpy()) == [2 * i + 1 for i in range(8)]
    assert fill(False) == 28

    @qd.kernel
    def bad() -> qd.i32:
        a = 0
        if qd.static(True):
            for i in range(10):
                if i == 5:
                    break
                a += 1
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="Cannot break in the outermost loop"):
        bad()


@test_utils.test()
def test_a_local_changed_around_a_loop_under_a_static_if_is_shared():
    out = qd.field(qd.i32, 4)

    @qd.kernel
    def run(flag: qd.template()) -> qd.i32:
        acc = 1
        acc += 2
        if qd.static(flag):
            for i in range(4):
                out[i] = i
        acc *= 10
        return acc

    assert run(True) == 30
    assert list(out.to_numpy()) == [0, 1, 2, 3]
