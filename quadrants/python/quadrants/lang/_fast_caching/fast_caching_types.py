"""Records the fastcache stores."""
import dataclasses

from quadrants.lang._wrap_inspect import FunctionSourceInfo


@dataclasses.dataclass(frozen=True)
class HashedFunctionSourceInfo:
    """A function's source location and the hash of its text when stored."""

    function_source_info: FunctionSourceInfo
    hash: str
