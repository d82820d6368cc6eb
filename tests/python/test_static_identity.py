"""`is` / `is not` and `in` / `not in` in kernels: compile-time tests that
run inside qd.static, where `is` compares a qd.template() or qd.Tensor
kernel parameter with None; everything else is a QuadrantsSyntaxError
naming the operator. Also the deprecated qd.experimental.real_func."""
import pytest

import quadrants as qd
from tests import test_utils

_NEEDS_DIRECT = r'Operator "is" inside `qd.static` requires a direct `qd.template\(\)`'


@test_utils.test()
def test_static_is_picks_a_branch_per_template_argument():
    @qd.kernel
    def which(option: qd.template()) -> qd.i32:
        r = 7
        if qd.static(option is None):
            r = 1
        if qd.static(None is not option):
            r = 2
        return r

    assert which(None) == 1
    assert which(3) == 2
    assert which(qd.f32) == 2


@test_utils.test()
def test_static_is_tests_an_optional_tensor():
    values = qd.ndarray(qd.f32, (3,))
    values.fill(2.5)

    @qd.kernel
    def total(extra: qd.Tensor) -> qd.f32:
        s = 1.0
        if qd.static(extra is not None):
            for i in range(3):
                s += extra[i]
        return s

    assert total(None) == 1.0
    assert total(values) == 8.5


@test_utils.test()
def test_static_is_refuses_what_is_not_a_template_parameter_against_none():
    @qd.kernel
    def scalar(v: qd.i32) -> qd.i32:
        return 1 if qd.static(v is None) else 0

    with pytest.raises(qd.QuadrantsSyntaxError, match=_NEEDS_DIRECT):
        scalar(1)

    @qd.kernel
    def array(v: qd.types.ndarray()) -> qd.i32:
        return 1 if qd.static(v is None) else 0

    with pytest.raises(qd.QuadrantsSyntaxError, match=_NEEDS_DIRECT):
        array(qd.ndarray(qd.f32, (2,)))

    @qd.kernel
    def not_none(t: qd.template()) -> qd.i32:
        return 1 if qd.static(t is qd.f32) else 0

    with pytest.raises(qd.QuadrantsSyntaxError, match=_NEEDS_DIRECT):
        not_none(qd.f32)

    @qd.kernel
    def rebound(t: qd.template()) -> qd.i32:
        r = 0
        for t in qd.static([None, 2]):
            r += 1 if qd.static(t is None) else 0
        return r

    with pytest.raises(qd.QuadrantsSyntaxError, match=_NEEDS_DIRECT):
        rebound(5)


@test_utils.test()
def test_is_and_in_outside_qd_static_are_refused_in_kernels():
    @qd.kernel
    def bare_is(t: qd.template()) -> qd.i32:
        return 1 if t is None else 0

    with pytest.raises(qd.QuadrantsSyntaxError, match='Operator "is" in Quadrants scope'):
        bare_is(None)

    @qd.kernel
    def bare_in(t: qd.template()) -> qd.i32:
        return 1 if t in (1, 2) else 0

    with pytest.raises(qd.QuadrantsSyntaxError, match='"In" is only supported inside `qd.static`'):
        bare_in(1)

    @qd.kernel
    def static_in(t: qd.template()) -> qd.i32:
        return 1 if qd.static(t not in (1, 2)) else 0

    assert static_in(1) == 0 and static_in(3) == 1


@test_utils.test()
def test_a_func_may_test_an_optional_argument_against_none():
    @qd.func
    def scaled(x, factor=None):
        r = x
        if factor is not None:
            r = x * factor
        return r

    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        return scaled(x) + scaled(x, 3.0)

    assert run(2.0) == 8.0


@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_experimental_real_func_warns_and_still_compiles():
    with pytest.warns(DeprecationWarning, match="Use qd.real_func instead"):

        @qd.experimental.real_func
        def triangle(n: qd.i32) -> qd.i32:
            s = 0
            for i in range(n + 1):
                s += i
            return s

    @qd.kernel
    def run(n: qd.i32) -> qd.i32:
        return triangle(n)

    assert run(10) == 55


@test_utils.test()
def test_static_is_tests_a_member_of_a_data_oriented_object():
    @qd.data_oriented
    class Model:
        def __init__(self, bias):
            self.bias = bias
            self.out = qd.field(qd.f32, ())

        @qd.kernel
        def run(self):
            if qd.static(self.bias is None):
                self.out[None] = 1.0
            else:
                self.out[None] = self.bias

    plain, biased = Model(None), Model(2.5)
    plain.run()
    biased.run()
    assert plain.out[None] == 1.0 and biased.out[None] == 2.5
