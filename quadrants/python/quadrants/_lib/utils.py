"""quadrants._lib.utils.import_qd_python_core(), as upstream spells the
native core's version and cache-directory queries."""
import os
import types

from quadrants._core import core
from quadrants._version import __version__


def _version_part(index):
    return int(__version__.split(".")[index])


def import_qd_python_core():
    """The native core's queries upstream's code calls: the version's major,
    minor and patch numbers and the per-user directory Quadrants keeps its
    caches in ($XDG_CACHE_HOME/quadrants, as the process environment says
    now)."""
    return types.SimpleNamespace(
        get_version_major=lambda: _version_part(0),
        get_version_minor=lambda: _version_part(1),
        get_version_patch=lambda: _version_part(2),
        get_repo_dir=lambda: os.path.dirname(core.default_offline_cache_dir()),
        core=core)
