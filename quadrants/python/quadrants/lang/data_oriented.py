"""@qd.data_oriented classes: kernels and funcs as methods.

A kernel defined in a class body takes `self` as a template argument: the
object's fields, ndarrays and nested objects are reached through it, and its
primitive members are compile-time constants of the kernel compiled for that
object. Calling a kernel method on an object of a class that is not
@qd.data_oriented is an error, as upstream.
"""
import functools

from quadrants.lang.exception import QuadrantsSyntaxError, QuadrantsTypeError


def data_oriented(cls=None, *, template_primitives=True):
    """@qd.data_oriented or @qd.data_oriented(template_primitives=False).

    By default primitive members (int, float, bool) are compiled into the
    kernels as constants: a kernel compiled for an object does not see later
    changes to them. With template_primitives=False each primitive a kernel
    reads through the object is a hidden scalar parameter read at every
    launch, so changing it takes effect without compiling again.
    """
    if not isinstance(template_primitives, bool):
        raise QuadrantsTypeError(f"qd.data_oriented(template_primitives=...) must be a "
                                 f"bool, got {template_primitives!r}")

    def mark(klass):
        if not isinstance(klass, type):
            raise QuadrantsTypeError(f"@qd.data_oriented decorates a class, got {klass!r}")
        klass._qd_data_oriented = True
        klass._qd_template_primitives = template_primitives
        return klass
    return mark if cls is None else mark(cls)


def is_data_oriented(obj):
    return getattr(type(obj), "_qd_data_oriented", False)


class BoundKernel:
    """A kernel method bound to its object: obj.step(...), obj.step.grad(...)."""

    _qd_kernel = True

    def __init__(self, kernel, obj):
        self.kernel = kernel
        self.obj = obj
        functools.update_wrapper(self, kernel.fn)

    def _check(self):
        if not is_data_oriented(self.obj):
            raise QuadrantsSyntaxError(
                f"kernel '{self.kernel.name}' is a method of class "
                f"{type(self.obj).__name__}, which is not decorated with "
                f"@qd.data_oriented; decorate the class to use kernels as its methods")

    def __call__(self, *args, **kwargs):
        self._check()
        return self.kernel(self.obj, *args, **kwargs)

    @property
    def grad(self):
        self._check()
        return functools.partial(self.kernel.grad, self.obj)

    @property
    def _primal(self):
        return self.kernel._primal

    def resume(self, *args, from_checkpoint, **kwargs):
        """kernel.resume(...) with the object as `self`."""
        self._check()
        return self.kernel.resume(self.obj, *args, from_checkpoint=from_checkpoint, **kwargs)

    def check_gradient(self, *args, **kwargs):
        self._check()
        return self.kernel.check_gradient(self.obj, *args, **kwargs)

    def ir(self, *args):
        self._check()
        return self.kernel.ir(self.obj, *args)


class BoundFunc:
    """A @qd.func method bound to its object: inlined with the object
    (by reference) as `self`."""

    _qd_func = True

    def __init__(self, func, obj):
        self.func = func
        self.obj = obj
        self.name = func.name

    def inline(self, ctx, node, caller, args, kwargs):
        return self.func.inline(ctx, node, caller, [self.obj] + list(args), kwargs,
                                by_reference=1)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)
