"""Upstream's view of the device's capabilities: prog.get_device_caps()
(a DeviceCaps) read by qd._lib.core.DeviceCapability."""
import enum
import functools
import hashlib

from quadrants._core import core


@functools.lru_cache(maxsize=None)
def _binary_identity():
    return core.binary_identity()


class DeviceCapability(enum.Enum):
    """The capabilities a device reports (SPIR-V backends report them; the
    others report none, which reads as 0)."""
    spirv_version = "spirv_version"
    spirv_has_int8 = "spirv_has_int8"
    spirv_has_int16 = "spirv_has_int16"
    spirv_has_int64 = "spirv_has_int64"
    spirv_has_float16 = "spirv_has_float16"
    spirv_has_float64 = "spirv_has_float64"
    spirv_has_atomic_int64 = "spirv_has_atomic_int64"
    spirv_has_atomic_float_add = "spirv_has_atomic_float_add"
    spirv_has_atomic_float64_add = "spirv_has_atomic_float64_add"
    spirv_has_atomic_float16 = "spirv_has_atomic_float16"
    spirv_has_physical_storage_buffer = "spirv_has_physical_storage_buffer"
    spirv_has_subgroup_basic = "spirv_has_subgroup_basic"
    spirv_has_subgroup_arithmetic = "spirv_has_subgroup_arithmetic"
    spirv_subgroup_size = "spirv_subgroup_size"


class DeviceCaps:
    """The capabilities of the device a Program runs on."""

    def __init__(self, program):
        self._values = dict(program.device_capabilities)
        self._identity = (program.device_description, _binary_identity())

    def get(self, capability):
        """The capability's value (0 when the device reports none)."""
        if not isinstance(capability, DeviceCapability):
            raise TypeError(f"get_device_caps().get() takes a DeviceCapability, got "
                            f"{capability!r}")
        return self._values.get(capability.value, 0)

    def hashed_key(self):
        """A key of the device and of the Quadrants build compiling for it
        (a rebuilt compiler may generate other code for the same source);
        it starts with a letter, as cache keys do."""
        digest = hashlib.sha256()
        for part in self._identity + tuple(f"{k}={v}" for k, v in sorted(self._values.items())):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
        return "T" + digest.hexdigest()
