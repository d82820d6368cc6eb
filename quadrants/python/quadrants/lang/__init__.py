"""The Quadrants language: types, fields, ndarrays, kernels, autodiff."""
import sys


def __getattr__(name):
    """As upstream, quadrants.lang also offers the package's public names
    (`from quadrants.lang import cpu, cuda, kernel`), looked up when asked
    for, once the package has loaded."""
    package = vars(sys.modules["quadrants"])
    if not name.startswith("_") and name in package:
        return package[name]
    raise AttributeError(f"module 'quadrants.lang' has no attribute '{name}'")
