"""Records a kernel keeps about its launches."""
import dataclasses


@dataclasses.dataclass
class SrcLlCacheObservations:
    """What the fastcache did at a kernel's last compile: whether a key was
    made, an entry with unchanged sources found, the compiled kernel loaded
    from it, and an entry stored."""

    cache_key_generated: bool = False
    cache_validated: bool = False
    cache_loaded: bool = False
    cache_stored: bool = False
