"""Upstream's quadrants._lib package: the entry to the native core that its
tests and tools reach through _lib.utils."""
from quadrants._lib import core, utils  # noqa: F401 pylint: disable=unused-import
