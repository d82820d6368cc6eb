"""The option registry (quadrants.lang.options, declared in
quadrants/common/options.def): qd.init defaults, environment overrides and
their precedence, and values the registry rejects.

These tests manage qd.init() / qd.reset() themselves on the CPU; every
QD_* variable the library reads is cleared first, so settings of the
suite's own run (QD_CPU_SIMD, QD_VALIDATE_SPIRV) do not leak in.
"""
import os

import pytest

import quadrants as qd
from quadrants._core import core
from quadrants.lang import impl, options, runtime
from quadrants.lang import types as qd_types


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for spec in options.SPECS:
        if spec.env.startswith("QD_") and spec.scope != "tool":
            monkeypatch.delenv(spec.env, raising=False)
    qd.reset()
    yield
    qd.reset()


def _cfg(**arguments):
    qd.init(arch=qd.cpu, **arguments)
    return impl.current_cfg()


# ---- declarations ------------------------------------------------------------------------

def test_qd_init_takes_exactly_the_declared_options():
    ours = {
        "debug", "check_out_of_bound", "default_fp", "default_ip",
        "ad_stack_experimental_enabled", "ad_stack_size", "default_ad_stack_size",
        "offline_cache", "offline_cache_file_path", "cfg_optimization", "print_ir",
        "cpu_max_num_threads", "cpu_simd", "random_seed", "device_memory_GB",
        "device_memory_fraction", "device_id", "ad_stack_max_bytes",
        "ad_stack_segment_length", "sparse_pool_mb"}
    # The rest of upstream's (test_upstream_compat_modules.py checks each).
    upstream = {
        "log_level", "enable_fallback", "require_version", "print_non_pure", "src_ll_cache",
        "gdb_trigger", "short_circuit_operators", "print_full_traceback", "unrolling_limit",
        "opt_level", "raise_on_templated_floats", "print_preprocessed_ir", "print_ir_dbg_info",
        "print_accessor_ir", "use_llvm", "print_struct_llvm_ir", "print_kernel_llvm_ir",
        "print_kernel_llvm_ir_optimized", "print_kernel_asm", "print_kernel_amdgcn",
        "debug_dump_path", "simplify_before_lower_access", "simplify_after_lower_access",
        "lower_access", "move_loop_invariant_outside_if", "cache_loop_invariant_global_vars",
        "default_cpu_block_dim", "cpu_block_dim_adaptive", "default_gpu_block_dim",
        "gpu_max_reg", "saturating_grid_dim", "max_block_dim", "verbose_kernel_launches",
        "verbose", "demote_dense_struct_fors", "kernel_profiler", "timeline", "fast_math",
        "advanced_optimization", "ad_stack_sparse_threshold_bytes", "flatten_if",
        "make_thread_local", "make_block_local", "detect_read_only", "real_matrix_scalarize",
        "force_scalarize_matrix", "half2_vectorization", "make_cpu_multithreading_loop",
        "quant_opt_store_fusion", "quant_opt_atomic_demotion", "make_mesh_block_local",
        "mesh_localize_to_end_mapping", "mesh_localize_from_end_mapping",
        "optimize_mesh_reordered_mapping", "mesh_localize_all_attr_mappings",
        "demote_no_access_mesh_fors", "experimental_auto_mesh_local",
        "auto_mesh_local_default_occupacy", "offline_cache_cleaning_policy",
        "offline_cache_max_size_of_files", "offline_cache_cleaning_factor",
        "num_compile_threads", "vk_api_version", "cuda_stack_limit",
        "external_metal_command_queue", "external_metal_command_queue_is_torch_queue"}
    assert set(options.INIT_OPTIONS) == ours | upstream


def test_every_variable_of_the_library_is_declared():
    names = options.declared_env_names()
    for env in ("QD_CPU_SIMD", "QD_OFFLINE_CACHE", "QD_LOG_LEVEL", "QD_DUMP_IR", "QD_DUMP_IR_DIR",
                "QD_VULKAN_SIZER", "QD_AMDGPU_CODEGEN_ONLY", "QD_WANTED_ARCHS", "CUDA_HOME"):
        assert env in names


def test_specs_describe_type_default_and_accepted_values():
    simd = options.BY_NAME["cpu_simd"]
    assert (simd.env, simd.type, simd.default, simd.scope) == ("QD_CPU_SIMD", "bool", True, "init")
    assert simd.choices == (("0", "scalar CPU tasks"), ("1", "SIMD lanes"))
    sizer = options.BY_NAME["vulkan_sizer"]
    assert (sizer.type, sizer.default, sizer.choice_values) == ("enum", "auto",
                                                                ["auto", "shader", "host"])
    assert options.BY_NAME["default_fp"].default == qd.f32
    assert options.BY_NAME["device_memory_GB"].default is None
    assert options.BY_NAME["ad_stack_size"].check == "non_negative"
    assert all(spec.doc for spec in options.SPECS)


# ---- defaults and environment overrides -----------------------------------------------

def test_defaults_are_the_declared_ones():
    cfg = _cfg()
    for name, spec in options.INIT_OPTIONS.items():
        assert getattr(cfg, name) == spec.default, name
    assert runtime.state.config.default_ad_stack_size == 256


def test_a_variable_sets_the_default_and_an_argument_wins(monkeypatch):
    monkeypatch.setenv("QD_CPU_SIMD", "0")
    assert _cfg().cpu_simd is False
    assert _cfg(cpu_simd=True).cpu_simd is True
    monkeypatch.setenv("QD_CPU_SIMD", " 1 ")
    assert _cfg().cpu_simd is True
    monkeypatch.setenv("QD_CPU_SIMD", "")  # empty is unset
    assert _cfg().cpu_simd is True


def test_offline_cache_variable_only_turns_the_cache_off(monkeypatch, tmp_path):
    path = str(tmp_path)
    monkeypatch.setenv("QD_OFFLINE_CACHE", "0")
    assert _cfg(offline_cache=True, offline_cache_file_path=path).offline_cache is False
    monkeypatch.setenv("QD_OFFLINE_CACHE", "1")
    assert _cfg(offline_cache=False).offline_cache is False
    assert _cfg(offline_cache_file_path=path).offline_cache is True


def test_env_value_reads_as_declared(monkeypatch):
    assert options.env_value("amdgpu_codegen_only") is None
    monkeypatch.setenv("QD_AMDGPU_CODEGEN_ONLY", " gfx90a, ,gfx942")
    assert options.env_value("amdgpu_codegen_only") == ["gfx90a", "gfx942"]
    monkeypatch.setenv("QD_LOG_LEVEL", "info")
    assert options.env_value("log_level") == "info"
    monkeypatch.setenv("QD_DUMP_IR_DIR", "/some/dir")
    assert options.env_value("dump_ir_dir") == "/some/dir"


# ---- invalid values ------------------------------------------------------------------------

@pytest.mark.parametrize("env,value,accepted", [
    ("QD_CPU_SIMD", "2", "0 (scalar CPU tasks) or 1 (SIMD lanes)"),
    ("QD_OFFLINE_CACHE", "no", "0 (no offline cache) or 1 (as qd.init asks)"),
    ("QD_DUMP_IR", "yes", "0 (off) or 1 (on)"),
    ("QD_LOG_LEVEL", "verbose", "debug (everything), info ("),
    ("QD_VULKAN_SIZER", "device", "auto ("),
])
def test_a_rejected_value_names_variable_value_and_accepted_values(monkeypatch, env, value,
                                                                     accepted):
    monkeypatch.setenv(env, value)
    with pytest.raises(options.InvalidEnvironmentError) as info:
        qd.init(arch=qd.cpu)
    message = str(info.value)
    assert message.startswith(f"qd.init(): {env}='{value}': {env} must be "), message
    assert accepted in message and message.endswith(f"got '{value}'"), message
    # Both a ValueError (as upstream reports bad QD_* values) and a QuadrantsError.
    assert isinstance(info.value, ValueError) and isinstance(info.value, qd.QuadrantsError)
    assert not runtime.is_initialized()


def test_an_argument_does_not_hide_a_rejected_variable(monkeypatch):
    monkeypatch.setenv("QD_CPU_SIMD", "off")
    with pytest.raises(ValueError, match="QD_CPU_SIMD='off'"):
        qd.init(arch=qd.cpu, cpu_simd=True)


def test_variables_of_tools_are_not_checked_at_init(monkeypatch):
    monkeypatch.setenv("QD_WANTED_ARCHS", "tpu")
    qd.init(arch=qd.cpu)
    with pytest.raises(options.InvalidEnvironmentError, match="QD_WANTED_ARCHS='tpu'"):
        options.env_value("wanted_archs")


def test_argument_errors_keep_their_types():
    with pytest.raises(TypeError, match="unknown option 'nope'"):
        qd.init(arch=qd.cpu, nope=1)
    with pytest.raises(qd.QuadrantsTypeError, match="cpu_simd must be bool"):
        qd.init(arch=qd.cpu, cpu_simd="yes")
    with pytest.raises(qd.QuadrantsTypeError, match="ad_stack_size must be an int"):
        qd.init(arch=qd.cpu, ad_stack_size=True)
    with pytest.raises(ValueError, match=r"device_memory_fraction must be in \(0, 1\]"):
        qd.init(arch=qd.cpu, device_memory_fraction=0)
    with pytest.raises(qd.QuadrantsTypeError, match="default_ip must be an? integer type"):
        qd.init(arch=qd.cpu, default_ip=qd.u1)


def test_every_option_the_core_holds_reaches_it_from_qd_init(tmp_path):
    """The core's CompileConfig members are the options options.def marks
    for it; qd.init sets each by its name, whatever its type."""
    fields = set(core.CompileConfig.option_fields)
    specs = {s.name: s for s in options.SPECS}
    assert fields <= {name for name, s in specs.items() if s.is_init_option}
    assert {"debug", "default_fp", "ad_stack_max_bytes", "sparse_pool_mb"} <= fields
    given = dict(check_out_of_bound=True, default_fp=qd.f64, default_ip=qd.i64,
                 ad_stack_experimental_enabled=True, ad_stack_size=7,
                 ad_stack_max_bytes=12345, ad_stack_segment_length=3,
                 default_ad_stack_size=17, offline_cache_file_path=str(tmp_path),
                 print_ir=False, cpu_max_num_threads=3, cpu_simd=False,
                 random_seed=-5, device_memory_GB=1.5, device_memory_fraction=0.25,
                 sparse_pool_mb=8.0, ad_stack_sparse_threshold_bytes=99)
    qd.init(arch=qd.cpu, **given)
    try:
        config = runtime.state.config
        for name, value in given.items():
            want = value.name if isinstance(value, qd_types.DataType) else value
            assert getattr(config, name) == want, name
        # Options left alone hold their declared defaults.
        assert config.debug is False
        assert config.device_id == 0
    finally:
        qd.reset()


def test_variables_are_read_from_os_environ_even_when_it_is_replaced(monkeypatch):
    # Code that swaps os.environ for a plain dict (as upstream's tests do)
    # sets options through it; the process environment is not consulted.
    swapped = dict(os.environ, QD_DEBUG="1", QD_ADVANCED_OPTIMIZATION="0")
    monkeypatch.setattr(os, "environ", swapped)
    qd.init(arch=qd.cpu)
    assert impl.current_cfg().debug is True
    assert impl.current_cfg().advanced_optimization is False
    qd.reset()
    swapped["QD_DEBUG"] = "maybe"
    with pytest.raises(options.InvalidEnvironmentError, match="QD_DEBUG"):
        qd.init(arch=qd.cpu)


def test_upstream_lib_utils_report_version_and_cache_directory(monkeypatch, tmp_path):
    core_queries = qd._lib.utils.import_qd_python_core()
    version = ".".join(str(f()) for f in (core_queries.get_version_major,
                                         core_queries.get_version_minor,
                                         core_queries.get_version_patch))
    assert version == qd.__version__
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert core_queries.get_repo_dir() == str(tmp_path / "quadrants")
