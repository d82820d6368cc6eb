"""Extensions and capability queries."""
from quadrants._core import core
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsTypeError


class extension:  # pylint: disable=invalid-name
    """Optional capabilities: qd.extension.adstack, qd.extension.data64,
    qd.extension.graph, qd.extension.device_reducer."""
    adstack = "adstack"
    data64 = "data64"
    graph = "graph"
    device_reducer = "device_reducer"


_capabilities = {}  # arch name -> what its backend in this build supports


def _arch_capabilities(name):
    if name not in _capabilities:
        try:
            _capabilities[name] = core.arch_capabilities(name)
        except QuadrantsTypeError:  # not an arch with a backend (qd.gpu)
            _capabilities[name] = frozenset()
    return _capabilities[name]


def is_extension_supported(arch, ext):
    """Whether `arch` supports extension `ext` in this build, as its backend
    declares it to the core's backend registry."""
    name = arch if isinstance(arch, str) else arch.name
    return ext in _arch_capabilities(name)


def get_host_arch_list():
    """The archs that run on this host's CPU: [qd.cpu] (qd.x64 is the same)."""
    return [runtime.cpu]
