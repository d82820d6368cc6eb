"""@qd.kernel(fastcache=True) kernels are pure: values captured from
outside that can change between runs (numbers, strings, fields) are
refused, or only warned about for UPPERCASE constants and qd.static()
reads; enum members, math/numpy constants and Quadrants' own attributes
are fine."""
import enum
import math
import warnings

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


class Mode(enum.IntEnum):
    FAST = 1
    EXACT = 2


class Config:
    SIZE = 3
    flag = True


@test_utils.test()
def test_captured_numbers_strings_and_fields_are_refused():
    scale = 2
    label = "x"
    values = qd.field(qd.i32, shape=4)

    @qd.kernel
    def impure() -> qd.i32:
        return scale  # fine: not declared pure

    assert impure() == 2

    @qd.kernel(fastcache=True)
    def reads_number() -> qd.i32:
        return scale

    @qd.kernel(fastcache=True)
    def reads_string():
        print(label)

    @qd.func
    def helper() -> qd.i32:
        return values[0]

    @qd.kernel(fastcache=True)
    def reads_field_in_func() -> qd.i32:
        return helper()

    for kernel, name in ((reads_number, "scale"), (reads_string, "label"),
                         (reads_field_in_func, "values")):
        with pytest.raises(qd.QuadrantsCompilationError,
                           match=rf"\[PURE.VIOLATION\].*global variable {name}"):
            kernel()

    @qd.kernel(fastcache=True)
    def through_parameters(n: qd.i32, f: qd.template(), k: qd.template()) -> qd.i32:
        return n + f[1] + k

    values[1] = 5
    assert through_parameters(1, values, 10) == 16


@test_utils.test()
def test_constants_enums_and_module_attributes_are_allowed():
    @qd.kernel(fastcache=True)
    def constants() -> qd.f32:
        return qd.math.pi + math.pi + np.pi + Mode.EXACT

    assert constants() == pytest.approx(3 * math.pi + 2, rel=1e-6)

    with pytest.warns(UserWarning, match=r"\[PURE\.VIOLATION\]"):
        @qd.kernel(fastcache=True)
        def upper_case() -> qd.i32:
            return Config.SIZE

        assert upper_case() == 3

    with pytest.warns(UserWarning, match=r"\[PURE\.VIOLATION\]"):
        @qd.kernel(fastcache=True)
        def static_read() -> qd.i32:
            return 1 if qd.static(Config.flag) else 0

        assert static_read() == 1


@test_utils.test()
def test_older_spellings_still_declare_purity():
    limit = 4

    with pytest.warns(UserWarning, match="`pure` is deprecated"):
        @qd.kernel(pure=True)
        def old_style() -> qd.i32:
            return limit

    with pytest.raises(qd.QuadrantsCompilationError, match="PURE.VIOLATION"):
        old_style()

    with pytest.warns(UserWarning, match="qd.pure is deprecated"):
        @qd.pure
        @qd.kernel
        def decorated() -> qd.i32:
            return limit

    with pytest.raises(qd.QuadrantsCompilationError, match="PURE.VIOLATION"):
        decorated()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")

        @qd.kernel(fastcache=True)
        def clean(n: qd.i32) -> qd.i32:
            return n * 2

        assert clean(4) == 8
    assert not [w for w in seen if "PURE" in str(w.message) or "deprecated" in str(w.message)]
