"""qd.ad.Tape(loss, grad_check=[x, ...]): checks the Tape's gradients.

After the Tape has computed the gradients, each listed field is checked
against central differences of the loss along a random direction t:
(L(x + eps t) - L(x - eps t)) / (2 eps) must agree with sum(x.grad * t)
within 1 %, for one eps in 2^-3, 2^-5, ..., 2^-29 (the smallest step
where round-off has not yet swamped the difference). Each evaluation starts
from the primal values every field had when the Tape was created and
re-runs the recorded launches. Upstream restricts it to an f64 loss: in f32
no step is both small enough for truncation and large enough for round-off.
"""
import numpy as np

from quadrants.lang import field as field_module
from quadrants.lang import types
from quadrants.lang.exception import QuadrantsAssertionError, QuadrantsTypeError

_EPS = 2.0 ** np.arange(-3, -30, -2).astype(np.float64)
_TOLERANCE = 0.01


def _primal_fields():
    return [f for f in field_module.live_fields()
            if f._role == "primal" and f.placed]


class GradChecker:
    def __init__(self, loss, to_check):
        if not isinstance(to_check, (list, tuple)):
            raise QuadrantsTypeError(f"qd.ad.Tape(grad_check=...) takes a list of fields, "
                                     f"got {type(to_check).__name__}")
        for x in to_check:
            if not isinstance(x, field_module.Field) and not hasattr(x, "_leaf_fields"):
                raise QuadrantsTypeError(f"qd.ad.Tape(grad_check=...): {x!r} is not a field")
        if not isinstance(loss, field_module.Field) or loss.dtype != types.f64:
            raise QuadrantsTypeError("qd.ad.Tape(grad_check=...) needs a 0-D f64 loss field: "
                                     "only f64 is supported when checking gradients")
        self.loss = loss
        self.to_check = list(to_check)
        self.fields = _primal_fields()
        self.backups = [f.to_numpy() for f in self.fields]
        self.results = []

    def _restore(self):
        for f, values in zip(self.fields, self.backups):
            f.from_numpy(values)

    def _loss_along(self, x, tangent, eps, replay):
        self._restore()
        x.from_numpy(x.to_numpy() + eps * tangent.astype(x.to_numpy().dtype))
        replay()
        return float(self.loss.to_numpy())

    def check(self, replay):
        """Checks every listed field; re-runs the launches (`replay`) from
        the saved state at the end, leaving the fields as the forward pass
        did. Raises QuadrantsAssertionError naming the fields that fail."""
        rng = np.random.default_rng(0)
        failed = []
        for position, x in enumerate(self.to_check):
            if x is self.loss:
                self.results.append(True)
                continue
            grad = x.grad.to_numpy().astype(np.float64)
            best = np.inf
            for eps in _EPS:
                tangent = rng.random(grad.shape)
                numeric = (self._loss_along(x, tangent, eps, replay) -
                           self._loss_along(x, tangent, -eps, replay)) * 0.5 / eps
                autodiff = float(np.sum(grad * tangent))
                err = abs(autodiff - numeric)
                best = min(best, err / max(abs(autodiff), 1e-20))
                if err <= _TOLERANCE * abs(autodiff):
                    break
            ok = best <= _TOLERANCE
            self.results.append(ok)
            if not ok:
                failed.append(f"variable {position} ({getattr(x, 'name', x)!s}) has relative "
                              f"error {best:.3g}, expected at most {_TOLERANCE}")
        self._restore()
        replay()
        if failed:
            raise QuadrantsAssertionError("Grad check failed: " + "; ".join(failed))
