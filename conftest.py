"""Lets `pytest tests/python` run from a source checkout: the Python package
lives in quadrants/python, and its C++ core in bazel-bin (./qd build). With
QD_TEST_INSTALLED=1 the tests run against the quadrants that Python finds
on its own path instead (an installed wheel)."""
import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("QD_TEST_INSTALLED", "") in ("", "0"):
    sys.path.insert(0, os.path.join(_ROOT, "quadrants", "python"))
