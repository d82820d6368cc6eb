"""The fastcache key of a kernel call, and the entries that map a key to
the offline cache's key of the compiled kernel.

An entry is a JSON file in the offline cache's directory
(python_side_cache/<key>.json), written whole through a rename. It holds
the offline-cache key, the functions the kernel was compiled from with the
hashes of their text (checked at load), and what the launch needs that the
compiled kernel does not know (launch). A missing, unreadable or corrupt
entry reads as absent, so the kernel compiles and stores a new one.
"""
import dataclasses
import json
import os
import tempfile

from quadrants._version import __version__
from quadrants.lang import runtime
from quadrants.lang._fast_caching import args_hasher, config_hasher, function_hasher
from quadrants.lang._fast_caching.fast_caching_types import HashedFunctionSourceInfo
from quadrants.lang._fast_caching.hash_utils import hash_iterable_strings
from quadrants.lang._wrap_inspect import FunctionSourceInfo

_SCHEMA = 1
_FOLDER = "python_side_cache"


@dataclasses.dataclass
class CacheValue:
    frontend_cache_key: str
    hashed_function_source_infos: list
    used_py_dataclass_parameters: set
    launch: dict = dataclasses.field(default_factory=dict)


def create_cache_key(raise_on_templated_floats, kernel_source_info, args, arg_metas,
                     variant=""):
    """The key of a call of the kernel at `kernel_source_info` with `args`
    (described by `arg_metas`), or None when its arguments cannot be keyed.
    `variant` tells apart the kernels compiled from one source (e.g. the
    parts of a graph kernel)."""
    args_hash = args_hasher.hash_args(raise_on_templated_floats, args, arg_metas)
    if isinstance(args_hash, args_hasher.FastcacheSkip):
        return None
    return cache_key_of(kernel_source_info, args_hash, variant)


def cache_key_of(kernel_source_info, args_hash, variant=""):
    """create_cache_key's result from an args_hasher.hash_args result."""
    try:
        kernel_hash = function_hasher.hash_kernel(kernel_source_info)
    except (OSError, UnicodeError, ValueError):
        return None
    return hash_iterable_strings((
        f"quadrants {__version__} schema {_SCHEMA}",
        config_hasher.hash_compile_config(), config_hasher.hash_device_caps(),
        # Where the kernel is, not only its text: two kernels of one text
        # may call different funcs of one name (closures).
        kernel_source_info.function_name, kernel_source_info.filepath,
        str(kernel_source_info.start_lineno), kernel_hash, args_hash, variant))


def _directory():
    """The entries' folder, or None when the offline cache is off."""
    if not runtime.state.options.get("offline_cache", True):
        return None
    base = runtime.state.options.get("offline_cache_file_path") or \
        runtime.program().offline_cache_stats().get("directory")
    return os.path.join(base, _FOLDER) if base else None


def _path(cache_key):
    directory = _directory()
    if directory is None or not all(c in "0123456789abcdef" for c in cache_key):
        return None
    return os.path.join(directory, cache_key + ".json")


def store(frontend_cache_key, fast_cache_key, function_source_infos,
          used_py_dataclass_parameters, launch=None):
    """Records that `fast_cache_key` compiles to the offline cache's
    `frontend_cache_key`; failing to write costs only a later compile."""
    path = _path(fast_cache_key)
    if path is None:
        return False
    try:
        hashed = function_hasher.hash_functions(function_source_infos)
    except (OSError, UnicodeError, ValueError):
        return False
    record = {
        "schema": _SCHEMA,
        "frontend_cache_key": frontend_cache_key,
        "hashed_function_source_infos": [
            dict(dataclasses.asdict(h.function_source_info), hash=h.hash) for h in hashed],
        "used_py_dataclass_parameters": sorted(used_py_dataclass_parameters),
        "launch": launch or {},
    }
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(temporary, path)
        return True
    except OSError:
        return False


def _decode(record):
    if record.get("schema") != _SCHEMA or not isinstance(record.get("frontend_cache_key"), str):
        raise ValueError("not a fastcache entry")
    infos = []
    for item in record["hashed_function_source_infos"]:
        info = FunctionSourceInfo(function_name=str(item["function_name"]),
                                  filepath=str(item["filepath"]),
                                  start_lineno=int(item["start_lineno"]),
                                  end_lineno=int(item["end_lineno"]))
        infos.append(HashedFunctionSourceInfo(function_source_info=info, hash=str(item["hash"])))
    launch = record.get("launch", {})
    if not isinstance(launch, dict):
        raise ValueError("malformed launch record")
    return CacheValue(frontend_cache_key=record["frontend_cache_key"],
                      hashed_function_source_infos=infos,
                      used_py_dataclass_parameters=set(record["used_py_dataclass_parameters"]),
                      launch=launch)


def _try_load(cache_key):
    path = _path(cache_key)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return _decode(json.load(f))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # corrupt: the next store replaces it


def load(cache_key):
    """The entry for `cache_key` whose functions all still have the text
    they were compiled from, or None."""
    value = _try_load(cache_key)
    if value is None or \
            not function_hasher.validate_hashed_function_infos(value.hashed_function_source_infos):
        return None
    return value
