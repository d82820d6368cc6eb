"""Lets `pytest tests/python` run from a source checkout: the Python package
lives in quadrants/python, and its C++ core in bazel-bin (./qd build)."""
import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_ROOT, "quadrants", "python"))
