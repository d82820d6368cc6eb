"""What the fastcache knows of a kernel parameter when it keys an argument."""
import dataclasses
import typing


@dataclasses.dataclass(frozen=True)
class ArgMetadata:
    """A kernel parameter's name and annotation (None: not annotated)."""

    name: str
    annotation: typing.Any = None
