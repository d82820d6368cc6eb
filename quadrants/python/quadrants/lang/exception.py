"""The exceptions Quadrants raises. All derive from QuadrantsError."""


class QuadrantsError(Exception):
    """Base class of every Quadrants error."""


class QuadrantsCompilationError(QuadrantsError):
    """A kernel cannot be compiled."""


class QuadrantsSyntaxError(QuadrantsCompilationError, SyntaxError):
    """Python syntax that the kernel language does not support."""


class QuadrantsTypeError(QuadrantsCompilationError, TypeError):
    """A type mismatch in a kernel, or a wrong argument type."""


class ArgumentValueError(QuadrantsTypeError, ValueError):
    """A kernel argument of the right kind but an unusable value (a shape or
    an out-of-range integer); it is both a QuadrantsTypeError and a
    ValueError so either `except` clause catches it."""


class QuadrantsRuntimeError(QuadrantsError, RuntimeError):
    """A failure while running: an unavailable arch, a failed launch."""


class QuadrantsAssertionError(QuadrantsRuntimeError, AssertionError):
    """A kernel `assert` or a bounds check failed (reported at sync)."""


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
