"""Extensions and capability queries."""
from quadrants._core import core
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError


class extension:  # pylint: disable=invalid-name
    """Optional capabilities, named as upstream names them. Whether an arch
    has one is qd.is_extension_supported(arch, ext)."""
    sparse = "sparse"            # pointer, dynamic and bitmasked SNodes
    quant = "quant"              # quantized types (qd.types.quant)
    mesh = "mesh"                # MeshQuadrants
    quant_basic = "quant_basic"  # basic operations on quantized types
    data64 = "data64"            # 64-bit fields, ndarrays and scalars (f64)
    adstack = "adstack"          # autodiff of loops that carry variables
    bls = "bls"                  # block-local storage (qd.block_local)
    assertion = "assertion"      # kernel `assert`, checked under debug=True
    extfunc = "extfunc"          # calls into external functions or sources
    graph = "graph"              # @qd.kernel(graph=True) replays a graph
    device_reducer = "device_reducer"  # adstack sizing reduces on the device


ALL_EXTENSIONS = frozenset(v for k, v in vars(extension).items() if not k.startswith("_"))

# Language features every backend of this build compiles, so an arch has
# them exactly when it has a backend: both emitters (LLVM and SPIR-V) compile
# kernel asserts to checks reported at the next sync.
_EVERY_BACKEND = frozenset({extension.assertion})

_capabilities = {}  # arch name -> what its backend in this build supports


def _arch_capabilities(name):
    if name not in _capabilities:
        try:
            declared = frozenset(core.arch_capabilities(name))
        except QuadrantsTypeError:  # not an arch with a backend (qd.gpu)
            declared = frozenset()
        # An arch without a backend declares nothing (Metal only generates MSL).
        _capabilities[name] = declared | _EVERY_BACKEND if declared else declared
    return _capabilities[name]


def session_supports(capability):
    """Whether the backend of this session declares `capability` to the
    core's backend registry: an extension name, "host_memory" (numpy and
    torch views share field and ndarray memory) or "dlpack"."""
    return capability in _arch_capabilities(runtime.state.arch.name)


def session_dlpack_device_type():
    """DLPack's device type of the memory this session's arrays live in, as
    the backend registers it (1 CPU, 2 CUDA, 10 ROCm); 0 where other
    libraries cannot address it (Vulkan), so arrays reach kernels from host
    memory."""
    return core.arch_dlpack_device_type(runtime.state.arch.name)


def _arch_name(arch, what):
    if isinstance(arch, runtime.Arch) or arch is runtime.gpu:
        return arch.name
    if isinstance(arch, str) and arch in {a.name for a in runtime.ALL_ARCHS + [runtime.gpu]}:
        return arch
    raise QuadrantsTypeError(f"{what}: arch must be one of qd.cpu, qd.cuda, qd.amdgpu, "
                             f"qd.vulkan, qd.metal; got {arch!r}")


def is_extension_supported(arch, ext):
    """Whether `arch` supports extension `ext` (a qd.extension member) in this
    build, as its backend declares it to the core's backend registry. The
    quant, quant_basic, mesh, bls and extfunc extensions are supported by
    no backend here; sparse by cpu and cuda."""
    name = _arch_name(arch, "qd.is_extension_supported()")
    if ext not in ALL_EXTENSIONS:
        raise QuadrantsTypeError(f"qd.is_extension_supported(): ext must be a qd.extension "
                                 f"member ({', '.join(sorted(ALL_EXTENSIONS))}); got {ext!r}")
    return ext in _arch_capabilities(name)


def is_extension_enabled(ext):
    """Whether `ext` is usable in the active session: supported by its arch
    and, for qd.extension.adstack, turned on (ad_stack_experimental_enabled)."""
    if not runtime.is_initialized():
        raise QuadrantsRuntimeError("is_extension_enabled(): Quadrants is not initialized; "
                                    "call qd.init() first")
    options = runtime.state.options
    supported = is_extension_supported(options["arch"], ext)
    if ext == extension.adstack:
        return supported and options["ad_stack_experimental_enabled"]
    return supported


def is_arch_supported(arch):
    """Whether kernels can run on `arch` on this machine."""
    name = _arch_name(arch, "is_arch_supported()")
    if name == runtime.gpu.name:
        return any(runtime.is_arch_available(a) for a in runtime.GPU_ARCHS)
    return runtime.is_arch_available(next(a for a in runtime.ALL_ARCHS if a.name == name))


def get_host_arch_list():
    """The archs that run on this host's CPU: [qd.cpu] (qd.x64 is the same)."""
    return [runtime.cpu]
