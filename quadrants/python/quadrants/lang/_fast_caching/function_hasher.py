"""Hashes of function sources, read from their files, and their validation:
an entry is reused only while every function it was compiled from still
has the text it had."""
import os

from quadrants.lang._fast_caching.fast_caching_types import HashedFunctionSourceInfo
from quadrants.lang._fast_caching.hash_utils import hash_iterable_strings

# path -> ((mtime_ns, size), lines): a file is read once per change.
_files = {}


def _file_lines(path):
    stat = os.stat(path)
    stamp = (stat.st_mtime_ns, stat.st_size)
    known = _files.get(path)
    if known is None or known[0] != stamp:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            known = _files[path] = (stamp, f.readlines())
    return known[1]


def _read_file(function_info):
    """The lines of the function, as its file holds them now."""
    lines = _file_lines(function_info.filepath)
    return lines[function_info.start_lineno:function_info.end_lineno + 1]


def _hash_function(function_info):
    return hash_iterable_strings(_read_file(function_info))


def hash_functions(function_infos):
    return [HashedFunctionSourceInfo(function_source_info=info, hash=_hash_function(info))
            for info in function_infos]


def hash_kernel(kernel_info):
    return _hash_function(kernel_info)


def _validate_hashed_function_info(hashed):
    try:
        return _hash_function(hashed.function_source_info) == hashed.hash
    except (OSError, UnicodeError, ValueError):
        return False


def validate_hashed_function_infos(function_infos):
    return all(_validate_hashed_function_info(info) for info in function_infos)
