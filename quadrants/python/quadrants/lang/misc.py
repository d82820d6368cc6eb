"""Extensions and capability queries."""
from quadrants.lang import runtime


class extension:  # pylint: disable=invalid-name
    """Optional capabilities: qd.extension.adstack, qd.extension.data64."""
    adstack = "adstack"
    data64 = "data64"


# arch -> extensions it supports in this build.
_SUPPORTED = {
    runtime.cpu: {extension.adstack, extension.data64},
    runtime.cuda: {extension.adstack, extension.data64},
    # 64-bit types need a device with shaderInt64/shaderFloat64, which
    # kernels check when they compile.
    runtime.vulkan: {extension.adstack, extension.data64},
}


def is_extension_supported(arch, ext):
    """Whether `arch` supports extension `ext` in this build."""
    if isinstance(arch, str):
        arch = runtime.Arch(arch)
    return ext in _SUPPORTED.get(arch, set())


def get_host_arch_list():
    """The archs that run on this host's CPU: [qd.cpu] (qd.x64 is the same)."""
    return [runtime.cpu]
