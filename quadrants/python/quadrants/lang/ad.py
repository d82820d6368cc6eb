"""Reverse-mode autodiff helpers: qd.ad.Tape."""
from quadrants.lang import field as field_module
from quadrants.lang import ndarray as ndarray_module
from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError


class Tape:
    """Records kernel launches and replays their gradients in reverse.

        with qd.ad.Tape(loss=loss):
            forward(x)
            compute_loss()
        # x.grad now holds d loss / d x

    On entry every gradient (of fields and of ndarrays with .grad) is set to
    zero and loss.grad[None] to 1; on exit each recorded kernel's .grad runs,
    last launch first, with the arguments it was launched with.
    """

    def __init__(self, loss=None, clear_gradients=True):
        self.loss = loss
        self.clear_gradients = clear_gradients
        self.launches = []

    def __enter__(self):
        runtime.program()
        if runtime.state.tape is not None:
            raise QuadrantsRuntimeError("qd.ad.Tape cannot be nested")
        if self.loss is not None:
            if not isinstance(self.loss, field_module.Field) or self.loss.grad is None:
                raise QuadrantsTypeError("qd.ad.Tape(loss=...) needs a field created with "
                                         "needs_grad=True")
            if len(self.loss.shape) != 0:
                raise QuadrantsTypeError(f"qd.ad.Tape(loss=...) needs a 0-D field, got "
                                         f"shape {self.loss.shape}")
        if self.clear_gradients:
            clear_all_gradients()
        if self.loss is not None:
            self.loss.grad[None] = 1
        runtime.state.tape = self
        return self

    def record(self, kernel, args, kwargs):
        self.launches.append((kernel, args, kwargs))

    def __exit__(self, exc_type, exc, traceback):
        runtime.state.tape = None
        if exc_type is not None:
            return False
        for kernel, args, kwargs in reversed(self.launches):
            kernel.grad(*args, **kwargs)
        return False


def clear_all_gradients():
    """Zeroes the adjoints of every field and ndarray of this session."""
    for f in field_module._live_fields():
        if f.grad is not None and f.grad.placed:
            f.grad.fill(0)
    for array in list(ndarray_module._with_grad):
        if array._generation == runtime.state.generation:
            array.grad.fill(0)
