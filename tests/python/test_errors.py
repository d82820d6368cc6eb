"""Error handling of the Python front end (SPEC section 2, "Errors").

Every compile error must be one of the documented exception types (all
subclasses of qd.QuadrantsError) and its message must name the kernel and the
file:line of the offending Python code. Offending lines are marked with the
comment `# <- HERE`; the expected line number is computed from the source with
inspect, never hard-coded.
"""
import inspect
import os
import re

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils

MARK = "# <- HERE"


# ---- helpers -----------------------------------------------------------------

def _marked_line(fn, marker=MARK):
    """The absolute line number of the single line of `fn` holding `marker`."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + n for n, text in enumerate(lines) if marker in text]
    assert len(hits) == 1, f"expected exactly one {marker!r} line in {fn.__name__}: {hits}"
    return hits[0]


def _location_pattern(fn, line):
    source = os.path.basename(inspect.getsourcefile(inspect.unwrap(fn)))
    return re.escape(source) + ":" + str(line) + r"(?!\d)"


def assert_names_kernel_and_line(error, kernel_name, fn, line):
    """`error`'s message names `kernel_name` and `<file of fn>:<line>`."""
    message = str(error)
    assert re.search(r"\b" + re.escape(kernel_name) + r"\b", message), \
        f"kernel name {kernel_name!r} missing from: {message}"
    assert re.search(_location_pattern(fn, line), message), \
        f"location {os.path.basename(inspect.getsourcefile(inspect.unwrap(fn)))}:{line} " \
        f"missing from: {message}"


def _f32(n=4):
    return np.zeros(n, dtype=np.float32)


# ---- the exception hierarchy ---------------------------------------------------

def test_exception_hierarchy():
    assert issubclass(qd.QuadrantsCompilationError, qd.QuadrantsError)
    assert issubclass(qd.QuadrantsSyntaxError, qd.QuadrantsCompilationError)
    assert issubclass(qd.QuadrantsSyntaxError, SyntaxError)
    assert issubclass(qd.QuadrantsTypeError, qd.QuadrantsCompilationError)
    assert issubclass(qd.QuadrantsTypeError, TypeError)
    assert issubclass(qd.QuadrantsAssertionError, qd.QuadrantsError)
    assert issubclass(qd.QuadrantsAssertionError, AssertionError)
    assert issubclass(qd.QuadrantsError, Exception)


# ---- unsupported syntax -> QuadrantsSyntaxError ----------------------------------
# Module-level kernels (decorating needs no session); each takes an ndarray so
# that no field is needed.

ARR = qd.types.ndarray(qd.f32, 1)


@qd.kernel
def k_lambda(a: ARR):
    for i in range(4):
        f = lambda v: v + 1  # <- HERE  # noqa: E731
        a[i] = 1.0


@qd.kernel
def k_set_comp(a: ARR):
    for i in range(4):
        vals = {j for j in range(3)}  # <- HERE
        a[i] = 1.0


@qd.kernel
def k_try(a: ARR):
    for i in range(4):
        try:  # <- HERE
            a[i] = 1.0
        except Exception:
            pass


@qd.kernel
def k_with(a: ARR):
    for i in range(4):
        with open(os.devnull):  # <- HERE
            a[i] = 1.0


@qd.kernel
def k_nested_def(a: ARR):
    for i in range(4):
        def helper(v):  # <- HERE
            return v
        a[i] = 1.0


@qd.kernel
def k_global(a: ARR):
    global _SOME_GLOBAL  # <- HERE
    for i in range(4):
        a[i] = 1.0


@qd.kernel
def k_del(a: ARR):
    for i in range(4):
        t = 1.0
        del t  # <- HERE
        a[i] = 1.0


@qd.kernel
def k_raise(a: ARR):
    for i in range(4):
        if i > 10:
            raise ValueError("no")  # <- HERE
        a[i] = 1.0


@qd.kernel
def k_import(a: ARR):
    for i in range(4):
        import math  # <- HERE
        a[i] = 1.0


@qd.kernel
def k_import_from(a: ARR):
    for i in range(4):
        from math import pi  # <- HERE
        a[i] = 1.0


@qd.kernel
def k_class_def(a: ARR):
    for i in range(4):
        class Local:  # <- HERE
            pass
        a[i] = 1.0


@qd.kernel
def k_yield(a: ARR):
    for i in range(4):
        yield i  # <- HERE


SYNTAX_CASES = [
    (k_lambda, "lambda"),
    (k_set_comp, "comprehension"),
    (k_try, "try"),
    (k_with, "with"),
    (k_nested_def, "def"),
    (k_global, "global"),
    (k_del, "del"),
    (k_raise, "raise"),
    (k_import, "import"),
    (k_import_from, "import"),
    (k_class_def, "class"),
    (k_yield, "yield"),
]


@pytest.mark.parametrize("kern, construct", SYNTAX_CASES,
                         ids=[k.name for k, _ in SYNTAX_CASES])
@test_utils.test()
def test_unsupported_syntax(kern, construct):
    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        kern(_f32())
    assert isinstance(info.value, SyntaxError)
    assert isinstance(info.value, qd.QuadrantsError)
    assert isinstance(info.value, qd.QuadrantsCompilationError)
    assert construct in str(info.value)
    assert_names_kernel_and_line(info.value, kern.name, kern, _marked_line(kern))


@test_utils.test()
def test_unsupported_syntax_inside_func_names_kernel_and_func_line():
    @qd.func
    def helper_with_lambda(v):
        g = lambda t: t  # <- HERE  # noqa: E731
        return v

    @qd.kernel
    def calls_bad_func(a: ARR):
        for i in range(4):
            a[i] = helper_with_lambda(1.0)

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        calls_bad_func(_f32())
    assert_names_kernel_and_line(info.value, "calls_bad_func", helper_with_lambda,
                                 _marked_line(helper_with_lambda))


@test_utils.test()
def test_syntax_error_is_raised_again_on_second_call():
    with pytest.raises(qd.QuadrantsSyntaxError):
        k_lambda(_f32())
    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        k_lambda(_f32())
    assert_names_kernel_and_line(info.value, "k_lambda", k_lambda, _marked_line(k_lambda))


# ---- type errors -> QuadrantsTypeError --------------------------------------------

def _assert_type_error(kern, args, *, needle=None):
    with pytest.raises(qd.QuadrantsTypeError) as info:
        kern(*args)
    assert isinstance(info.value, TypeError)
    assert isinstance(info.value, qd.QuadrantsCompilationError)
    assert isinstance(info.value, qd.QuadrantsError)
    if needle is not None:
        assert re.search(needle, str(info.value)), str(info.value)
    assert_names_kernel_and_line(info.value, kern.name, kern, _marked_line(kern))


@test_utils.test()
def test_bitwise_and_on_floats():
    @qd.kernel
    def bitand_floats(a: ARR, s: qd.f32):
        for i in range(4):
            a[i] = s & s  # <- HERE

    _assert_type_error(bitand_floats, (_f32(), 1.0), needle="f32")


@test_utils.test()
def test_bitwise_or_on_float_literal():
    @qd.kernel
    def bitor_literals(a: ARR):
        for i in range(4):
            t = 1.5
            a[i] = t | 2.5  # <- HERE

    _assert_type_error(bitor_literals, (_f32(),))


@test_utils.test()
def test_bitwise_xor_on_float_field_element():
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def bitxor_field():
        for i in x:
            x[i] = x[i] ^ x[i]  # <- HERE

    _assert_type_error(bitxor_field, ())


@test_utils.test()
def test_shift_on_float():
    @qd.kernel
    def shift_float(a: ARR, s: qd.f32):
        for i in range(4):
            a[i] = s << 1  # <- HERE

    _assert_type_error(shift_float, (_f32(), 1.0))


@test_utils.test()
def test_invert_on_float():
    @qd.kernel
    def invert_float(a: ARR, s: qd.f32):
        for i in range(4):
            a[i] = ~s  # <- HERE

    _assert_type_error(invert_float, (_f32(), 1.0))


@test_utils.test()
def test_float_index_into_field():
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def float_field_index(s: qd.f32):
        for i in range(4):
            x[s] = 1.0  # <- HERE

    _assert_type_error(float_field_index, (1.0,), needle="index")


@test_utils.test()
def test_float_expression_index_into_ndarray():
    @qd.kernel
    def float_ndarray_index(a: ARR):
        for i in range(4):
            a[i * 0.5] = 1.0  # <- HERE

    _assert_type_error(float_ndarray_index, (_f32(),), needle="index")


@test_utils.test()
def test_float_literal_index():
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def float_literal_index():
        for i in range(4):
            x[1.5] = 1.0  # <- HERE

    _assert_type_error(float_literal_index, (), needle="index")


@test_utils.test()
def test_float_loop_bound_outermost():
    @qd.kernel
    def float_bound_outer(a: ARR, n: qd.f32):
        for i in range(n):  # <- HERE
            a[0] = 1.0

    _assert_type_error(float_bound_outer, (_f32(), 3.0))


@test_utils.test()
def test_float_loop_begin_end():
    @qd.kernel
    def float_begin_end(a: ARR, n: qd.f32):
        for i in range(0, n):  # <- HERE
            a[0] = 1.0

    _assert_type_error(float_begin_end, (_f32(), 3.0))


@test_utils.test()
def test_float_loop_bound_inner():
    @qd.kernel
    def float_bound_inner(a: ARR, n: qd.f32):
        for i in range(4):
            for j in range(n):  # <- HERE
                a[i] = 1.0

    _assert_type_error(float_bound_inner, (_f32(), 3.0))


@test_utils.test()
def test_float_literal_loop_bound():
    @qd.kernel
    def float_literal_bound(a: ARR):
        for i in range(4.0):  # <- HERE
            a[0] = 1.0

    _assert_type_error(float_literal_bound, (_f32(),))


@test_utils.test()
def test_float_if_condition():
    @qd.kernel
    def float_if(a: ARR, s: qd.f32):
        for i in range(4):
            if s:  # <- HERE
                a[i] = 1.0

    _assert_type_error(float_if, (_f32(), 1.0), needle="condition")


@test_utils.test()
def test_float_ternary_condition():
    @qd.kernel
    def float_ternary(a: ARR, s: qd.f32):
        for i in range(4):
            a[i] = 1.0 if s else 2.0  # <- HERE

    _assert_type_error(float_ternary, (_f32(), 1.0))


@test_utils.test()
def test_float_while_condition():
    @qd.kernel
    def float_while(a: ARR, s: qd.f32):
        for i in range(4):
            while s:  # <- HERE
                a[i] = 1.0
                s = 0.0

    _assert_type_error(float_while, (_f32(), 0.0), needle="condition")


# ---- kernel call errors ---------------------------------------------------------------

@qd.kernel
def takes_two(a: qd.f32, b: qd.i32):
    pass


@qd.kernel
def takes_array(arr: qd.types.ndarray(qd.f32, 1)):
    for i in range(arr.shape[0]):
        arr[i] = 1.0


@test_utils.test()
def test_too_few_arguments():
    with pytest.raises(TypeError, match=r"\btakes_two\b"):
        takes_two(1.0)


@test_utils.test()
def test_too_many_arguments():
    with pytest.raises(TypeError, match=r"\btakes_two\b"):
        takes_two(1.0, 2, 3)


@test_utils.test()
def test_no_arguments():
    with pytest.raises(TypeError, match=r"\btakes_two\b"):
        takes_two()


@test_utils.test()
def test_unknown_keyword_argument():
    with pytest.raises(TypeError, match=r"\btakes_two\b") as info:
        takes_two(1.0, 2, c=3)
    assert "'c'" in str(info.value)


@test_utils.test()
def test_string_to_scalar_parameter():
    with pytest.raises(TypeError) as info:
        takes_two("one", 2)
    assert re.search(r"\ba\b", str(info.value)) and "takes_two" in str(info.value)


@test_utils.test()
def test_string_to_int_parameter_names_it():
    with pytest.raises(TypeError) as info:
        takes_two(1.0, "two")
    assert "'b'" in str(info.value) and "takes_two" in str(info.value)


@test_utils.test()
def test_numpy_array_to_scalar_parameter():
    with pytest.raises(TypeError) as info:
        takes_two(np.zeros(3, dtype=np.float32), 2)
    assert "'a'" in str(info.value) and "takes_two" in str(info.value)


@test_utils.test()
def test_qd_ndarray_to_scalar_parameter():
    with pytest.raises(TypeError) as info:
        takes_two(1.0, qd.ndarray(qd.i32, 3))
    assert "'b'" in str(info.value) and "takes_two" in str(info.value)


@test_utils.test()
def test_none_to_scalar_parameter():
    with pytest.raises(TypeError) as info:
        takes_two(None, 2)
    assert "'a'" in str(info.value)


@test_utils.test()
def test_float_to_int_parameter():
    with pytest.raises(TypeError) as info:
        takes_two(1.0, 2.5)
    assert "'b'" in str(info.value)


@test_utils.test()
def test_complex_to_scalar_parameter_names_it():
    with pytest.raises(TypeError) as info:
        takes_two(1 + 2j, 2)
    assert "'a'" in str(info.value) and "takes_two" in str(info.value)


@test_utils.test()
def test_out_of_range_int_for_i32_parameter():
    with pytest.raises((TypeError, ValueError, OverflowError, qd.QuadrantsError)) as info:
        takes_two(1.0, 2 ** 40)
    assert "'b'" in str(info.value) and "takes_two" in str(info.value)


@test_utils.test()
def test_negative_int_for_unsigned_parameter():
    @qd.kernel
    def takes_u8(v: qd.u8):
        pass

    with pytest.raises((TypeError, ValueError, OverflowError, qd.QuadrantsError)) as info:
        takes_u8(-1)
    assert "'v'" in str(info.value) and "takes_u8" in str(info.value)


@test_utils.test()
def test_ndarray_dtype_mismatch_numpy():
    with pytest.raises(TypeError) as info:
        takes_array(np.zeros(4, dtype=np.int32))
    message = str(info.value)
    assert "'arr'" in message and "takes_array" in message
    assert "f32" in message and "i32" in message


@test_utils.test()
def test_ndarray_dtype_mismatch_qd_ndarray():
    with pytest.raises(TypeError) as info:
        takes_array(qd.ndarray(qd.f64, 4))
    message = str(info.value)
    assert "'arr'" in message and "takes_array" in message and "f64" in message


@test_utils.test()
def test_ndarray_ndim_mismatch_numpy():
    with pytest.raises((ValueError, TypeError)) as info:
        takes_array(np.zeros((2, 2), dtype=np.float32))
    message = str(info.value)
    assert "'arr'" in message and "takes_array" in message
    assert "1" in message and "2" in message


@test_utils.test()
def test_ndarray_ndim_mismatch_qd_ndarray():
    with pytest.raises((ValueError, TypeError)) as info:
        takes_array(qd.ndarray(qd.f32, (2, 2, 2)))
    assert "'arr'" in str(info.value) and "takes_array" in str(info.value)


@test_utils.test()
def test_scalar_to_ndarray_parameter():
    with pytest.raises(TypeError) as info:
        takes_array(1.0)
    assert "'arr'" in str(info.value) and "takes_array" in str(info.value)


@test_utils.test()
def test_field_to_ndarray_parameter():
    with pytest.raises(TypeError) as info:
        takes_array(qd.field(qd.f32, shape=4))
    assert "'arr'" in str(info.value) and "takes_array" in str(info.value)


@test_utils.test()
def test_ndarray_with_unsupported_numpy_dtype():
    @qd.kernel
    def takes_any_array(anyarr: qd.types.ndarray()):
        pass

    with pytest.raises(TypeError) as info:
        takes_any_array(np.zeros(3, dtype=np.complex64))
    assert "complex64" in str(info.value)


@test_utils.test()
def test_call_errors_do_not_poison_later_calls():
    with pytest.raises(TypeError):
        takes_array(np.zeros(4, dtype=np.int32))
    arr = np.zeros(4, dtype=np.float32)
    takes_array(arr)
    np.testing.assert_array_equal(arr, np.ones(4, dtype=np.float32))


@test_utils.test()
def test_missing_annotation_names_parameter():
    @qd.kernel
    def missing_annotation(a: qd.f32, unannotated):
        pass

    with pytest.raises(qd.QuadrantsError) as info:
        missing_annotation(1.0, 2.0)
    message = str(info.value)
    assert "'unannotated'" in message
    assert "missing_annotation" in message
    assert "annotation" in message


@test_utils.test()
def test_missing_annotation_error_repeats_on_second_call():
    @qd.kernel
    def missing_annotation_twice(unannotated_twice):
        pass

    for _ in range(2):
        with pytest.raises(qd.QuadrantsError) as info:
            missing_annotation_twice(2.0)
        assert "'unannotated_twice'" in str(info.value)


@test_utils.test()
def test_missing_annotation_points_at_def_line():
    @qd.kernel
    def missing_annotation_located(a: qd.f32, unannotated):  # <- HERE
        pass

    with pytest.raises(qd.QuadrantsError) as info:
        missing_annotation_located(1.0, 2.0)
    assert_names_kernel_and_line(info.value, "missing_annotation_located",
                                 missing_annotation_located,
                                 _marked_line(missing_annotation_located))


@test_utils.test()
def test_unsupported_annotation_names_parameter():
    @qd.kernel
    def str_annotation(label: str):
        pass

    with pytest.raises(qd.QuadrantsTypeError) as info:
        str_annotation("x")
    assert "'label'" in str(info.value) and "str_annotation" in str(info.value)


@test_utils.test()
def test_varargs_kernel():
    @qd.kernel
    def varargs_kernel(*values):
        pass

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        varargs_kernel(1)
    assert "varargs_kernel" in str(info.value) and "*args" in str(info.value)


# ---- control flow and calls -------------------------------------------------------------

@test_utils.test()
def test_break_in_outermost_range_loop():
    @qd.kernel
    def break_outer_range(a: ARR):
        for i in range(4):
            if i > 1:
                break  # <- HERE
            a[i] = 1.0

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        break_outer_range(_f32())
    assert "break" in str(info.value)
    assert_names_kernel_and_line(info.value, "break_outer_range", break_outer_range,
                                 _marked_line(break_outer_range))


@test_utils.test()
def test_break_in_outermost_struct_for():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def break_outer_struct():
        for i in x:
            break  # <- HERE

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        break_outer_struct()
    assert_names_kernel_and_line(info.value, "break_outer_struct", break_outer_struct,
                                 _marked_line(break_outer_struct))


@test_utils.test()
def test_break_in_outermost_ndrange_loop():
    @qd.kernel
    def break_outer_ndrange(a: ARR):
        for i, j in qd.ndrange(2, 2):
            break  # <- HERE

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        break_outer_ndrange(_f32())
    assert_names_kernel_and_line(info.value, "break_outer_ndrange", break_outer_ndrange,
                                 _marked_line(break_outer_ndrange))


@test_utils.test()
def test_break_in_inner_loop_is_allowed():
    @qd.kernel
    def break_inner(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(4):
            for j in range(100):
                if j >= i:
                    break
                a[i] += 1

    arr = np.zeros(4, dtype=np.int32)
    break_inner(arr)
    np.testing.assert_array_equal(arr, [0, 1, 2, 3])


@test_utils.test()
def test_kernel_called_from_kernel():
    @qd.kernel
    def callee_kernel(a: ARR):
        a[0] = 1.0

    @qd.kernel
    def caller_kernel(a: ARR):
        callee_kernel(a)  # <- HERE

    with pytest.raises(qd.QuadrantsError) as info:
        caller_kernel(_f32())
    assert_names_kernel_and_line(info.value, "caller_kernel", caller_kernel,
                                 _marked_line(caller_kernel))


@test_utils.test()
def test_func_called_from_python():
    @qd.func
    def python_called_func(v):
        return v + 1

    with pytest.raises(qd.QuadrantsError) as info:
        python_called_func(1)
    assert "python_called_func" in str(info.value)


def test_func_called_from_python_without_session():
    @qd.func
    def sessionless_func(v):
        return v

    qd.reset()
    with pytest.raises(qd.QuadrantsError) as info:
        sessionless_func(1)
    assert "sessionless_func" in str(info.value)


@test_utils.test()
def test_return_in_kernel():
    @qd.kernel
    def returns_value(a: ARR):
        a[0] = 1.0
        return 1  # <- HERE

    # Upstream's type: a returned value needs the kernel's return annotation.
    with pytest.raises(qd.QuadrantsCompilationError) as info:
        returns_value(_f32())
    assert "no return type annotation" in str(info.value)
    assert_names_kernel_and_line(info.value, "returns_value", returns_value,
                                 _marked_line(returns_value))


@test_utils.test()
def test_bare_return_in_kernel_loop():
    @qd.kernel
    def returns_in_loop(a: ARR):
        for i in range(4):
            if i > 1:
                return  # <- HERE
            a[i] = 1.0

    with pytest.raises(qd.QuadrantsCompilationError,
                       match="Return inside non-static if/for is not supported") as info:
        returns_in_loop(_f32())
    assert_names_kernel_and_line(info.value, "returns_in_loop", returns_in_loop,
                                 _marked_line(returns_in_loop))


@test_utils.test()
def test_undefined_name():
    @qd.kernel
    def uses_undefined(a: ARR):
        for i in range(4):
            a[i] = not_defined_anywhere_xyz + 1.0  # <- HERE  # noqa: F821

    with pytest.raises(qd.QuadrantsCompilationError) as info:
        uses_undefined(_f32())
    assert "not_defined_anywhere_xyz" in str(info.value)
    assert_names_kernel_and_line(info.value, "uses_undefined", uses_undefined,
                                 _marked_line(uses_undefined))


@test_utils.test()
def test_undefined_function():
    @qd.kernel
    def calls_undefined(a: ARR):
        for i in range(4):
            a[i] = undefined_helper_xyz(i)  # <- HERE  # noqa: F821

    with pytest.raises(qd.QuadrantsCompilationError) as info:
        calls_undefined(_f32())
    assert "undefined_helper_xyz" in str(info.value)
    assert_names_kernel_and_line(info.value, "calls_undefined", calls_undefined,
                                 _marked_line(calls_undefined))


@test_utils.test()
def test_python_function_with_runtime_value():
    # Plain Python functions are inlined when their source is available;
    # one made by exec has none, which is an error at the call site.
    namespace = {}
    exec("def plain_python(v):\n    return v * 2\n", namespace)  # pylint: disable=exec-used
    plain_python = namespace["plain_python"]

    @qd.kernel
    def calls_plain_python(a: ARR):
        for i in range(4):
            a[i] = plain_python(a[i])  # <- HERE

    with pytest.raises(qd.QuadrantsError) as info:
        calls_plain_python(_f32())
    assert "plain_python" in str(info.value)
    assert_names_kernel_and_line(info.value, "calls_plain_python", calls_plain_python,
                                 _marked_line(calls_plain_python))


@test_utils.test()
def test_range_with_step():
    @qd.kernel
    def stepped_range(a: ARR):
        for i in range(0, 4, 2):  # <- HERE
            a[i] = 1.0

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        stepped_range(_f32())
    assert_names_kernel_and_line(info.value, "stepped_range", stepped_range,
                                 _marked_line(stepped_range))


@test_utils.test()
def test_wrong_number_of_field_indices():
    x = qd.field(qd.f32, shape=(2, 2))

    @qd.kernel
    def wrong_index_count():
        for i in range(2):
            x[i] = 1.0  # <- HERE

    with pytest.raises(qd.QuadrantsTypeError) as info:
        wrong_index_count()
    assert_names_kernel_and_line(info.value, "wrong_index_count", wrong_index_count,
                                 _marked_line(wrong_index_count))


# ---- errors from the C++ core surface as documented types --------------------------------

@test_utils.test()
def test_field_host_read_out_of_range():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsError) as info:
        x[10]  # pylint: disable=pointless-statement
    assert "10" in str(info.value)


@test_utils.test()
def test_field_host_read_one_past_end():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsError):
        x[4]  # pylint: disable=pointless-statement


@test_utils.test()
def test_field_host_read_negative_index():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsError):
        x[-1]  # pylint: disable=pointless-statement


@test_utils.test()
def test_field_host_write_out_of_range():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsError):
        x[10] = 1.0
    x[3] = 2.0
    assert x[3] == 2.0


@test_utils.test()
def test_2d_field_host_read_out_of_range_on_second_axis():
    x = qd.field(qd.i32, shape=(2, 3))
    with pytest.raises(qd.QuadrantsError):
        x[0, 3]  # pylint: disable=pointless-statement


@test_utils.test()
def test_field_host_wrong_number_of_indices():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises(qd.QuadrantsError):
        x[1, 2]  # pylint: disable=pointless-statement


@test_utils.test()
def test_field_host_float_index():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises((TypeError, IndexError, qd.QuadrantsError)):
        x[1.5]  # pylint: disable=pointless-statement


@test_utils.test()
def test_ndarray_host_read_out_of_range():
    a = qd.ndarray(qd.f32, 4)
    with pytest.raises(qd.QuadrantsError):
        a[10]  # pylint: disable=pointless-statement


@test_utils.test()
def test_ndarray_host_write_out_of_range():
    a = qd.ndarray(qd.f32, (2, 3))
    with pytest.raises(qd.QuadrantsError):
        a[2, 0] = 1.0


@test_utils.test()
def test_from_numpy_shape_mismatch():
    x = qd.field(qd.f32, shape=4)
    with pytest.raises((ValueError, qd.QuadrantsError)):
        x.from_numpy(np.zeros(5, dtype=np.float32))


@test_utils.test(debug=True, check_out_of_bound=True)
def test_kernel_out_of_bound_access_under_debug():
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def oob_write(i: qd.i32):
        x[i] = 1.0  # <- HERE

    with pytest.raises(qd.QuadrantsAssertionError) as info:
        oob_write(10)  # debug mode reports at the call
    assert_names_kernel_and_line(info.value, "oob_write", oob_write, _marked_line(oob_write))
    # The error is reported once; later launches run clean.
    oob_write(1)
    qd.sync()
    assert x[1] == 1.0


@test_utils.test()
def test_error_from_an_intrinsic_names_kernel_and_line():
    @qd.kernel
    def atomic_on_constant(a: ARR):
        for i in range(4):
            qd.atomic_add(1.0, a[i])  # <- HERE

    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        atomic_on_constant(_f32())
    assert "atomic_add" in str(info.value)
    assert_names_kernel_and_line(info.value, "atomic_on_constant", atomic_on_constant,
                                 _marked_line(atomic_on_constant))


@test_utils.test()
@pytest.mark.parametrize("call", [
    lambda: takes_two(1.0),
    lambda: takes_two(1.0, 2, c=3),
    lambda: takes_two("one", 2),
    lambda: takes_two(1.0, 2.5),
    lambda: takes_array(np.zeros(4, dtype=np.int32)),
    lambda: takes_array(3.0),
], ids=["arity", "keyword", "string", "float_for_int", "dtype", "scalar_for_array"])
def test_argument_type_errors_are_quadrants_type_errors(call):
    # Both `except TypeError` and `except qd.QuadrantsError` catch them.
    with pytest.raises(qd.QuadrantsTypeError):
        call()


@test_utils.test()
@pytest.mark.parametrize("call", [
    lambda: takes_two(1.0, 2 ** 40),
    lambda: takes_array(np.zeros((2, 2), dtype=np.float32)),
], ids=["out_of_range", "ndim"])
def test_argument_value_errors_are_value_and_quadrants_type_errors(call):
    with pytest.raises(ValueError) as info:
        call()
    assert isinstance(info.value, qd.QuadrantsTypeError)


# ---- typed literals ---------------------------------------------------------------

@test_utils.test()
def test_typed_literals_follow_upstream_rules():
    @qd.kernel
    def pcg(inp: qd.u32) -> qd.u32:
        state: qd.u32 = inp * qd.u32(747796405) + qd.u32(2891336453)
        return state ^ qd.u32(22)

    assert pcg(3) == ((3 * 747796405 + 2891336453) % 2**32) ^ 22

    def compile_error(body, kind, pattern):
        with pytest.raises(kind, match=pattern):
            body()

    @qd.kernel
    def int_as_float():
        a = qd.f32(0)

    @qd.kernel
    def float_as_int():
        a = qd.i32(1.5)

    @qd.kernel
    def out_of_range():
        a = qd.u16(-1)

    @qd.kernel
    def two_args():
        a = qd.i64(1, 2)

    @qd.kernel
    def compound():
        a = qd.f32(qd.Vector([1.0]))

    compile_error(int_as_float, qd.QuadrantsTypeError, r"Integer literals must be annotated")
    compile_error(float_as_int, qd.QuadrantsTypeError, r"Floating-point literals must be")
    compile_error(out_of_range, qd.QuadrantsTypeError, r"-1 exceeded the range of specified "
                                                       r"dtype u16")
    compile_error(two_args, qd.QuadrantsSyntaxError, r"can only decorate a single expression")
    compile_error(compound, qd.QuadrantsSyntaxError, r"cannot decorate an expression with a "
                                                     r"compound type")


@test_utils.test(debug=True)
def test_debug_mode_reports_a_failed_assert_at_the_kernel_call():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def check(limit: qd.i32):
        for i in x:
            v = i * 10
            assert v < limit, "v=%d" % v

    check(100)
    with pytest.raises(AssertionError, match=r"v=30"):
        check(25)

    @qd.kernel
    def check_f(limit: qd.f32):
        for i in x:
            v = i * 0.5
            assert v < limit, f"i={i} v={v:.2f} 100%"

    with pytest.raises(AssertionError, match=r"i=3 v=1.50 100%"):
        check_f(1.25)

    @qd.kernel
    def always_false():
        assert 0

    with pytest.raises(AssertionError):  # known at compile time
        always_false()


# ---- constructs upstream refuses, in its words ------------------------------------

def _refuses(kernel, kind, words, *args):
    with pytest.raises(kind, match=words) as info:
        kernel(*args)
    assert f"kernel '{kernel.__name__}'" in str(info.value)
    return str(info.value)


def test_refused_constructs_say_what_and_where():
    qd.init(arch=qd.cpu)
    f = qd.field(qd.i32, shape=4)

    @qd.kernel
    def raising():
        raise ValueError("no")

    @qd.kernel
    def breaking():
        for i in range(4):
            break

    @qd.kernel
    def stepped():
        for i in range(0, 4, 2):
            f[i] = 1

    @qd.kernel
    def defines():
        def inner():
            return 1

    @qd.kernel
    def identity(a: qd.template(), b: qd.template()):
        c = a is b

    @qd.kernel
    def nested_static():
        for i in qd.static(qd.static(range(2))):
            f[i] = 1

    @qd.kernel
    def reassigns(a: qd.template()):
        a = 5

    @qd.kernel
    def reuses_a_local():
        i = 0
        for i in range(4):
            f[i] = 1

    _refuses(raising, qd.QuadrantsSyntaxError, 'Unsupported node "Raise"')
    _refuses(breaking, qd.QuadrantsSyntaxError, "Cannot break in the outermost loop")
    _refuses(stepped, qd.QuadrantsSyntaxError, "Range should have 1 or 2 arguments, found 3")
    _refuses(defines, qd.QuadrantsSyntaxError, "Function definition is not allowed in 'qd.kernel'")
    _refuses(identity, qd.QuadrantsSyntaxError, 'Operator "is" in Quadrants scope', f, f)
    _refuses(nested_static, qd.QuadrantsSyntaxError, r"qd.static\(\) inside qd.static")
    _refuses(reassigns, qd.QuadrantsSyntaxError, 'Kernel argument "a" is immutable', f)
    _refuses(reuses_a_local, qd.QuadrantsCompilationError, "loop index 'i' is already a local")


def test_annotations_that_do_not_evaluate_are_refused_at_decoration():
    with pytest.raises(qd.QuadrantsSyntaxError, match="invalid type annotation 'x': 'bar'"):
        @qd.kernel
        def kernel(x: "bar"):  # noqa: F821
            pass

    with pytest.raises(qd.QuadrantsSyntaxError, match="invalid type annotation"):
        @qd.func
        def func(x: "foo"):  # noqa: F821
            pass

    # A string annotation that evaluates is the type it names.
    @qd.kernel
    def typed(x: "qd.i32") -> "qd.i32":
        return x * 2

    qd.init(arch=qd.cpu)
    assert typed(21) == 42


def test_compile_time_dicts_walrus_and_static_tuples():
    qd.init(arch=qd.cpu)
    a_field = qd.field(qd.i32, shape=2)

    @qd.kernel
    def run(n: qd.template(), f: qd.template()) -> qd.i32:
        squares = {i: i * i for i in range(n) if i % 2}
        more = {0: 100, **squares}
        x, y = qd.static(f, n)
        x[0] = y
        total = 0
        for i in qd.static(more):
            total += more[i]
        if (doubled := total * 2) > 0:
            total = doubled
        return total

    # n = 5: squares of 1 and 3, plus 100, doubled.
    assert run(5, a_field) == 2 * (100 + 1 + 9)
    assert a_field[0] == 5


def test_arguments_a_launch_cannot_convert_are_runtime_type_errors():
    qd.init(arch=qd.cpu)

    @qd.kernel
    def takes_int(a: qd.i32):
        pass

    @qd.kernel
    def takes_ndarray(a: qd.types.ndarray()):
        pass

    with pytest.raises(qd.QuadrantsRuntimeTypeError,
                       match=r"Argument \(0,\) \(type=<class 'float'>\) cannot be converted into "
                             r"required type i32") as info:
        takes_int(1.2)
    assert isinstance(info.value, qd.QuadrantsTypeError)
    with pytest.raises(qd.QuadrantsRuntimeTypeError, match="Invalid type for argument a, got 1.2"):
        takes_ndarray(1.2)


def test_ndrange_misuse_says_what_upstream_says():
    qd.init(arch=qd.cpu)

    @qd.kernel
    def three_bounds():
        for i in qd.ndrange((1, 2, 3)):
            pass

    @qd.kernel
    def one_target():
        for i in qd.ndrange(2, 3):
            pass

    @qd.kernel
    def float_static_bound():
        for i in qd.static(qd.ndrange(2.5)):
            pass

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"Every argument of ndrange should be a "
                                                      r"scalar or a tuple/list like \(begin, end\)"):
        three_bounds()
    with pytest.raises(qd.QuadrantsSyntaxError, match="number of the loop variables not equal to "
                                                      "the dimension of the ndrange"):
        one_target()
    with pytest.raises(qd.QuadrantsTypeError, match="should be an integer scalar"):
        float_static_bound()
