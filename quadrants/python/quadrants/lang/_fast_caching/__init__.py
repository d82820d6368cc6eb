"""Fastcache: a @qd.kernel(fastcache=True) kernel's compiled artifact found
again in a later process from a key of its source, argument types and
compiler configuration, without running the front end or any pass.

- args_hasher: the argument part of the key;
- config_hasher: the configuration and device part;
- function_hasher: hashes of function sources, validated at load;
- src_hasher: the key, and the entries mapping keys to offline-cache keys;
- kernel_cache: what a kernel launch asks of them.
"""

# Metadata marking a dataclass member whose value (not only its type) keys
# the cache: dataclasses.field(metadata={FIELD_METADATA_CACHE_VALUE: True}).
FIELD_METADATA_CACHE_VALUE = "add_value_to_cache_key"
