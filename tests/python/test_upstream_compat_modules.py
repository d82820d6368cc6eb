"""Modules, options and helpers upstream code imports: quadrants.math,
quadrants.types (enums, primitive_types), quadrants.lang.impl / util /
exception / misc, qd.extension, upstream's qd.init options, the logging
levels and the test harness's upstream helpers.

Tests that build kernels run on cpu and vulkan; the others manage their own
session on the CPU (an autouse fixture resets after each).
"""
import os

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import impl, misc, options, runtime
from tests import test_utils

ARCHS = [qd.cpu, qd.vulkan]

# Every qd.init keyword upstream takes (its CompileConfig attributes and the
# options its Python front end reads), with a value other than its default.
UPSTREAM_OPTIONS = {
    "opt_level": 0, "raise_on_templated_floats": False, "print_ir": False,
    "print_preprocessed_ir": True, "print_ir_dbg_info": True, "debug": True,
    "cfg_optimization": False, "check_out_of_bound": True, "print_accessor_ir": True,
    "use_llvm": False, "print_struct_llvm_ir": True, "print_kernel_llvm_ir": True,
    "print_kernel_llvm_ir_optimized": True, "print_kernel_asm": True,
    "print_kernel_amdgcn": True, "debug_dump_path": "/tmp/qd_dump/",
    "simplify_before_lower_access": False, "simplify_after_lower_access": False,
    "lower_access": False, "move_loop_invariant_outside_if": True,
    "cache_loop_invariant_global_vars": False, "default_cpu_block_dim": 64,
    "cpu_block_dim_adaptive": False, "default_gpu_block_dim": 256, "gpu_max_reg": 32,
    "saturating_grid_dim": 8, "max_block_dim": 512, "cpu_max_num_threads": 2,
    "random_seed": 7, "verbose_kernel_launches": True, "verbose": False,
    "demote_dense_struct_fors": False, "kernel_profiler": True, "timeline": True,
    "default_fp": qd.f64, "default_ip": qd.i64, "device_memory_GB": 2.0,
    "device_memory_fraction": 0.5, "fast_math": False, "advanced_optimization": False,
    "ad_stack_experimental_enabled": True, "ad_stack_size": 32,
    "ad_stack_sparse_threshold_bytes": 0, "flatten_if": True, "make_thread_local": False,
    "make_block_local": False, "detect_read_only": False, "real_matrix_scalarize": False,
    "force_scalarize_matrix": True, "half2_vectorization": True,
    "make_cpu_multithreading_loop": False, "quant_opt_store_fusion": False,
    "quant_opt_atomic_demotion": False, "make_mesh_block_local": False,
    "mesh_localize_to_end_mapping": False, "mesh_localize_from_end_mapping": True,
    "optimize_mesh_reordered_mapping": False, "mesh_localize_all_attr_mappings": True,
    "demote_no_access_mesh_fors": False, "experimental_auto_mesh_local": True,
    "auto_mesh_local_default_occupacy": 2, "offline_cache": False,
    "offline_cache_cleaning_policy": "never", "offline_cache_max_size_of_files": 1 << 20,
    "offline_cache_cleaning_factor": 0.5, "num_compile_threads": 1,
    "vk_api_version": "1.3.0", "cuda_stack_limit": 32768,
    "external_metal_command_queue": 0x1234, "external_metal_command_queue_is_torch_queue": True,
    # Upstream's Python-side options.
    "enable_fallback": True, "require_version": "0.1.0", "print_non_pure": True,
    "src_ll_cache": False, "log_level": "error", "gdb_trigger": True,
    "short_circuit_operators": False, "print_full_traceback": True, "unrolling_limit": 4,
}


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for spec in options.SPECS:
        if spec.env.startswith("QD_") and spec.scope != "tool":
            monkeypatch.delenv(spec.env, raising=False)
    qd.reset()
    yield
    qd.reset()
    qd.set_logging_level("warning")


# ---- importable modules ----------------------------------------------------------------

def test_quadrants_math_is_qd_math():
    import quadrants.math as qm  # pylint: disable=import-outside-toplevel
    from quadrants.math import mat3, pi, vec3  # pylint: disable=import-outside-toplevel
    assert qm.vec3 is vec3 is qd.math.vec3 and mat3 is qd.math.mat3
    assert pi == pytest.approx(np.pi)
    assert qd.math.clamp(5.0, 0.0, 1.0) == 1.0  # qd.math still works after the import


def test_quadrants_types_keeps_qd_types_and_adds_upstream_submodules():
    import quadrants.types  # pylint: disable=import-outside-toplevel
    from quadrants.types import primitive_types  # pylint: disable=import-outside-toplevel
    from quadrants.types.annotations import template  # pylint: disable=import-outside-toplevel
    # pylint: disable-next=import-outside-toplevel
    from quadrants.types.enums import AutodiffMode, Format, Layout, SNodeGradType
    assert qd.types is quadrants.types
    assert qd.types.ndarray is qd.lang.types.ndarray and qd.types.NDArray is qd.lang.types.NDArray
    assert qd.types.template is template is qd.template
    assert qd.types.vector is qd.lang.matrix.vector and qd.types.struct is qd.lang.struct.struct
    assert qd.types.is_integral(qd.i32) and not qd.types.is_integral(qd.f32)
    assert qd.types.is_real(qd.f16) and not qd.types.is_signed(qd.u8)
    assert qd.types.is_tensor(qd.types.matrix(2, 2, qd.f32)) and not qd.types.is_tensor(qd.f32)
    assert Layout is qd.Layout and {Layout.AOS, Layout.SOA} == {"aos", "soa"}
    assert {m.name for m in SNodeGradType} == {"PRIMAL", "ADJOINT", "DUAL", "ADJOINT_CHECKBIT"}
    assert {m.name for m in AutodiffMode} == {"NONE", "VALIDATION", "FORWARD", "REVERSE"}
    assert Format.rgba32f in Format and Format["r8"].name == "r8"
    pairs = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8",
             "int16": "i16", "int32": "i32", "int64": "i64", "uint1": "u1", "uint8": "u8",
             "uint16": "u16", "uint32": "u32", "uint64": "u64"}
    for alias, short in pairs.items():
        assert getattr(primitive_types, alias) is getattr(qd, short) is getattr(qd, alias)
        assert id(getattr(qd, short)) in primitive_types.type_ids
    assert primitive_types.real_types == {qd.f16, qd.f32, qd.f64, float}
    assert bool in primitive_types.integer_types and qd.u1 in primitive_types.all_types


@test_utils.test(arch=ARCHS)
def test_upstream_type_names_annotate_kernels():
    from quadrants.types import primitive_types as pt  # pylint: disable=import-outside-toplevel

    @qd.kernel
    def scale(a: pt.float32, x: qd.types.ndarray(pt.int32, 1), out: qd.types.ndarray(pt.f32, 1)):
        for i in x:
            out[i] = a * x[i]

    out = np.zeros(4, np.float32)
    scale(0.5, np.arange(4, dtype=np.int32), out)
    np.testing.assert_array_equal(out, [0.0, 0.5, 1.0, 1.5])


def test_exception_module_has_upstream_names():
    from quadrants.lang import exception as ex  # pylint: disable=import-outside-toplevel
    assert issubclass(ex.QuadrantsNameError, ex.QuadrantsCompilationError)
    assert issubclass(ex.QuadrantsNameError, NameError)
    assert issubclass(ex.QuadrantsIndexError, IndexError)
    assert issubclass(ex.QuadrantsRuntimeTypeError, ex.QuadrantsRuntimeError)
    assert issubclass(ex.QuadrantsRuntimeTypeError, TypeError)
    assert issubclass(ex.QuadrantsAssertionError, AssertionError)
    assert issubclass(ex.QuadrantsSyntaxError, SyntaxError)
    error = ex.QuadrantsRuntimeTypeError.get(1, "f32", "str")
    assert isinstance(error, ex.QuadrantsRuntimeTypeError)
    assert str(error) == "Argument 1 (type=str) cannot be converted into required type f32"
    assert "Return (type=i32)" in str(ex.QuadrantsRuntimeTypeError.get_ret("f32", "i32"))
    assert qd.QuadrantsNameError is ex.QuadrantsNameError
    assert set(ex.__all__) >= {"QuadrantsSyntaxError", "QuadrantsTypeError",
                               "QuadrantsCompilationError", "QuadrantsNameError",
                               "QuadrantsRuntimeError", "QuadrantsRuntimeTypeError",
                               "QuadrantsAssertionError"}


def test_util_helpers(monkeypatch):
    from quadrants.lang import util  # pylint: disable=import-outside-toplevel
    try:
        import torch  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
        importable = True
    except ImportError:
        importable = False
    assert util.has_pytorch() is importable
    monkeypatch.setenv("QD_ENABLE_TORCH", "0")
    assert util.has_pytorch() is False
    assert util.to_numpy_type(qd.f32) is np.float32 and util.to_numpy_type(qd.u1) is np.bool_
    assert util.to_quadrants_type(np.int16) is qd.i16 and util.to_quadrants_type(qd.f64) is qd.f64
    assert util.has_clangpp() is (util.get_clangpp() is not None)
    assert util.in_python_scope() and not util.in_quadrants_scope()

    qd.init(arch=qd.cpu)
    out = qd.field(qd.i32, shape=())

    @qd.kernel
    def probe():
        out[None] = qd.static(1 if util.in_quadrants_scope() else 2)

    probe()
    assert out[None] == 1


def test_get_host_arch_list():
    assert misc.get_host_arch_list() == [qd.cpu]


# ---- impl: current_cfg, qd.cfg, get_runtime ---------------------------------------------

def test_every_upstream_option_is_accepted_and_read_back():
    qd.init(arch=qd.cpu, **UPSTREAM_OPTIONS)
    cfg = impl.current_cfg()
    for name, value in UPSTREAM_OPTIONS.items():
        assert getattr(cfg, name) == value, name
    assert cfg.arch == qd.cpu and qd.cfg.fast_math is False


def test_qd_cfg_is_none_before_init():
    assert qd.cfg is None
    qd.init(arch=qd.cpu)
    assert qd.cfg.arch == qd.cpu and qd.cfg.offline_cache is True


@test_utils.test(arch=ARCHS, default_fp=qd.f32)
def test_get_runtime_counts_compiled_kernels():
    rt = impl.get_runtime()
    assert rt.prog._program is runtime.program() and rt.default_fp == qd.f32
    assert rt._arch == runtime.state.arch  # pylint: disable=protected-access
    assert rt.get_num_compiled_functions() == 0
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    y = qd.field(qd.f32, shape=4, needs_grad=True)
    rt.materialize()

    @qd.kernel
    def fill(v: qd.template()):
        for i in x:
            y[i] = x[i] * v

    fill(2.0)
    fill(2.0)
    assert rt.get_num_compiled_functions() == 1
    fill(3)  # another template value: another variant
    assert rt.get_num_compiled_functions() == 2
    fill.grad(2.0)
    assert rt.get_num_compiled_functions() == 3


# ---- qd.extension ------------------------------------------------------------------------

def test_extension_members():
    assert {qd.extension.sparse, qd.extension.quant, qd.extension.mesh,
            qd.extension.quant_basic, qd.extension.data64, qd.extension.adstack,
            qd.extension.bls, qd.extension.assertion, qd.extension.extfunc} <= misc.ALL_EXTENSIONS
    with pytest.raises(qd.QuadrantsTypeError, match="qd.extension member"):
        qd.is_extension_supported(qd.cpu, "rtx")
    with pytest.raises(qd.QuadrantsTypeError, match="arch must be"):
        qd.is_extension_supported("tpu", qd.extension.data64)


@pytest.mark.parametrize("arch", ARCHS + [qd.cuda, qd.amdgpu, qd.metal], ids=lambda a: a.name)
def test_extension_support_per_backend(arch):
    unsupported = ["quant", "quant_basic", "mesh", "bls", "extfunc"]
    for ext in unsupported:
        assert not qd.is_extension_supported(arch, getattr(qd.extension, ext)), ext
    # Sparse SNodes are lowered by the LLVM backends that run here.
    assert qd.is_extension_supported(arch, qd.extension.sparse) is (arch in (qd.cpu, qd.cuda))
    has_backend = arch != qd.metal  # Metal only generates MSL in this build
    for ext in ("adstack", "data64", "assertion"):
        assert qd.is_extension_supported(arch, getattr(qd.extension, ext)) is has_backend
    assert qd.is_extension_supported(arch, qd.extension.graph) is (arch == qd.cuda)
    assert qd.is_extension_supported(arch, qd.extension.device_reducer) is \
        (arch in (qd.cuda, qd.amdgpu, qd.vulkan))


@test_utils.test(arch=ARCHS, debug=True, require=qd.extension.assertion)
def test_assertion_extension_is_truthful():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def check():
        for i in x:
            assert x[i] == 1, "x must hold ones"

    with pytest.raises(qd.QuadrantsAssertionError, match="x must hold ones"):
        check()
        qd.sync()


def test_require_of_unsupported_extensions_skips():
    ran = []

    def body():
        ran.append(1)

    for ext in (qd.extension.quant, qd.extension.mesh):
        wrapped = test_utils.test(arch=qd.cpu, require=ext)(body)
        with pytest.raises(pytest.skip.Exception, match=f"does not support extension {ext}"):
            wrapped(qd.cpu)
    assert not ran


@test_utils.test(arch=ARCHS, exclude=[qd.cpu, qd.cuda])
def test_sparse_snode_builders_say_the_extension_is_unsupported():
    # pointer/bitmasked/dynamic exist as upstream names them, and refuse
    # where the arch lacks them with the extension's name rather than an
    # AttributeError.
    for build in (lambda: qd.root.pointer(qd.ij, 4),
                  lambda: qd.root.dense(qd.i, 4).bitmasked(qd.j, 8),
                  lambda: qd.root.dynamic(qd.i, 1024, chunk_size=32)):
        with pytest.raises(qd.QuadrantsRuntimeError,
                           match=r"SNodes need qd\.extension\.sparse.*dense\(\) here"):
            build()
    assert not qd.is_extension_supported(impl.current_cfg().arch, qd.extension.sparse)
    x = qd.field(qd.f32, shape=4)  # dense layouts still build afterwards
    x[1] = 2.0
    assert x.to_numpy().tolist() == [0.0, 2.0, 0.0, 0.0]


@test_utils.test(arch=ARCHS)
def test_rescale_index_maps_grouped_indices_between_grids():
    fine = qd.field(qd.f32, shape=(16, 12))
    coarse = qd.field(qd.f32, shape=(4, 3))
    back = qd.field(qd.f32, shape=(16, 12))
    layered = qd.field(qd.i32)
    level = qd.root.dense(qd.i, 6)
    level.dense(qd.j, 5).place(layered)

    @qd.kernel
    def pool_and_spread():
        for I in qd.grouped(fine):
            coarse[qd.rescale_index(fine, coarse, I)] += fine[I]
        for J in qd.grouped(coarse):
            base = qd.rescale_index(coarse, back, J)  # the block's first fine cell
            back[base] = coarse[J]

    values = np.arange(16 * 12, dtype=np.float32).reshape(16, 12)
    fine.from_numpy(values)
    pool_and_spread()
    np.testing.assert_array_equal(coarse.to_numpy(),
                                  values.reshape(4, 4, 3, 4).sum(axis=(1, 3)))
    spread = np.zeros((16, 12), np.float32)
    spread[::4, ::4] = coarse.to_numpy()
    np.testing.assert_array_equal(back.to_numpy(), spread)
    # In Python scope, against SNodes: equal extents keep the index.
    assert list(qd.rescale_index(fine, coarse, [13, 7])) == [3, 1]
    assert layered.shape == (6, 5) and layered.snode.shape == (6, 5)
    assert layered.snode.parent().shape == (6, 5)
    assert layered.snode.parent(2) == level and level.shape == (6,)
    assert layered.snode.parent(3) is qd.root and layered.snode.parent(4) is None
    assert list(qd.rescale_index(layered, level, [5, 4])) == [5, 4]
    with pytest.raises(qd.QuadrantsTypeError, match="rescale_index.*index must be"):
        qd.rescale_index(fine, coarse, 3)
    with pytest.raises(qd.QuadrantsTypeError, match="rescale_index.*second argument"):
        qd.rescale_index(fine, np.zeros(3), [1, 2])


@test_utils.test(arch=ARCHS, require=qd.extension.adstack)
def test_require_adstack_turns_it_on():
    assert impl.current_cfg().ad_stack_experimental_enabled is True
    assert misc.is_extension_enabled(qd.extension.adstack)
    assert misc.is_extension_enabled(qd.extension.data64)
    assert misc.is_extension_enabled(qd.extension.sparse) is \
        (impl.current_cfg().arch in (qd.cpu, qd.cuda))


# ---- options that act, and values that are refused --------------------------------------

def test_unknown_options_and_default_up_are_key_and_type_errors():
    for name, says in (("default_up", "set default_ip instead"),
                       ("not_an_option", "unknown option 'not_an_option'")):
        with pytest.raises(KeyError, match=says) as info:
            qd.init(arch=qd.cpu, **{name: qd.u32})
        assert isinstance(info.value, TypeError) and isinstance(info.value, qd.QuadrantsError)
        assert not runtime.is_initialized()


def test_raise_on_templated_floats_refuses_baking_floats_in(monkeypatch):
    scale = 0.5

    @qd.kernel
    def by_template(s: qd.template(), out: qd.types.ndarray(qd.f32, ndim=1)):
        out[0] = s

    @qd.kernel
    def by_global(out: qd.types.ndarray(qd.f32, ndim=1)):
        out[0] = scale

    @qd.data_oriented
    class Params:
        def __init__(self):
            self.gain, self.steps = 2.5, 3

    out = np.zeros(1, np.float32)
    for refuse in (False, True):
        monkeypatch.setenv("QD_RAISE_ON_TEMPLATED_FLOATS", "1" if refuse else "0")
        qd.init(arch=qd.cpu)
        assert impl.current_cfg().raise_on_templated_floats is refuse
        by_template(7, out)  # ints are fine either way
        assert out[0] == 7
        if not refuse:
            by_template(0.25, out)
            by_global(out)
            assert out[0] == 0.5
            continue
        with pytest.raises(ValueError, match="template argument s is a Python float"):
            by_template(0.25, out)
        with pytest.raises(ValueError, match=r"s.gain is a Python float"):
            by_template(Params(), out)
        with pytest.raises(qd.QuadrantsCompilationError, match="global 'scale' is a Python float"):
            by_global(out)


def test_upstream_variables_set_defaults_and_arguments_win(monkeypatch):
    monkeypatch.setenv("QD_FAST_MATH", "0")
    monkeypatch.setenv("QD_OPT_LEVEL", "2")
    monkeypatch.setenv("QD_DEBUG", "1")
    qd.init(arch=qd.cpu)
    cfg = impl.current_cfg()
    assert (cfg.fast_math, cfg.opt_level, cfg.debug) == (False, 2, True)
    qd.init(arch=qd.cpu, fast_math=True, debug=False)
    assert (impl.current_cfg().fast_math, impl.current_cfg().debug) == (True, False)
    monkeypatch.setenv("QD_OPT_LEVEL", "-1")
    with pytest.raises(options.InvalidEnvironmentError, match="QD_OPT_LEVEL='-1'"):
        qd.init(arch=qd.cpu)


def test_require_version():
    from quadrants import __version__  # pylint: disable=import-outside-toplevel
    major, minor = (int(p) for p in __version__.split(".")[:2])
    qd.init(arch=qd.cpu, require_version=f"{major}.{minor}")
    with pytest.raises(qd.QuadrantsRuntimeError, match="require_version"):
        qd.init(arch=qd.cpu, require_version=f"{major}.{minor + 1}.0")
    with pytest.raises(qd.QuadrantsRuntimeError, match="same major version"):
        qd.init(arch=qd.cpu, require_version=f"{major + 1}.0.0")
    with pytest.raises(ValueError, match="major.minor"):
        qd.init(arch=qd.cpu, require_version="latest")


def test_enable_fallback(capfd):
    # Metal kernels never run in this build, so qd.metal always falls back.
    with pytest.raises(qd.QuadrantsRuntimeError, match="arch metal is not available"):
        qd.init(arch=qd.metal)
    qd.init(arch=qd.metal, enable_fallback=True)
    assert impl.current_cfg().arch == qd.cpu and runtime.state.arch == qd.cpu
    assert "running on qd.cpu instead" in capfd.readouterr().err
    qd.init(arch=qd.metal, enable_fallback=True, log_level="error")
    assert "running on qd.cpu instead" not in capfd.readouterr().err


def test_make_cpu_multithreading_loop():
    qd.init(arch=qd.cpu, cpu_max_num_threads=2)
    assert runtime.program().num_cpu_threads == 2
    qd.init(arch=qd.cpu, cpu_max_num_threads=2, make_cpu_multithreading_loop=False)
    assert runtime.program().num_cpu_threads == 1
    x = qd.field(qd.i32, shape=1000)

    @qd.kernel
    def iota():
        for i in x:
            x[i] = i

    iota()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(1000))
    assert runtime.program().last_threads_used == 1


# ---- logging -----------------------------------------------------------------------------

def test_logging_levels():
    assert (qd.TRACE, qd.DEBUG, qd.INFO, qd.WARN, qd.ERROR, qd.CRITICAL) == \
        ("trace", "debug", "info", "warn", "error", "critical")
    qd.set_logging_level(qd.DEBUG)
    assert qd.is_logging_effective(qd.DEBUG) and not qd.is_logging_effective(qd.TRACE)
    qd.set_logging_level(qd.ERROR)
    assert not qd.is_logging_effective(qd.WARN) and qd.is_logging_effective(qd.CRITICAL)
    with pytest.raises(ValueError, match="logging level must be one of"):
        qd.set_logging_level("verbose")
    qd.init(arch=qd.cpu, log_level=qd.INFO)
    assert qd.is_logging_effective(qd.INFO) and not qd.is_logging_effective(qd.DEBUG)
    with pytest.raises(ValueError, match="log_level must be"):
        qd.init(arch=qd.cpu, log_level="loud")


def _compile_parallel_loop():
    x = qd.field(qd.f32, shape=64)

    @qd.kernel
    def double():
        for i in x:
            x[i] = x[i] * 2.0

    double()
    qd.sync()


def test_logging_level_filters_the_core_and_python_messages(capfd):
    from quadrants import _logging  # pylint: disable=import-outside-toplevel
    qd.init(arch=qd.cpu, offline_cache=False)  # a cached kernel would not be compiled
    capfd.readouterr()
    qd.set_logging_level(qd.DEBUG)
    _compile_parallel_loop()  # the CPU backend logs, per task, its lanes at debug
    _logging.info("python says {}", 42)
    err = capfd.readouterr().err
    assert "[quadrants D " in err and "python says 42" in err
    for level in (qd.WARN, qd.CRITICAL, "off"):
        qd.init(arch=qd.cpu, offline_cache=False)
        qd.set_logging_level(level)
        _compile_parallel_loop()
        _logging.info("python says {}", 43)
        err = capfd.readouterr().err
        assert "[quadrants D " not in err and "python says 43" not in err, level
    _logging.critical("still shown at critical")
    assert "still shown at critical" not in capfd.readouterr().err  # level is off
    qd.set_logging_level(qd.CRITICAL)
    _logging.critical("shown at critical")
    assert "shown at critical" in capfd.readouterr().err


# ---- test_utils helpers ---------------------------------------------------------------------

def test_expected_archs(monkeypatch):
    monkeypatch.setenv("QD_WANTED_ARCHS", "cpu")
    assert test_utils.expected_archs() == [qd.cpu]
    monkeypatch.setenv("QD_WANTED_ARCHS", "^cpu")
    assert qd.cpu not in test_utils.expected_archs()
    monkeypatch.setenv("QD_WANTED_ARCHS", "gpu")
    assert all(a in runtime.GPU_ARCHS and runtime.is_arch_available(a)
               for a in test_utils.expected_archs())
    monkeypatch.delenv("QD_WANTED_ARCHS")
    assert test_utils.expected_archs() == [a for a in runtime.ALL_ARCHS
                                          if runtime.is_arch_available(a)]


def test_exclude_takes_archs_and_platform_pairs():
    import platform  # pylint: disable=import-outside-toplevel
    excluded = test_utils._excluded  # pylint: disable=protected-access
    assert excluded(qd.cpu, [qd.cpu]) and excluded(qd.cpu, [(qd.cpu, platform.system())])
    assert excluded(qd.cpu, [(None, platform.system())])
    assert not excluded(qd.cpu, [(qd.cpu, "NoSuchOS")])
    assert not excluded(qd.cpu, [qd.vulkan, (qd.vulkan,)])


@test_utils.test(arch=ARCHS)
def test_tolerance_helpers():
    eps = test_utils.get_rel_eps()
    assert eps == (1e-6 if runtime.state.arch == qd.cpu else 1e-5)
    assert 1.0 + eps / 2 == test_utils.approx(1.0)
    assert 1.0 + eps * 4 != test_utils.approx(1.0)
    assert test_utils.allclose(np.array([1.0, 2.0]) * (1 + eps / 2), [1.0, 2.0])
    assert not test_utils.allclose(1.1, 1.0)
    assert test_utils.allclose(1.05, 1.0, rel=0.1)
    assert 1 == test_utils.approx(True) and 0 != test_utils.approx(True)
    assert float("nan") == test_utils.approx(float("nan"), nan_ok=True)
    test_utils.skip_if_f64_unsupported(qd.f32)  # never skips


def test_file_helpers(tmp_path):
    target = tmp_path / "a" / "b"
    test_utils.mkdir_p(str(target))
    test_utils.mkdir_p(str(target))  # an existing directory is fine
    with pytest.raises(OSError):
        test_utils.mkdir_p(test_utils.make_temp_file(dir=str(tmp_path)) + os.sep + "c")
    name = test_utils.make_temp_file(suffix=".txt", dir=str(target))
    assert name.endswith(".txt") and os.path.getsize(name) == 0


# ---- quadrants._test_tools ---------------------------------------------------------

@test_utils.test()
def test_test_tools_reinit_on_the_same_arch_and_load_kernels_from_strings():
    from quadrants._test_tools import qd_init_same_arch
    from quadrants._test_tools.load_kernel_string import load_kernel_from_string

    arch = runtime.state.options["arch"]
    qd_init_same_arch(debug=True)
    assert runtime.state.options["arch"] is arch and impl.current_cfg().debug is True
    source = ("import quadrants as qd\n\n"
              "@qd.kernel\n"
              "def triple(x: qd.i32) -> qd.i32:\n"
              "    return x * 3\n")
    with load_kernel_from_string(source, "triple") as triple:
        assert triple(14) == 42
    import sys
    assert "triple" not in sys.modules


def test_x64_and_arm64_name_the_cpu_backend():
    assert qd.x64 is qd.cpu and qd.arm64 is qd.cpu


def test_quadrants_lang_offers_the_package_names_and_lib_core_the_arch_helpers():
    from quadrants._lib import core  # pylint: disable=import-outside-toplevel
    from quadrants.lang import amdgpu, cpu, cuda, metal, ndrange, vulkan  # pylint: disable=import-outside-toplevel
    assert (cpu, cuda, vulkan, metal, amdgpu) == (qd.cpu, qd.cuda, qd.vulkan, qd.metal, qd.amdgpu)
    assert ndrange is qd.ndrange
    with pytest.raises(ImportError):
        from quadrants.lang import no_such_name  # noqa: F401 pylint: disable=import-outside-toplevel,unused-import
    assert core.arch_from_name("vulkan") is qd.vulkan
    with pytest.raises(ValueError, match="unknown arch 'tpu'"):
        core.arch_from_name("tpu")
    assert core.is_extension_supported(qd.cpu, qd.extension.adstack)
    assert not core.is_extension_supported(qd.vulkan, qd.extension.sparse)
