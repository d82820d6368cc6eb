"""qd.experimental: names that have left the experimental stage, kept so
older programs still run; each warns and forwards to its stable name."""
import warnings

from quadrants.lang.real_func import real_func as _real_func


def real_func(fn):
    """Deprecated: qd.real_func."""
    warnings.warn("qd.experimental.real_func is deprecated because it is no longer "
                  "experimental. Use qd.real_func instead.", DeprecationWarning, stacklevel=2)
    return _real_func(fn)


__all__ = ["real_func"]
