"""Loads the C++ core extension module.

An installed wheel keeps it next to this file. In a source checkout it is
built by Bazel into bazel-bin/quadrants/python/quadrants/.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_from_bazel_bin():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
    candidate = os.path.join(repo, "bazel-bin", "quadrants", "python", "quadrants",
                             "_quadrants_core.so")
    if not os.path.exists(candidate):
        raise ImportError(
            "the Quadrants C++ core (_quadrants_core.so) is not built; run "
            "`./qd build` in the repository, or install the wheel from `./qd wheel`")
    spec = importlib.util.spec_from_file_location("quadrants._quadrants_core", candidate)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


try:
    from quadrants import _quadrants_core as core
except ImportError:
    core = _load_from_bazel_bin()
