"""Quadrants tests. Python tests use `from tests import test_utils`."""
from tests.python import test_utils  # noqa: F401
