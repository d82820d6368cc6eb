"""The registry of qd.init options and environment variables.

The list is declared once, in the C++ core (quadrants/common/options.def);
this module reads it through the extension module, reads every environment
variable through it, and turns qd.init() arguments and the environment into
a session's options.
"""
import dataclasses
import os

from quadrants._core import core
from quadrants._version import __version__
from quadrants.lang import types
from quadrants.lang.exception import QuadrantsError, QuadrantsRuntimeError, QuadrantsTypeError


class InvalidEnvironmentError(QuadrantsError, ValueError):
    """An environment variable holds a value its declaration rejects. It is
    a ValueError, as upstream reports bad QD_* values, and a QuadrantsError,
    as the core reports them."""


class UnknownOptionError(QuadrantsError, TypeError, KeyError):
    """qd.init() was given a keyword it does not take. A TypeError, as for
    any Python call, and a KeyError, as upstream reports it."""

    __str__ = Exception.__str__  # KeyError would quote the message


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One declared option or environment variable (see options.def)."""
    name: str          # the qd.init keyword, else a lower-case key
    env: str           # the environment variable, '' when none
    scope: str         # 'init', 'init_env_off', 'library' or 'tool'
    type: str          # 'bool', 'int', 'float', 'string', 'path', 'enum', 'list', ...
    default: object    # None when there is none
    default_text: str  # the default as options.def spells it
    choices: tuple     # ((value, meaning), ...); empty: any value of the type
    accepted: str      # what is accepted, in words
    check: str         # 'any', 'non_negative', 'positive', 'fraction' or 'unit'
    doc: str

    @property
    def is_init_option(self):
        return self.scope in ("init", "init_env_off")

    @property
    def choice_values(self):
        return [value for value, _ in self.choices]


_DTYPES = {t.name: t for t in types.ALL}
_DTYPE_KINDS = {"float_type": "floating-point", "int_type": "integer"}


def _from_core(spec_type, value):
    """A value as the core parsed it, with type names as Quadrants types."""
    if spec_type in _DTYPE_KINDS and value is not None:
        return _DTYPES[value]
    return value


def _load_specs():
    specs = []
    for entry in core.option_specs():
        entry = dict(entry, choices=tuple(tuple(c) for c in entry["choices"]),
                     default=_from_core(entry["type"], entry["default"]))
        specs.append(OptionSpec(**entry))
    return tuple(specs)


SPECS = _load_specs()
BY_NAME = {spec.name: spec for spec in SPECS}
INIT_OPTIONS = {spec.name: spec for spec in SPECS if spec.is_init_option}


def declared_env_names():
    """Every environment variable the registry declares."""
    return {spec.env for spec in SPECS if spec.env}


def _read_env(spec, prefix=""):
    # Python's os.environ, so that code replacing or patching it (as tests
    # do) is seen; the text is parsed as the declaration says.
    value, error = core.option_from_text(spec.name, os.environ.get(spec.env, ""))
    if error:
        raise InvalidEnvironmentError(prefix + error)
    return _from_core(spec.type, value)


def env_value(name):
    """The value of option `name`'s environment variable as declared (None
    when unset or empty); a value it rejects raises InvalidEnvironmentError
    naming the variable, the value and what it accepts."""
    return _read_env(BY_NAME[name])


def check_environment():
    """{name: value} of every variable the library reads that is set; the
    first one holding a value its declaration rejects raises
    InvalidEnvironmentError. Variables of tools and tests are not read."""
    found = {}
    for spec in SPECS:
        if spec.env and spec.scope != "tool":
            value = _read_env(spec, prefix="qd.init(): ")
            if value is not None:
                found[spec.name] = value
    return found


# What a qd.init() argument of each declared type must be.
_PYTHON_TYPES = {"bool": bool, "int": int, "float": (int, float), "string": str,
                 "enum": str, "path": (str, os.PathLike)}
_WANTED = {"bool": "bool", "int": "int", "float": "a number", "string": "str", "enum": "str",
           "path": "a path (str or os.PathLike)"}
_RANGES = {"non_negative": (lambda v: v >= 0, ">= 0"), "positive": (lambda v: v > 0, "> 0"),
           "fraction": (lambda v: 0 < v <= 1, "in (0, 1]"),
           "unit": (lambda v: 0 <= v <= 1, "in [0, 1]")}


def _type_argument(spec, value):
    try:
        dtype = types.normalize(value, spec.name)
    except QuadrantsTypeError:
        raise QuadrantsTypeError(f"qd.init(): {spec.name} must be a Quadrants type, "
                                 f"got {value!r}") from None
    if dtype.name not in spec.choice_values:
        raise QuadrantsTypeError(f"qd.init(): {spec.name} must be a "
                                 f"{_DTYPE_KINDS[spec.type]} type, got {dtype}")
    return dtype


def argument_value(spec, value):
    """`value` passed to qd.init() for `spec`, checked and normalized: a
    wrong type is a QuadrantsTypeError, a value out of range a ValueError."""
    if spec.type in _DTYPE_KINDS:
        return _type_argument(spec, value)
    if value is None and spec.default is None:
        return None
    expected = _PYTHON_TYPES[spec.type]
    if expected is int and isinstance(value, bool):
        raise QuadrantsTypeError(f"qd.init(): {spec.name} must be an int, got {value!r}")
    if not isinstance(value, expected):
        raise QuadrantsTypeError(f"qd.init(): {spec.name} must be {_WANTED[spec.type]}, "
                                 f"got {value!r}")
    if spec.check in _RANGES and not _RANGES[spec.check][0](value):
        raise ValueError(f"qd.init(): {spec.name} must be {_RANGES[spec.check][1]}, "
                         f"got {value}")
    if spec.type == "enum" and value not in spec.choice_values:
        raise ValueError(f"qd.init(): {spec.name} must be {spec.accepted}, got {value!r}")
    if spec.type == "bool" and str(int(value)) not in spec.choice_values:
        # A flag that declares only the value it supports.
        supported = {"1": True, "0": False}[spec.choice_values[0]]
        raise ValueError(f"qd.init(): {spec.name}={value} is not supported; only "
                         f"{spec.name}={supported} ({spec.choices[0][1]})")
    if spec.type == "path":
        return os.path.expanduser(os.fspath(value))
    return value


def init_values(arguments):
    """The options of a qd.init() given `arguments`: an unknown keyword is a
    TypeError; then the environment and the arguments are checked. An
    option's variable sets its default and an argument wins, except for
    scope 'init_env_off', whose variable set to 0 turns it off whatever the
    argument asks."""
    for name in arguments:
        if name == "default_up":
            raise UnknownOptionError("qd.init(): 'default_up' is always the unsigned type of "
                                     "'default_ip'; set default_ip instead")
        if name not in INIT_OPTIONS:
            raise UnknownOptionError(f"qd.init() got an unknown option '{name}'")
    environment = check_environment()
    given = {name: argument_value(INIT_OPTIONS[name], value)
             for name, value in arguments.items()}
    values = {}
    for name, spec in INIT_OPTIONS.items():
        from_env = environment.get(name)
        value = from_env if spec.scope == "init" and from_env is not None else spec.default
        value = given.get(name, value)
        if spec.scope == "init_env_off" and from_env is False:
            value = False
        values[name] = value
    check_required_version(values["require_version"])
    return values


def _version_numbers(text, what):
    """(major, minor, patch) of a version string; its numeric prefix counts
    (1.2.3rc1 is 1.2.3) and a missing patch is 0."""
    prefix = text
    for position, char in enumerate(text):
        if not (char.isdigit() or char == "."):
            prefix = text[:position]
            break
    parts = prefix.split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"qd.init(): {what} must be major.minor[.patch], got {text!r}")
    numbers = [int(p) for p in parts]
    return tuple(numbers + [0] * (3 - len(numbers)))


def check_required_version(required):
    """require_version: this Quadrants must have the same major version and
    at least the required minor.patch."""
    if required is None:
        return
    need = _version_numbers(required, "require_version")
    have = _version_numbers(__version__, "the installed version")
    if need[0] != have[0] or need[1:] > have[1:]:
        raise QuadrantsRuntimeError(f"qd.init(): require_version={required!r}, but this "
                                    f"Quadrants is {__version__} (the same major version and "
                                    f"at least the required minor.patch are needed)")
