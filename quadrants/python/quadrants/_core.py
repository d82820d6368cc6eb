"""Loads the C++ core extension module.

An installed wheel keeps it next to this file, named for its CPython
(_quadrants_core.cpython-312-x86_64-linux-gnu.so), with the libraries it
loads in _libs/. In a source checkout it is built by Bazel into
bazel-bin/quadrants/python/quadrants/.
"""
import importlib.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_from_bazel_bin(installed_error):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
    candidate = os.path.join(repo, "bazel-bin", "quadrants", "python", "quadrants",
                             "_quadrants_core.so")
    if not os.path.exists(candidate):
        raise ImportError(
            f"the Quadrants C++ core could not be imported ({installed_error}); in a "
            "source checkout run `./qd build`, or install a wheel from `./qd wheel` "
            "built for this Python") from installed_error
    spec = importlib.util.spec_from_file_location("quadrants._quadrants_core", candidate)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


try:
    from quadrants import _quadrants_core as core
except ImportError as error:
    core = _load_from_bazel_bin(error)
