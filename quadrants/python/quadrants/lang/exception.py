"""The exceptions Quadrants raises. All derive from QuadrantsError."""
import re


class QuadrantsError(Exception):
    """Base class of every Quadrants error."""


class QuadrantsCompilationError(QuadrantsError):
    """A kernel cannot be compiled."""


class QuadrantsSyntaxError(QuadrantsCompilationError, SyntaxError):
    """Python syntax that the kernel language does not support."""


class QuadrantsTypeError(QuadrantsCompilationError, TypeError):
    """A type mismatch in a kernel, or a wrong argument type."""


class QuadrantsArgumentError(QuadrantsSyntaxError, QuadrantsTypeError):
    """A call that does not match the kernel's or func's parameters (a
    missing, unexpected, duplicated or extra argument): a
    QuadrantsSyntaxError, as upstream raises, and a QuadrantsTypeError, as a
    Python call raises TypeError."""


def argument_error(callee, error):
    """QuadrantsArgumentError for the TypeError inspect.Signature.bind
    raised binding a call to `callee` (e.g. "kernel 'foo'"), in upstream's
    words with Python's after them."""
    text = str(error)
    for pattern, words in ((r"missing a required argument: '(\w+)'", "Missing argument '{}'"),
                           (r"unexpected keyword argument '(\w+)'", "Unexpected argument '{}'"),
                           (r"multiple values for argument '(\w+)'",
                            "Multiple values for argument '{}'"),
                           (r"too many positional arguments", "Too many arguments")):
        found = re.search(pattern, text)
        if found:
            return QuadrantsArgumentError(f"{callee}: {words.format(*found.groups())} ({text})")
    return QuadrantsArgumentError(f"{callee}: {text}")


class ArgumentValueError(QuadrantsTypeError, ValueError):
    """A kernel argument of the right kind but an unusable value (a shape or
    an out-of-range integer); it is both a QuadrantsTypeError and a
    ValueError so either `except` clause catches it."""


class QuadrantsRuntimeError(QuadrantsError, RuntimeError):
    """A failure while running: an unavailable arch, a failed launch."""


class QuadrantsAssertionError(QuadrantsRuntimeError, AssertionError):
    """A kernel `assert` or a bounds check failed (reported at sync)."""


class QuadrantsAlwaysFalseAssertion(QuadrantsCompilationError, QuadrantsAssertionError):
    """A kernel `assert` whose condition is false at compile time: the kernel
    does not compile, and the error is the AssertionError upstream raises
    when it runs."""


class QuadrantsGlobalDataAccessError(QuadrantsCompilationError, QuadrantsAssertionError):
    """A differentiated kernel reads a field or ndarray element and later
    overwrites it (the global data access rule). Reported when the gradient
    kernel is compiled; it is also a QuadrantsAssertionError, the type
    upstream raises when qd.ad.Tape(validation=True) detects the same."""


class QuadrantsGradientError(QuadrantsTypeError, QuadrantsRuntimeError):
    """A value that cannot take part in autodiff as asked: an integer dtype
    with needs_grad, a Tape loss without an adjoint or with more than one
    element. It is both a QuadrantsTypeError and a QuadrantsRuntimeError so
    either `except` clause catches it."""


class QuadrantsNameError(QuadrantsCompilationError, NameError):
    """A name a kernel or qd.func uses is not defined."""


class QuadrantsIndexError(QuadrantsCompilationError, IndexError):
    """An index out of range that compilation detects (a constant index
    into a vector, a qd.static index, a wrong number of indices)."""


class QuadrantsRuntimeTypeError(QuadrantsRuntimeError, TypeError):
    """A launch argument or return value of the wrong type."""

    @staticmethod
    def get(pos, needed, provided):
        """The error for argument `pos` of type `provided` where `needed` is
        required."""
        return QuadrantsRuntimeTypeError(
            f"Argument {pos} (type={provided}) cannot be converted into required type {needed}")

    @staticmethod
    def get_ret(needed, provided):
        """The error for a return value of type `provided` where `needed` is
        required."""
        return QuadrantsRuntimeTypeError(
            f"Return (type={provided}) cannot be converted into required type {needed}")


class QuadrantsArgumentTypeError(QuadrantsTypeError, QuadrantsRuntimeTypeError):
    """A kernel argument of a kind its parameter cannot take: a
    QuadrantsTypeError, and a QuadrantsRuntimeTypeError as upstream raises it
    when the launch converts the argument."""


__all__ = [
    "QuadrantsError", "QuadrantsCompilationError", "QuadrantsSyntaxError", "QuadrantsNameError",
    "QuadrantsIndexError", "QuadrantsTypeError", "QuadrantsRuntimeError",
    "QuadrantsRuntimeTypeError", "QuadrantsAssertionError",
]
