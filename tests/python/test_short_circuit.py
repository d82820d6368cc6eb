"""`and`/`or` on run-time values in kernels: with short_circuit_operators
(upstream's default, True) the right operand runs only when the left one
does not decide the result; with False both run, as logical and/or."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test(debug=True)
def test_guarded_read_never_runs_out_of_bounds():
    x = qd.field(qd.i32, shape=8)
    out = qd.field(qd.i32, shape=16)
    x.from_numpy(np.array([1, -2, 3, 0, 5, -6, 7, 8], dtype=np.int32))

    @qd.kernel
    def positive():
        for i in out:
            # debug=True checks bounds: x[i] for i >= 8 would raise.
            out[i] = 1 if i < 8 and x[i] > 0 else 0

    positive()
    qd.sync()
    assert out.to_numpy().tolist() == [1, 0, 1, 0, 1, 0, 1, 1] + [0] * 8


@test_utils.test()
def test_right_operand_side_effects_run_only_when_needed():
    calls = qd.field(qd.i32, shape=2)
    res = qd.field(qd.i32, shape=(2, 4))

    @qd.func
    def count(k: qd.template(), v):
        calls[k] += 1
        return v

    @qd.kernel
    def run():
        for t in qd.static(range(4)):
            a, b = t // 2, t % 2
            res[0, t] = 1 if (a == 1 and count(0, b) == 1) else 0
            res[1, t] = 1 if (a == 1 or count(1, b) == 1) else 0

    run()
    assert res.to_numpy().tolist() == [[0, 0, 0, 1], [0, 1, 1, 1]]
    # `and` evaluated its right side for a == 1 only, `or` for a == 0 only.
    assert calls.to_numpy().tolist() == [2, 2]


@test_utils.test(short_circuit_operators=False)
def test_without_short_circuit_both_operands_run():
    calls = qd.field(qd.i32, shape=())

    @qd.func
    def bump():
        calls[None] += 1
        return 1

    @qd.kernel
    def run(a: qd.i32) -> qd.i32:
        r = 0
        if a > 0 and bump() == 1:
            r = 1
        return r

    assert run(0) == 0 and run(1) == 1
    assert calls[None] == 2


@test_utils.test()
def test_chains_mix_integers_and_booleans():
    @qd.kernel
    def chain(a: qd.i32, b: qd.i32, c: qd.i32) -> qd.i32:
        r = 0
        if a and b and c:
            r += 1
        if a or b or c:
            r += 10
        if (a and not b) or c == 2:
            r += 100
        return r

    for a, b, c in [(0, 0, 0), (1, 0, 0), (1, 2, 0), (3, 4, 5), (0, 0, 2), (5, 0, 2)]:
        want = (1 if (a and b and c) else 0) + (10 if (a or b or c) else 0) + \
            (100 if ((a and not b) or c == 2) else 0)
        assert chain(a, b, c) == want, (a, b, c)


@test_utils.test()
def test_float_operand_is_an_error():
    @qd.kernel
    def bad(x: qd.f32) -> qd.i32:
        r = 0
        if x and x > 1:
            r = 1
        return r

    with pytest.raises(qd.QuadrantsTypeError, match="integer or boolean"):
        bad(2.0)


@test_utils.test()
def test_guarded_integer_division_never_divides_by_zero():
    @qd.kernel
    def safe_ratio(n: qd.i32, k: qd.i32) -> qd.i32:
        r = 0
        if k != 0 and n // k > 2:
            r = 1
        return r

    assert safe_ratio(10, 0) == 0
    assert safe_ratio(10, 2) == 1 and safe_ratio(10, 5) == 0


@pytest.mark.parametrize("short_circuit", [True, False])
def test_integer_operands_yield_a_value_as_in_python(short_circuit):
    qd.init(arch=test_utils.expected_archs()[0], short_circuit_operators=short_circuit)

    @qd.func
    def same(v: qd.i32) -> qd.i32:
        return v

    @qd.kernel
    def both(a: qd.i32, b: qd.i32) -> qd.types.vector(4, qd.i32):
        # Plain operands, then a right operand that is a call.
        return qd.Vector([a and b, a or b, a and same(b), a or same(b)])

    for a, b in [(1, 2), (2, 1), (0, 3), (4, 0), (0, 0), (-5, 7)]:
        assert list(both(a, b)) == [a and b, a or b, a and b, a or b], (a, b)


@test_utils.test()
def test_vectors_combine_elementwise_to_zero_or_one():
    @qd.kernel
    def combine() -> qd.types.matrix(2, 4, qd.i32):
        a = qd.Vector([2, 2, 0, 0])
        b = qd.Vector([1, 0, 3, 0])
        o = a or b
        n = a and b
        return qd.Matrix([[o[0], o[1], o[2], o[3]], [n[0], n[1], n[2], n[3]]])

    assert combine().to_numpy().tolist() == [[1, 1, 1, 0], [1, 0, 0, 0]]
