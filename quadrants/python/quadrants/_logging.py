"""Logging levels: qd.set_logging_level(qd.DEBUG), qd.is_logging_effective.

Messages of the C++ core (its log macro) and of the Python package (the
functions below) go to stderr when their level is at least the current
one. The level starts from QD_LOG_LEVEL (default warning); qd.init(log_level=...)
and qd.set_logging_level change it. Levels, least severe first: trace,
debug, info, warn, error, critical, off. The core has no trace or critical
messages: trace shows what debug shows, and critical or off shows nothing
of the core.
"""
import os
import sys

from quadrants._core import core
from quadrants.lang import options

TRACE = "trace"
DEBUG = "debug"
INFO = "info"
WARN = "warn"
ERROR = "error"
CRITICAL = "critical"

supported_log_levels = [TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL]

# Upstream's names, then the registry's spelling of warn and "off".
_RANK = {TRACE: 0, DEBUG: 1, INFO: 2, WARN: 3, "warning": 3, ERROR: 4, CRITICAL: 5, "off": 6}
# The core's threshold for each level (quadrants/common/logging.h; 4: none).
_CORE_THRESHOLD = {TRACE: 0, DEBUG: 0, INFO: 1, WARN: 2, "warning": 2, ERROR: 3, CRITICAL: 4,
                   "off": 4}
# The core's level a Python message of each level is written as.
_CORE_LEVEL = {TRACE: 0, DEBUG: 0, INFO: 1, WARN: 2, ERROR: 3, CRITICAL: 3}


class _Level:
    name = None  # None: not set yet, so QD_LOG_LEVEL's (or the default)


_level = _Level()


def _normalize(level):
    if not isinstance(level, str) or level.lower() not in _RANK:
        names = ", ".join(repr(n) for n in supported_log_levels + ["off"])
        raise ValueError(f"logging level must be one of {names}, got {level!r}")
    return level.lower()


def _current():
    if _level.name is None:
        try:
            name = options.env_value("log_level")
        except options.InvalidEnvironmentError:
            name = None  # the core reads a rejected value as the default too
        _level.name = name or options.BY_NAME["log_level"].default
    return _level.name


def set_logging_level(level):
    """Sets the least severe level that is written: 'trace', 'debug',
    'info', 'warn' (or 'warning'), 'error', 'critical' or 'off'."""
    name = _normalize(level)
    core.set_log_threshold(_CORE_THRESHOLD[name])
    _level.name = name


def get_logging_level():
    """The current level's name."""
    return _current()


def is_logging_effective(level):
    """Whether a message of `level` would be written now."""
    return _RANK[_normalize(level)] >= _RANK[_current()]


def _logger(level):
    def log(msg, *args, **kwargs):
        if not is_logging_effective(level):
            return
        text = msg.format(*args, **kwargs) if args or kwargs else str(msg)
        caller = sys._getframe(1)  # pylint: disable=protected-access
        core.log(_CORE_LEVEL[level], os.path.basename(caller.f_code.co_filename),
                 caller.f_lineno, text)
    log.__name__ = level
    log.__doc__ = f"Writes a {level} message (str.format'ed with the other arguments)."
    return log


trace = _logger(TRACE)
debug = _logger(DEBUG)
info = _logger(INFO)
warn = _logger(WARN)
error = _logger(ERROR)
critical = _logger(CRITICAL)

__all__ = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "set_logging_level",
           "is_logging_effective"]
