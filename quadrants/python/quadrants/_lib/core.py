"""quadrants._lib.core: upstream's name for the native core, through which
its code reaches the exception types (core.QuadrantsRuntimeError) and the
core's own functions."""
from quadrants._core import core as _native
from quadrants.lang import misc, runtime
from quadrants.lang.device_caps import DeviceCapability  # noqa: F401 pylint: disable=unused-import
from quadrants.lang.exception import (QuadrantsAssertionError,  # noqa: F401 pylint: disable=unused-import
                                      QuadrantsIndexError, QuadrantsRuntimeError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)


def data_type_size(dtype):
    """Bytes of one value of primitive type `dtype` (u1 takes a byte)."""
    return max(1, dtype.bits // 8)


def arch_from_name(name):
    """The arch called `name` ("cpu", "cuda", "vulkan", ...)."""
    for arch in runtime.ALL_ARCHS:
        if arch.name == name:
            return arch
    raise ValueError(f"unknown arch '{name}' (one of "
                     f"{', '.join(a.name for a in runtime.ALL_ARCHS)})")


def is_extension_supported(arch, ext):
    """Whether backend `arch` supports extension `ext` (qd.extension.*)."""
    return misc.is_extension_supported(arch, ext)


def __getattr__(name):
    return getattr(_native, name)
