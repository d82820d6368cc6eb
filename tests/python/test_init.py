"""qd.init / qd.reset: option validation, arch selection, session lifetime.

These tests manage qd.init() / qd.reset() themselves (no @test_utils.test()),
except where a plain session on every available arch is what is wanted. An
autouse fixture resets after each test so that no session leaks out.
"""
import re

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import impl, runtime
from tests import test_utils


@pytest.fixture(autouse=True)
def _clean_session():
    qd.reset()
    yield
    qd.reset()


def _fill_kernel(x):
    @qd.kernel
    def fill_iota():
        for i in x:
            x[i] = i * 2

    return fill_iota


def _assert_session_works():
    x = qd.field(qd.i32, shape=16)
    _fill_kernel(x)()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(16) * 2)


def _assert_not_initialized():
    with pytest.raises(qd.QuadrantsError, match=r"(?i)not initialized|qd\.init"):
        qd.field(qd.f32, shape=4)


# ---- options ---------------------------------------------------------------------------

def test_unknown_option_is_type_error_naming_it():
    with pytest.raises(TypeError, match=r"\bnot_an_option_xyz\b"):
        qd.init(arch=qd.cpu, not_an_option_xyz=1)
    _assert_not_initialized()


def test_misspelled_option_is_type_error_naming_it():
    with pytest.raises(TypeError, match=r"\bdebgu\b"):
        qd.init(arch=qd.cpu, debgu=True)


def test_debug_must_be_bool():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, debug="yes")
    assert "debug" in str(info.value) and "yes" in str(info.value)
    _assert_not_initialized()


def test_cpu_max_num_threads_negative():
    with pytest.raises((ValueError, TypeError)) as info:
        qd.init(arch=qd.cpu, cpu_max_num_threads=-1)
    assert "cpu_max_num_threads" in str(info.value) and "-1" in str(info.value)
    _assert_not_initialized()


def test_cpu_max_num_threads_float():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, cpu_max_num_threads=1.5)
    assert "cpu_max_num_threads" in str(info.value) and "1.5" in str(info.value)


def test_default_fp_must_be_float_type():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, default_fp=qd.i32)
    assert "default_fp" in str(info.value) and "i32" in str(info.value)


def test_default_ip_must_be_integer_type():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, default_ip=qd.f32)
    assert "default_ip" in str(info.value) and "f32" in str(info.value)


def test_default_fp_must_be_a_type():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, default_fp="not_a_type")
    assert "default_fp" in str(info.value)


def test_ad_stack_size_negative():
    with pytest.raises((ValueError, TypeError)) as info:
        qd.init(arch=qd.cpu, ad_stack_size=-1)
    assert "ad_stack_size" in str(info.value)


def test_default_ad_stack_size_zero():
    with pytest.raises((ValueError, TypeError)) as info:
        qd.init(arch=qd.cpu, default_ad_stack_size=0)
    assert "default_ad_stack_size" in str(info.value)


def test_offline_cache_must_be_bool():
    with pytest.raises(TypeError) as info:
        qd.init(arch=qd.cpu, offline_cache="no")
    assert "offline_cache" in str(info.value)


def test_device_memory_fraction_out_of_range():
    with pytest.raises((ValueError, TypeError)) as info:
        qd.init(arch=qd.cpu, device_memory_fraction=1.5)
    assert "device_memory_fraction" in str(info.value)


def test_all_documented_options_are_accepted():
    qd.init(arch=qd.cpu, debug=False, check_out_of_bound=False, default_fp=qd.f32,
            default_ip=qd.i32, ad_stack_experimental_enabled=False, ad_stack_size=0,
            default_ad_stack_size=256, offline_cache=True, cfg_optimization=True,
            print_ir=False, cpu_max_num_threads=0, random_seed=0)
    _assert_session_works()


def test_invalid_arch_object():
    with pytest.raises(TypeError) as info:
        qd.init(arch="tpu")
    assert "tpu" in str(info.value)


# ---- archs -------------------------------------------------------------------------------

def test_arch_cpu_works():
    qd.init(arch=qd.cpu)
    _assert_session_works()


def test_arch_x64_is_cpu_and_works():
    assert qd.x64 == qd.cpu
    qd.init(arch=qd.x64)
    _assert_session_works()


def test_default_arch_works():
    qd.init()
    _assert_session_works()


@pytest.mark.parametrize("arch", [qd.cuda, qd.vulkan, qd.amdgpu, qd.metal],
                         ids=lambda a: a.name)
def test_unavailable_arch_is_clear_error(arch):
    if runtime.is_arch_available(arch):
        pytest.skip(f"{arch.name} is available here")
    with pytest.raises(qd.QuadrantsError) as info:
        qd.init(arch=arch)
    message = str(info.value)
    assert re.search(r"\b" + arch.name + r"\b", message, re.IGNORECASE), message
    assert re.search(r"(?i)unavailable|not available", message), message
    # No silent CPU fallback: nothing was started.
    _assert_not_initialized()


def test_gpu_without_gpu_backend_is_clear_error():
    if any(runtime.is_arch_available(a) for a in (qd.cuda, qd.vulkan, qd.amdgpu, qd.metal)):
        pytest.skip("a GPU backend is available here")
    with pytest.raises(qd.QuadrantsError) as info:
        qd.init(arch=qd.gpu)
    assert re.search(r"(?i)\bgpu\b", str(info.value))
    assert re.search(r"(?i)no gpu|unavailable|not available", str(info.value))
    _assert_not_initialized()


def test_unavailable_arch_then_cpu_works():
    for arch in (qd.cuda, qd.vulkan, qd.amdgpu, qd.metal):
        if not runtime.is_arch_available(arch):
            with pytest.raises(qd.QuadrantsError):
                qd.init(arch=arch)
    qd.init(arch=qd.cpu)
    _assert_session_works()


# ---- using Quadrants before qd.init ---------------------------------------------------------

def test_field_before_init():
    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        qd.field(qd.f32, shape=4)


def test_ndarray_before_init():
    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        qd.ndarray(qd.f32, 4)


def test_root_dense_before_init():
    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        qd.root.dense(qd.i, 4)


def test_sync_before_init():
    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        qd.sync()


def test_kernel_launch_before_init():
    @qd.kernel
    def no_session_kernel(v: qd.i32):
        pass

    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        no_session_kernel(1)


def test_field_after_reset():
    qd.init(arch=qd.cpu)
    qd.field(qd.f32, shape=4)
    qd.reset()
    with pytest.raises(qd.QuadrantsError, match=r"qd\.init"):
        qd.field(qd.f32, shape=4)


# ---- objects of an earlier session -----------------------------------------------------------

def test_field_from_previous_session_read():
    qd.init(arch=qd.cpu)
    x = qd.field(qd.f32, shape=4, name="old_field_x")
    x[0] = 1.0
    qd.reset()
    qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsError) as info:
        x[0]  # pylint: disable=pointless-statement
    assert "old_field_x" in str(info.value)
    assert re.search(r"(?i)reset|session", str(info.value))


def test_field_from_previous_session_write_and_to_numpy():
    qd.init(arch=qd.cpu)
    x = qd.field(qd.f32, shape=4)
    qd.init(arch=qd.cpu)   # re-init without an explicit reset
    with pytest.raises(qd.QuadrantsError):
        x[0] = 1.0
    with pytest.raises(qd.QuadrantsError):
        x.to_numpy()
    with pytest.raises(qd.QuadrantsError):
        x.fill(0.0)


def test_field_from_previous_session_in_kernel():
    qd.init(arch=qd.cpu)
    x = qd.field(qd.i32, shape=4, name="stale_in_kernel")
    fill = _fill_kernel(x)
    fill()
    qd.reset()
    qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsError) as info:
        fill()
    assert "stale_in_kernel" in str(info.value)


def test_unplaced_field_from_previous_session():
    qd.init(arch=qd.cpu)
    x = qd.field(qd.f32)
    qd.reset()
    qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsError):
        qd.root.dense(qd.i, 4).place(x)


def test_ndarray_from_previous_session():
    qd.init(arch=qd.cpu)
    a = qd.ndarray(qd.f32, 4)
    qd.reset()
    qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsError):
        a[0]  # pylint: disable=pointless-statement
    with pytest.raises(qd.QuadrantsError):
        a.to_numpy()


def test_ndarray_from_previous_session_passed_to_kernel():
    @qd.kernel
    def write_array(arr: qd.types.ndarray(qd.f32, 1)):
        for i in range(arr.shape[0]):
            arr[i] = 1.0

    qd.init(arch=qd.cpu)
    a = qd.ndarray(qd.f32, 4)
    write_array(a)
    qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsError):
        write_array(a)


# ---- re-initialization ------------------------------------------------------------------------

def test_init_twice_works():
    qd.init(arch=qd.cpu)
    _assert_session_works()
    qd.init(arch=qd.cpu)
    _assert_session_works()


def test_kernel_recompiles_for_new_session():
    @qd.kernel
    def add_one(arr: qd.types.ndarray(qd.i32, 1)):
        for i in range(arr.shape[0]):
            arr[i] += 1

    a = np.zeros(4, dtype=np.int32)
    qd.init(arch=qd.cpu)
    add_one(a)
    qd.init(arch=qd.cpu)
    add_one(a)
    np.testing.assert_array_equal(a, [2, 2, 2, 2])


def test_init_twice_resets_options():
    x_holder = {}

    def make():
        x = qd.field(qd.i32, shape=4)
        x_holder["x"] = x

        @qd.kernel
        def check_small():
            for i in x:
                assert x[i] < 0, "value not negative"
        return check_small

    qd.init(arch=qd.cpu, debug=True)
    check = make()
    with pytest.raises(qd.QuadrantsAssertionError):
        check()
        qd.sync()
    # A new init without debug=True: the option goes back to its default and the
    # (failing) assert is not checked any more.
    qd.init(arch=qd.cpu)
    check = make()
    check()
    qd.sync()


# ---- option effects ---------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_max_num_threads_is_accepted(threads):
    qd.init(arch=qd.cpu, cpu_max_num_threads=threads)
    x = qd.field(qd.i64, shape=())

    @qd.kernel
    def total(n: qd.i32):
        for i in range(n):
            x[None] += i

    total(10000)
    assert x[None] == 10000 * 9999 // 2


def _store_literal_via_local(default_fp):
    if default_fp is None:
        qd.init(arch=qd.cpu)
    else:
        qd.init(arch=qd.cpu, default_fp=default_fp)
    h = qd.field(qd.f64, shape=())

    @qd.kernel
    def store_tenth():
        for _ in range(1):
            t = 0.1          # the literal takes the default float type
            h[None] = t

    store_tenth()
    return h[None]


def test_default_fp_f64_float_literals_are_double():
    assert _store_literal_via_local(qd.f64) == 0.1


def test_default_fp_f32_float_literals_are_single():
    value = _store_literal_via_local(None)
    assert value != 0.1
    assert value == float(np.float32(0.1))


def test_default_fp_f64_division():
    qd.init(arch=qd.cpu, default_fp=qd.f64)
    h = qd.field(qd.f64, shape=())

    @qd.kernel
    def third():
        for _ in range(1):
            t = 1.0
            h[None] = t / 3

    third()
    assert h[None] == 1.0 / 3.0


def test_default_fp_is_reset_by_next_init():
    assert _store_literal_via_local(qd.f64) == 0.1
    assert _store_literal_via_local(None) == float(np.float32(0.1))


def _i32_max_plus_one():
    """What a kernel stores for the literal 2^31 - 1 plus one: 2^31 when
    literals take 64-bit integers."""
    h = qd.field(qd.i64, shape=())

    @qd.kernel
    def overflow_i32():
        for _ in range(1):
            t = 2147483647
            t += 1
            h[None] = t

    overflow_i32()
    return h[None]


def test_default_ip_i64_int_literals_are_64_bit():
    qd.init(arch=qd.cpu, default_ip=qd.i64)
    assert _i32_max_plus_one() == 2 ** 31


def test_runtime_default_types_can_be_assigned_as_upstream_does():
    qd.init(arch=qd.cpu)
    impl.get_runtime().default_ip = qd.i64
    impl.get_runtime().default_fp = qd.f64
    assert impl.get_runtime().default_ip == qd.i64
    assert impl.get_runtime().default_fp == qd.f64
    assert _i32_max_plus_one() == 2 ** 31


# ---- the harness itself ----------------------------------------------------------------------

@test_utils.test()
def test_harness_session_is_initialized():
    assert runtime.is_initialized()
    _assert_session_works()


def test_init_test_mode_resolves_options_without_starting():
    qd.reset()
    resolved = qd.init(_test_mode=True, debug=True, log_level="warn")
    assert resolved.debug is True and resolved.log_level == "warn"
    assert resolved.check_out_of_bound is False  # a default
    assert not qd.lang.runtime.is_initialized()  # nothing started
    with pytest.raises(qd.lang.options.UnknownOptionError, match="foo_bar"):
        qd.init(_test_mode=True, foo_bar=233)
