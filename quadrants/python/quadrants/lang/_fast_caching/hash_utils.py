"""The one digest every fastcache key and source hash uses."""
import hashlib


def hash_iterable_strings(strings):
    digest = hashlib.sha256()
    for s in strings:
        digest.update(s.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()
