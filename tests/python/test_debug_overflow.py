"""Integer overflow reports in debug mode: a run-time +, -, * or << whose
result wraps prints "<Operation> overflow detected" with the kernel, the
file:line and the source line; results that fit print nothing, and without
debug mode nothing is checked. The wrapped value is still the result."""
import pytest

import quadrants as qd

from tests import test_utils

SIGNED = [qd.i8, qd.i16, qd.i32, qd.i64]
UNSIGNED = [qd.u8, qd.u16, qd.u32, qd.u64]
ALL = SIGNED + UNSIGNED


def _bits(dtype):
    return {qd.i8: 8, qd.u8: 8, qd.i16: 16, qd.u16: 16, qd.i32: 32, qd.u32: 32,
            qd.i64: 64, qd.u64: 64}[dtype]


def _reports(capfd, run):
    capfd.readouterr()
    value = run()
    qd.sync()
    return value, capfd.readouterr().out


def _operators(dtype):
    @qd.kernel
    def add(a: dtype, b: dtype) -> dtype:
        return a + b

    @qd.kernel
    def sub(a: dtype, b: dtype) -> dtype:
        return a - b

    @qd.kernel
    def mul(a: dtype, b: dtype) -> dtype:
        c = a
        c *= b
        return c

    @qd.kernel
    def shl(a: dtype, b: qd.i32) -> dtype:
        return a << b

    return add, sub, mul, shl


def _cases(dtype):
    """(kernel name, arguments, wraps) at the edges of dtype's range."""
    bits = _bits(dtype)
    if dtype in SIGNED:
        hi, lo = 2 ** (bits - 1) - 1, -2 ** (bits - 1)
        return [("add", (hi, 1), True), ("add", (hi - 1, 1), False), ("add", (lo, -1), True),
                ("sub", (lo, 1), True), ("sub", (lo + 1, 1), False), ("sub", (0, lo), True),
                ("mul", (2 ** (bits // 2), 2 ** (bits // 2 - 1)), True),
                ("mul", (2 ** (bits // 2 - 1), 2 ** (bits // 2 - 1) - 1), False),
                ("mul", (-1, lo), True), ("mul", (lo, 1), False), ("mul", (0, lo), False),
                ("shl", (2, bits - 2), True), ("shl", (2, bits - 3), False),
                ("shl", (-1, bits - 1), False)]
    hi = 2 ** bits - 1
    return [("add", (hi, 1), True), ("add", (hi - 1, 1), False),
            ("sub", (1, 2), True), ("sub", (2, 2), False),
            ("mul", (2 ** (bits // 2), 2 ** (bits // 2)), True),
            ("mul", (2 ** (bits // 2), 2 ** (bits // 2) - 1), False), ("mul", (0, hi), False),
            ("shl", (2, bits - 1), True), ("shl", (2, bits - 2), False)]


_WORDS = {"add": "Addition", "sub": "Subtraction", "mul": "Multiplication",
          "shl": "Shift left"}
_SOURCE = {"add": "return a + b", "sub": "return a - b", "mul": "c *= b",
           "shl": "return a << b"}


@pytest.mark.parametrize("dtype", ALL, ids=str)
@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan], debug=True)
def test_wrapping_results_are_reported_with_their_source_line(capfd, dtype):
    kernels = dict(zip(["add", "sub", "mul", "shl"], _operators(dtype)))
    bits = _bits(dtype)
    for name, args, wraps in _cases(dtype):
        value, out = _reports(capfd, lambda: kernels[name](*args))
        word = f"{_WORDS[name]} overflow detected"
        if wraps:
            assert word in out, (name, args, out)
            assert _SOURCE[name] in out and f"'{name}'" in out, out
            assert "test_debug_overflow.py:" in out, out
        else:
            assert "overflow detected" not in out, (name, args, out)
        # The result is the wrapped value either way.
        exact = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                 "mul": lambda a, b: a * b, "shl": lambda a, b: a << b}[name](*args)
        mask = (1 << bits) - 1
        wrapped = exact & mask
        if dtype in SIGNED and wrapped >= 1 << (bits - 1):
            wrapped -= 1 << bits
        assert value == wrapped, (name, args, value, wrapped)


@test_utils.test(arch=[qd.cpu, qd.cuda, qd.vulkan])
def test_nothing_is_checked_without_debug_mode(capfd):
    @qd.kernel
    def add(a: qd.i32, b: qd.i32) -> qd.i32:
        return a + b

    value, out = _reports(capfd, lambda: add(2 ** 31 - 1, 1))
    assert value == -2 ** 31 and "overflow" not in out
