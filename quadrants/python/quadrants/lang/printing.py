"""print(...) inside kernels and qd.func.

    print("x =", x[i], i)                 # values separated by sep (" ")
    print("a", 1, sep="", end="")         # sep and end as in Python
    print(f"x[{i}] = {x[i]:.3f}")         # f-strings with run-time values
    print("{} and {k:e}".format(a, k=b))  # str.format with run-time values

Each print appends one record (the run-time values) to a buffer while the
kernel runs; the host formats the records and writes them to Python's
sys.stdout at the next sync (qd.sync(), or a host read such as x[i] or
to_numpy()), in the order they were appended. Prints of one thread keep
their order; those of parallel iterations interleave whole, in some order.
The gradient kernel (kernel.grad) prints nothing.

Formatting follows upstream Quadrants, which formats with printf:

- integers print in decimal, u1 values as True / False;
- floats print with six decimals ("%f": 1.0 -> "1.000000"); f32 and f16
  values are widened to f64 first, so 0.1 in f32 prints 0.100000;
- a format spec ("{x:.2f}", "{n:5d}", "{v:e}") is the printf conversion
  without its percent sign: flags "-+ #0", a width and a precision (each at
  most 99), and a conversion: d i for signed integers, u for unsigned ones,
  o x X for any integer, e E f F g G a A for floats; without a conversion
  the type's default applies ("{x:.2}" on a float is "%.2f"). A conversion
  that does not fit the value's type is a QuadrantsTypeError;
- compile-time numbers print as run-time values of their literal type
  (print(1.5) shows 1.500000, print(True) shows True); strings and other
  compile-time objects print as str() does; lists and tuples print as
  [a, b, ...].
"""
import numbers
import re
import string

import numpy as np

from quadrants.lang import context
from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr, is_runtime

_SPEC = re.compile(r"^([-+ #0]*)(\d*)(?:\.(\d*))?(?:hh|h|ll|l|L|q|j|z|t)?([a-zA-Z]?)$")
_FLOAT_CONVERSIONS = "eEfFgGaA"
_ANY_INT_CONVERSIONS = "oxX"


class Formatted:
    """A run-time value inside an f-string or str.format(), with its spec."""

    __slots__ = ("value", "spec")

    def __init__(self, value, spec):
        self.value = value
        self.spec = spec


class RuntimeText:
    """An f-string or str.format() result holding run-time values: parts that
    are str or Formatted. Only print() can show it; the text exists at run
    time only."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        self.parts = parts

    def __str__(self):
        raise QuadrantsSyntaxError("a string formatted with run-time values can only be "
                                   "passed to print() in a kernel")

    __repr__ = __str__


def printf_spec(spec, dtype):
    """The printf conversion ("%.3f") for a Python-style spec (".3f") on a
    value of `dtype`; "" for the type's default formatting."""
    if not spec:
        return ""
    match = _SPEC.match(spec)
    if match is None:
        raise QuadrantsTypeError(f"unsupported format spec '{spec}' for a {dtype} value: "
                                 f"expected printf-style flags, width, precision and a "
                                 f"conversion such as '.3f', '5d' or 'e'")
    flags, width, precision, conversion = match.groups()
    signed_int = dtype.is_signed and not dtype.is_float
    if not conversion:
        conversion = "f" if dtype.is_float else ("d" if signed_int else "u")
    if dtype.is_float:
        fits = conversion in _FLOAT_CONVERSIONS
    elif conversion in _ANY_INT_CONVERSIONS:
        fits = True
    else:
        fits = conversion in ("di" if signed_int else "u")
    if not fits:
        expected = ("e E f F g G a A" if dtype.is_float
                    else "d i o x X" if signed_int else "u o x X")
        raise QuadrantsTypeError(f"format spec '{spec}' doesn't match '{dtype}': "
                                 f"{dtype} values take the conversions {expected}")
    if len(width) > 2 or (precision is not None and len(precision) > 2):
        raise QuadrantsTypeError(f"format spec '{spec}': width and precision must be at "
                                 f"most 99")
    text = "%" + flags + width
    if precision is not None:
        text += "." + (precision or "0")
    return text + conversion


def _parts(value, spec=""):
    """The print parts of one argument: str and (Expr, printf spec) pairs."""
    if isinstance(value, RuntimeText):
        out = []
        for part in value.parts:
            out.extend(_parts(part.value, part.spec) if isinstance(part, Formatted)
                       else [part])
        return out
    if isinstance(value, Formatted):
        return _parts(value.value, value.spec)
    if isinstance(value, Composite):
        # Vectors and matrices print as (nested) lists, structs as dicts.
        value = context.load(value)
        if hasattr(value, "to_list"):
            return _parts(value.to_list(), spec)
        out = ["{"]
        for k, (name, member) in enumerate(value.items()):
            out.append(f"{', ' if k else ''}{name}: ")
            out.extend(_parts(member, spec))
        out.append("}")
        return out
    if is_runtime(value):
        expr = context.load(value)
        return [(expr, printf_spec(spec, expr.dtype))]
    if isinstance(value, str):
        return [format(value, spec)]
    if isinstance(value, (numbers.Real, np.bool_)):
        # Formatted at run time like a value of its literal type, so
        # print(1.5) and print(x) with x == 1.5 show the same text.
        expr = context.to_expr(value.item() if isinstance(value, np.generic) else value)
        return [(expr, printf_spec(spec, expr.dtype))]
    if isinstance(value, (list, tuple)):
        out = ["["]
        for k, item in enumerate(value):
            if k:
                out.append(", ")
            out.extend(_parts(item, spec))
        out.append("]")
        return out
    return [format(str(value), spec)]


def _text_option(name, value, default):
    if value is None:
        return default
    if not isinstance(value, str):
        raise QuadrantsTypeError(f"print(): {name} must be a compile-time string, got "
                                 f"{type(value).__name__}")
    return value


def kernel_print(*args, sep=" ", end="\n", **unsupported):
    """Builds the print statement of print(*args, sep=..., end=...)."""
    if unsupported:
        name = next(iter(unsupported))
        raise QuadrantsSyntaxError(f"print() in a kernel does not support the keyword "
                                   f"argument '{name}' (only sep and end)")
    sep = _text_option("sep", sep, " ")
    end = _text_option("end", end, "\n")
    parts = []
    for k, arg in enumerate(args):
        if k:
            parts.append(sep)
        parts.extend(_parts(arg))
    parts.append(end)
    pieces, specs, values = [""], [], []
    for part in parts:
        if isinstance(part, str):
            pieces[-1] += part
        else:
            expr, spec = part
            values.append(expr.stmt)
            specs.append(spec)
            pieces.append("")
    context.builder().print_(pieces, specs, values)


def format_value(value, conversion, spec):
    """One replacement field of an f-string or str.format(): text when Python
    can format it now, else a Formatted part that print() formats."""
    if is_runtime(value) or isinstance(value, Composite):
        return Formatted(value, spec)
    if conversion == "r":
        value = repr(value)
    elif conversion == "s":
        value = str(value)
    elif conversion == "a":
        value = ascii(value)
    match = _SPEC.match(spec) if spec else None
    if match is not None and not match.group(4) and \
            isinstance(value, (numbers.Real, np.floating)) and \
            not isinstance(value, (numbers.Integral, np.bool_)):
        # A float spec without a conversion ("{:.2}") is printf's %f, as for
        # a run-time value, not Python's general format.
        return Formatted(value, spec)
    try:
        return format(value, spec)
    except ValueError:
        # printf-style specs Python rejects ("i", ".2" on an int) still
        # print, as they would for a run-time value.
        if isinstance(value, (numbers.Real, np.bool_)):
            return Formatted(value, spec)
        raise


def join_text(parts):
    """A str when every part is known at compile time, else a RuntimeText."""
    if all(isinstance(p, str) for p in parts):
        return "".join(parts)
    return RuntimeText(list(parts))


def _check_format_arguments(template, args, kwargs):
    """Every argument of str.format() in a kernel fills a field, and every
    field has one (upstream's rule and wording)."""
    positions, auto, names = set(), 0, set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field is None:
            continue
        if field == "":
            positions.add(auto)
            auto += 1
        elif field.isdigit():
            positions.add(int(field))
        else:
            names.add(field)
    expected = max(positions) + 1 if positions else 0
    if expected != len(args):
        raise QuadrantsSyntaxError(f"Expected {expected} positional argument(s), but received "
                                   f"{len(args)} instead.")
    for name in names:
        if name.isidentifier() and name not in kwargs:
            raise QuadrantsSyntaxError(f"Keyword '{name}' not found.")
    for name in kwargs:
        if name not in names:
            raise QuadrantsSyntaxError(f"Keyword '{name}' not used.")


def format_string(template, args, kwargs):
    """template.format(*args, **kwargs) in kernel code. Without run-time
    values Python formats it, unless it rejects a printf-style spec."""
    _check_format_arguments(template, args, kwargs)
    if not any(is_runtime(a) or isinstance(a, Composite) for a in args) and \
            not any(is_runtime(v) or isinstance(v, Composite) for v in kwargs.values()):
        try:
            return template.format(*args, **kwargs)
        except ValueError:
            pass
    parts = []
    auto = 0
    for literal, field, spec, conversion in string.Formatter().parse(template):
        if literal:
            parts.append(literal)
        if field is None:
            continue
        if spec and "{" in spec:
            raise QuadrantsSyntaxError("nested replacement fields in a format spec are not "
                                       "supported in kernels")
        if field == "":
            key = auto
            auto += 1
        elif field.isdigit():
            key = int(field)
        elif field.isidentifier():
            key = field
        else:
            raise QuadrantsSyntaxError(f"replacement field '{{{field}}}': only positions "
                                       f"and names are supported in kernels")
        try:
            value = args[key] if isinstance(key, int) else kwargs[key]
        except (IndexError, KeyError):
            raise QuadrantsSyntaxError(f"str.format(): no value for replacement field "
                                       f"'{{{field}}}'") from None
        parts.append(format_value(value, conversion, spec or ""))
    return join_text(parts)
