"""Run-time checks: kernel asserts under debug=True, and out-of-bound
index checks under check_out_of_bound=True. Errors are recorded by the
kernel and raised as qd.QuadrantsAssertionError: under debug=True at the
kernel's call (debug mode waits for each kernel, as upstream does),
otherwise at the next qd.sync() (explicit, or implied by a host read); the
program stays usable."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


def _limit_checker(x):
    @qd.kernel
    def check_limit(limit: qd.i32):
        for i in x:
            assert x[i] < limit, "value over the limit"

    return check_limit


# ---- assert ---------------------------------------------------------------------------

@test_utils.test(debug=True)
def test_assert_raises_at_explicit_sync():
    x = qd.field(qd.i32, shape=8)
    x[5] = 40
    check = _limit_checker(x)
    check(100)
    qd.sync()                        # passes: nothing recorded
    with pytest.raises(qd.QuadrantsAssertionError, match="value over the limit"):
        check(10)
        qd.sync()


@test_utils.test(debug=True)
def test_assertion_error_hierarchy():
    x = qd.field(qd.i32, shape=2)
    x[0] = 3
    check = _limit_checker(x)
    with pytest.raises(qd.QuadrantsError) as info:
        check(1)
        qd.sync()
    assert isinstance(info.value, qd.QuadrantsAssertionError)
    assert isinstance(info.value, AssertionError)


@test_utils.test(debug=True)
def test_assert_raises_at_the_call_under_debug():
    x = qd.field(qd.i32, shape=4)
    x[1] = 9
    check = _limit_checker(x)
    with pytest.raises(qd.QuadrantsAssertionError, match="value over the limit"):
        check(5)
    assert x[0] == 0  # reported once: the host read that follows is clean


@test_utils.test(check_out_of_bound=True)
def test_a_check_without_debug_raises_at_next_to_numpy():
    y = qd.field(qd.i32, shape=4)

    @qd.kernel
    def write_at(i: qd.i32):
        y[i] = 1

    write_at(7)  # not debug: the launch does not wait for the kernel
    with pytest.raises(qd.QuadrantsAssertionError):
        y.to_numpy()


@test_utils.test(debug=True)
def test_assert_on_ndarray_raises_at_ndarray_read():
    @qd.kernel
    def check_positive(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            assert a[i] > 0.0, "must be positive"

    a = qd.ndarray(qd.f32, 5)
    a.fill(1.0)
    check_positive(a)
    assert a[0] == 1.0
    a[3] = -2.0
    with pytest.raises(qd.QuadrantsAssertionError, match="must be positive"):
        check_positive(a)
    assert a[3] == -2.0


@test_utils.test(debug=True)
def test_assert_message_names_kernel_and_line():
    x = qd.field(qd.i32, shape=3)
    x[2] = 1

    @qd.kernel
    def must_be_zero():
        for i in x:
            assert x[i] == 0

    with pytest.raises(qd.QuadrantsAssertionError) as info:
        must_be_zero()
        qd.sync()
    message = str(info.value)
    assert "must_be_zero" in message
    assert "test_debug.py" in message


@test_utils.test(debug=True)
def test_assert_message_includes_runtime_values():
    x = qd.field(qd.i32, shape=6)
    x[4] = 77

    @qd.kernel
    def check():
        for i in x:
            assert x[i] < 50, "x[%d] = %d is too big" % (i, x[i])

    with pytest.raises(qd.QuadrantsAssertionError) as info:
        check()
        qd.sync()
    assert "4" in str(info.value) and "77" in str(info.value)


@test_utils.test(debug=True)
def test_assert_message_is_formatted_like_python():
    x = qd.field(qd.i32, shape=6)
    x[4] = 77

    @qd.kernel
    def check():
        for i in x:
            assert x[i] < 50, "x[%d] = %d is too big" % (i, x[i])

    with pytest.raises(qd.QuadrantsAssertionError, match=r"x\[4\] = 77 is too big"):
        check()
        qd.sync()


@test_utils.test(debug=True)
def test_program_usable_after_assertion():
    x = qd.field(qd.i32, shape=4)
    x[0] = 100
    check = _limit_checker(x)
    with pytest.raises(qd.QuadrantsAssertionError):
        check(10)
        qd.sync()
    qd.sync()                        # the error was reported once, then cleared
    x[0] = 1                         # host access works again
    check(10)
    qd.sync()

    @qd.kernel
    def double():
        for i in x:
            x[i] = x[i] * 2 + 1

    double()
    np.testing.assert_array_equal(x.to_numpy(), [3, 1, 1, 1])


@test_utils.test()
def test_assert_ignored_without_debug():
    x = qd.field(qd.i32, shape=4)
    y = qd.field(qd.i32, shape=4)
    x.fill(100)

    @qd.kernel
    def check_then_write():
        for i in x:
            assert x[i] < 10, "would fail under debug"
            y[i] = x[i] + i

    check_then_write()
    qd.sync()                        # nothing raised
    np.testing.assert_array_equal(y.to_numpy(), 100 + np.arange(4))


@test_utils.test(debug=False)
def test_assert_ignored_with_debug_explicitly_false():
    out = qd.field(qd.i32, shape=())

    @qd.kernel
    def run(v: qd.i32):
        for _ in range(1):
            assert v > 0
            out[None] = v * 2

    run(-3)
    assert out[None] == -6


# ---- out-of-bound checks ---------------------------------------------------------------

@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_field_index_caught_at_sync():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def write_at(k: qd.i32):
        for _ in range(1):
            x[k] = 1

    write_at(3)                      # in bounds
    qd.sync()
    with pytest.raises(qd.QuadrantsAssertionError, match="write_at") as info:
        write_at(7)
        qd.sync()
    assert "7" in str(info.value)


@test_utils.test(check_out_of_bound=True)
def test_negative_field_index_caught():
    x = qd.field(qd.f32, shape=5)

    @qd.kernel
    def read_at(k: qd.i32):
        for _ in range(1):
            x[0] = x[k] + 1.0

    with pytest.raises(qd.QuadrantsAssertionError, match="read_at"):
        read_at(-1)
        qd.sync()


@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_read_of_an_overwritten_variable_caught():
    """The value read is dead (t is assigned again before any use), and the
    optimizer drops dead stores, but not under bounds checks: the read still
    reports."""
    x = qd.field(qd.f32, shape=4)
    y = qd.field(qd.f32, shape=1)

    @qd.kernel
    def read_then_overwrite(k: qd.i32):
        for _ in range(1):
            t = x[k]
            t = 2.0
            y[0] = t

    read_then_overwrite(3)
    qd.sync()
    with pytest.raises(qd.QuadrantsAssertionError, match="read_then_overwrite"):
        read_then_overwrite(7)
        qd.sync()
    assert y[0] == 2.0


@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_second_axis_of_2d_field():
    x = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def touch(i: qd.i32, j: qd.i32):
        for _ in range(1):
            x[i, j] += 1

    touch(2, 3)
    qd.sync()
    touch(1, 4)                      # row 1 has only columns 0..3
    with pytest.raises(qd.QuadrantsAssertionError, match="touch"):
        qd.sync()


@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_ndarray_index_caught_at_sync():
    @qd.kernel
    def shift_read(a: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            out[i] = a[i + 1]        # reads one past the end on the last thread

    a = np.arange(6, dtype=np.int32)
    out = np.zeros(6, dtype=np.int32)
    with pytest.raises(qd.QuadrantsAssertionError, match="shift_read") as info:
        shift_read(a, out)
        qd.sync()
    assert "6" in str(info.value)


@test_utils.test(check_out_of_bound=True)
def test_out_of_bound_qd_ndarray_2d_caught():
    @qd.kernel
    def put(a: qd.types.ndarray(qd.f32, 2), i: qd.i32, j: qd.i32):
        for _ in range(1):
            a[i, j] = 1.0

    a = qd.ndarray(qd.f32, (2, 3))
    put(a, 1, 2)
    qd.sync()
    put(a, 2, 0)
    with pytest.raises(qd.QuadrantsAssertionError, match="put"):
        a.to_numpy()


@test_utils.test(check_out_of_bound=True)
def test_program_usable_after_out_of_bound_error():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def fill(n: qd.i32):
        for i in range(n):
            x[i] = i + 1

    with pytest.raises(qd.QuadrantsAssertionError):
        fill(5)
        qd.sync()
    qd.sync()                         # reported once
    x.fill(0)
    fill(4)
    np.testing.assert_array_equal(x.to_numpy(), [1, 2, 3, 4])

    @qd.kernel
    def other(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            a[i] = x[i] * 10

    a = np.zeros(4, dtype=np.int32)
    other(a)
    np.testing.assert_array_equal(a, [10, 20, 30, 40])


@test_utils.test(check_out_of_bound=True)
def test_caught_out_of_bound_write_does_not_corrupt_other_elements():
    x = qd.field(qd.i32, shape=4)
    x.from_numpy(np.array([10, 11, 12, 13], dtype=np.int32))

    @qd.kernel
    def write_at(k: qd.i32):
        for _ in range(1):
            x[k] = -1

    with pytest.raises(qd.QuadrantsAssertionError):
        write_at(9)
        qd.sync()
    np.testing.assert_array_equal(x.to_numpy(), [10, 11, 12, 13])


@test_utils.test(debug=True)
def test_debug_also_checks_bounds():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def write_at(k: qd.i32):
        for _ in range(1):
            x[k] = 1

    with pytest.raises(qd.QuadrantsAssertionError, match="write_at"):
        write_at(4)
        qd.sync()


@test_utils.test(check_out_of_bound=True)
def test_in_bound_accesses_raise_nothing():
    x = qd.field(qd.i32, shape=(5, 7))

    @qd.kernel
    def fill(a: qd.types.ndarray(qd.i32, 2)):
        for i, j in x:
            x[i, j] = i + j
            a[i, j] = x[i, j] * 2

    a = np.zeros((5, 7), dtype=np.int32)
    fill(a)
    qd.sync()
    expected = np.arange(5)[:, None] + np.arange(7)
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal(a, expected * 2)
