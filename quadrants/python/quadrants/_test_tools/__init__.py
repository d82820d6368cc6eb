"""Helpers upstream's test-suite imports (quadrants._test_tools), so its
scenarios run against this package unchanged."""
import quadrants as qd
from quadrants.lang import runtime


def qd_init_same_arch(**options):
    """qd.init(**options) on the arch the current session runs on."""
    if not runtime.is_initialized():
        raise qd.QuadrantsRuntimeError("qd_init_same_arch() needs an initialized session "
                                       "(call qd.init first)")
    qd.init(arch=runtime.state.options["arch"], **options)


__all__ = ["qd_init_same_arch"]
