"""Sessions: qd.init / qd.reset / qd.sync, the archs, and the process-wide
state they set (kept in quadrants.lang.session).

Threads: kernels may be launched from several Python threads at once. Each
call into the core (a launch, a field access, a compile) holds the GIL
throughout, so calls into the Program run one at a time and each launch runs
whole; compilations (the IR builder driven from Python, then the core's
compile) take `compile_lock`. The autodiff scopes (qd.ad.Tape, qd.ad.FwdMode,
qd.ad.grad_replaced) are per thread: a Tape records the launches of the
thread that entered it.
"""
import atexit
import importlib
import types as types_module

from quadrants import _logging
from quadrants._core import core
from quadrants.lang import options as registry
from quadrants.lang import session, types
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
# The session state lives in quadrants.lang.session, below the types (which
# read qd.init's default_fp / default_ip from it); these names keep
# quadrants.lang.runtime's.
from quadrants.lang.session import (compile_lock, is_initialized, program,  # noqa: F401
                                    state)  # pylint: disable=unused-import


class Arch(types.Named):
    """A backend: qd.cpu, qd.cuda, qd.amdgpu, qd.vulkan, qd.metal, qd.gpu."""

    __slots__ = ()


cpu = Arch("cpu")
# Upstream names the CPU backend by the host's ISA; both name it here.
x64 = cpu
arm64 = cpu
cuda = Arch("cuda")
amdgpu = Arch("amdgpu")
vulkan = Arch("vulkan")
metal = Arch("metal")
# Kernels run as plain Python on torch tensors (quadrants.lang.python_backend).
python = Arch("python")
# qd.gpu takes the first available in this order: CUDA, then Vulkan.
GPU_ARCHS = [cuda, vulkan, amdgpu, metal]


class GpuArchs(list):
    """qd.gpu: the list of GPU archs, as upstream (a test decorated with
    arch=qd.gpu runs on each); qd.init(arch=qd.gpu) takes the first one
    available."""

    name = "gpu"
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def __repr__(self):
        return "qd.gpu"


gpu = GpuArchs(GPU_ARCHS)
ALL_ARCHS = [cpu] + GPU_ARCHS



_probed = {}  # arch -> why it cannot run here (None: it can), probed once


def arch_unavailable_reason(arch):
    """Why `arch` cannot run here, or None when it can (the backend
    registry's probe; Metal has no backend in this build)."""
    if arch == metal:
        return "Metal runs on macOS only (this build generates MSL but cannot run it)"
    if arch not in _probed:
        _probed[arch] = core.arch_unavailable_reason(arch.name)
    return _probed[arch]


def is_arch_available(arch):
    return arch_unavailable_reason(arch) is None


def init(arch=None, _test_mode=False, **options):
    """Starts Quadrants on `arch` (default: qd.cpu). Re-initializing resets.
    The options and the environment variables that set them are declared in
    quadrants.lang.options. With _test_mode=True (upstream's hook for testing
    option handling) nothing starts: the options as the environment and the
    arguments resolve them are returned, as attributes."""
    values = registry.init_values(options)
    if _test_mode:
        return types_module.SimpleNamespace(**values)
    _logging.set_logging_level(values["log_level"])
    if arch is None:
        arch = cpu
    if isinstance(arch, str):
        arch = {a.name: a for a in ALL_ARCHS + [gpu, python]}.get(arch, arch)
    if not isinstance(arch, Arch) and arch is not gpu:
        raise QuadrantsTypeError(f"qd.init(): arch must be one of qd.cpu, qd.cuda, "
                                 f"qd.amdgpu, qd.vulkan, qd.metal, qd.gpu, qd.python; "
                                 f"got {arch!r}")
    if arch == python:
        _require_torch()
        reset()
        state.interpreted = True
        state.options = dict(values, arch=arch)
        state.arch = arch
        return
    if arch is gpu:
        # Codegen-only AMDGPU (QD_AMDGPU_CODEGEN_ONLY) runs no kernels.
        codegen_only = registry.env_value("amdgpu_codegen_only")
        available = [a for a in GPU_ARCHS
                     if is_arch_available(a) and not (a == amdgpu and codegen_only)]
        if not available:
            reasons = "; ".join(
                f"{a.name}: "
                f"{arch_unavailable_reason(a) or 'QD_AMDGPU_CODEGEN_ONLY compiles without running'}"
                for a in GPU_ARCHS)
            arch = _fall_back(values, f"qd.gpu: no GPU backend is available ({reasons})")
        else:
            arch = available[0]
    reason = arch_unavailable_reason(arch)
    if reason is not None:
        arch = _fall_back(values, f"arch {arch.name} is not available: {reason}")
    reset()
    config = _compile_config(arch, values)
    state.program = core.Program(config)
    state.config = config
    state.options = dict(values, arch=arch)
    state.arch = arch


def update_option(name, value):
    """qd.cfg.<name> = value after qd.init(): later compiles and launches
    read the new value; what qd.init set up with the old one (the arch,
    memory sizes, the device) stays."""
    if not is_initialized():
        raise QuadrantsRuntimeError("qd.cfg: Quadrants is not initialized; call qd.init() first")
    if name == "arch":
        raise AttributeError("qd.cfg.arch is chosen by qd.init(arch=...)")
    spec = registry.INIT_OPTIONS.get(name)
    if spec is None:
        raise AttributeError(f"qd.init() has no option '{name}'")
    state.options[name] = registry.argument_value(spec, value)
    if state.program is not None:
        state.config = _compile_config(state.arch, state.options)
        state.program.update_config(state.config)


def _require_torch():
    """qd.python keeps fields and ndarrays in torch tensors."""
    try:
        importlib.import_module("torch")
    except ImportError as e:
        raise QuadrantsRuntimeError(f"qd.init(arch=qd.python) needs PyTorch, which cannot "
                                    f"be imported here: {e}") from None


def _compile_config(arch, values):
    """The core's CompileConfig for `arch` and the qd.init values: every
    option the core holds (CompileConfig.option_fields, declared in
    options.def) by its name; types by name, None as the declared default."""
    values = dict(values)
    # make_cpu_multithreading_loop=False: every CPU loop on one thread.
    if not values["make_cpu_multithreading_loop"]:
        values["cpu_max_num_threads"] = 1
    # Any Python int seeds: it is reduced to the int64 the core keeps.
    values["random_seed"] = (values["random_seed"] + 2**63) % 2**64 - 2**63
    config = core.CompileConfig()
    config.arch = arch.name
    for name in core.CompileConfig.option_fields:
        value = values[name]
        if value is not None:
            setattr(config, name, value.name if isinstance(value, types.DataType) else value)
    return config


def _fall_back(values, reason):
    """qd.cpu when qd.init(enable_fallback=True) asks for it (with a logged
    warning), else the QuadrantsRuntimeError saying `reason`."""
    if not values["enable_fallback"]:
        raise QuadrantsRuntimeError(reason)
    _logging.warn("{}; running on qd.cpu instead (enable_fallback=True)", reason)
    return cpu


def reset():
    """Drops the Program: fields, ndarrays and compiled kernels. Output that
    kernels printed since the last sync is shown first."""
    if state.program is not None:
        state.program.flush_output()
    state.program = None
    state.interpreted = False
    state.config = None
    state.options = {}
    state.tape = None
    state.fwd_mode = None
    state.grad_replaced_depth = 0
    state.unnamed_fields = 0
    state.generation += 1


@atexit.register
def _show_pending_output():
    """Kernel print() output not yet shown by a sync appears at exit."""
    if state.program is not None:
        state.program.flush_output()


def sync():
    """Waits for launched kernels and raises the first error they recorded
    (nothing to wait for when kernels run as plain Python)."""
    if state.interpreted:
        return
    prog = program()
    prog.sync()


def default_fp():
    return session.option("default_fp", types.f32)


def default_ip():
    return session.option("default_ip", types.i32)


def offline_cache_stats():
    """What the offline cache did since qd.init(): its directory ('' when
    off), kernels loaded (hits), compiled (misses), corrupt entries deleted
    and recompiled (rejected), and entries that could not be written
    (store_failures, last_store_error)."""
    return program().offline_cache_stats()


def adstack_stats():
    """What the adstack did at the last launch that used one: per-task stack
    capacities and per-thread bytes, the segment length of each stack's loop
    when the launch checkpointed it to fit ad_stack_max_bytes (segments; 0:
    unsegmented), how many stacks the launch reversed by checkpointing
    (checkpointed), the capacities of the checkpoint stacks
    (checkpoint_capacities), per task the heap rows when the heap was
    gated by the iterations passing the task's adstack gate (gated_rows; 0:
    one slice per thread) and the gate counts taken (gate_counts), the bytes
    needed, the heap allocated and how
    many times it grew; and, over the runtime's life, the host size
    expression walks (tree_evaluations), the launches sized from the cache
    (cache_hits) and the runs of the Vulkan sizer shader
    (sizer_dispatches)."""
    return program().adstack_stats()

