"""Helpers upstream's test-suite imports (quadrants._test_tools), so its
scenarios run against this package unchanged."""
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError


def qd_init_same_arch(**options):
    """qd.init(**options) on the arch the current session runs on."""
    if not runtime.is_initialized():
        raise QuadrantsRuntimeError("qd_init_same_arch() needs an initialized session "
                                    "(call qd.init first)")
    runtime.init(arch=runtime.state.options["arch"], **options)


__all__ = ["qd_init_same_arch"]
