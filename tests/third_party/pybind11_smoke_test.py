"""Imports a pybind11 extension built by Bazel and calls into it."""
import os
import sys

import pytest

import pybind11_smoke_ext


def test_dot_product_runs_in_cpp():
    assert pybind11_smoke_ext.dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == 32.0


def test_cpp_exception_becomes_python_exception():
    with pytest.raises(ValueError, match="length mismatch"):
        pybind11_smoke_ext.dot([1.0], [1.0, 2.0])


def test_runs_on_debian_python():
    assert sys.version_info[:2] == (3, 11)


if __name__ == "__main__":
    args = [__file__, "-q", "-p", "no:cacheprovider"]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + os.environ["XML_OUTPUT_FILE"])
    sys.exit(pytest.main(args))
