"""@qd.perf_dispatch: one operation, several registered implementations, and
the fastest one for each input geometry picked by timing them.

A call runs exactly one implementation. While a geometry is being
evaluated, each call runs the compatible implementation with the fewest
trials; trials past the warm-up ones are timed (with the device synchronized
before and after). Once every compatible implementation has its warm-up and
active trials, the fastest mean wins for that geometry until a re-evaluation
trigger (a number of calls, or seconds) fires. QD_PERFDISPATCH_FORCE names
implementations to use without timing ("dispatcher:impl,...")."""
import functools
import inspect
import time

from quadrants.lang import options, runtime, session
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsSyntaxError

NUM_FIRST_WARMUP = 1
NUM_WARMUP = 0
NUM_ACTIVE = 1
DEFAULT_REPEAT_AFTER_COUNT = 300


def _parse_force_map(raw):
    """{dispatcher name: implementation name} from QD_PERFDISPATCH_FORCE's
    text ("a:x,b:y"); empty entries are skipped."""
    forced = {}
    for pair in (raw or "").split(","):
        pair = pair.strip()
        if not pair:
            continue
        if ":" not in pair:
            raise ValueError(f"Malformed QD_PERFDISPATCH_FORCE entry '{pair}'. Expected format: "
                             f"'dispatcher:impl'.")
        dispatcher, impl = (part.strip() for part in pair.split(":", 1))
        forced[dispatcher] = impl
    return forced


_FORCE_RAW = options.env_value("perfdispatch_force")
_FORCE_MAP = _parse_force_map(_FORCE_RAW if _FORCE_RAW != "?" else "")
_ANY_FORCE_ACTIVE = _FORCE_RAW is not None
_PRINT_DEBUG = bool(options.env_value("perfdispatch_print_debug"))


def _sync():
    """Waits for launched kernels, so a timing covers the device's work."""
    if session.is_initialized():
        runtime.sync()


def _error(cls, message, code):
    return cls(f"{message} (error code: {code}).")


class DispatchImpl:
    """A registered implementation: calls the wrapped function; its
    is_compatible(*args, **kwargs) says whether it can take a call."""

    def __init__(self, fn, is_compatible):
        self.__wrapped__ = fn
        self.is_compatible = is_compatible
        self.__name__ = getattr(fn, "__name__", repr(fn))
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        return self.__wrapped__(*args, **kwargs)

    def __repr__(self):
        return f"<perf_dispatch implementation {self.__name__}>"


def _parameter_names(fn):
    target = getattr(fn, "fn", fn)  # a qd.kernel's Python function
    return list(inspect.signature(target).parameters)


class PerformanceDispatcher:
    """What @qd.perf_dispatch(...) makes of a prototype: call it like the
    prototype; register implementations with .register."""

    def __init__(self, prototype, get_geometry_hash, first_warmup, warmup, active,
                 repeat_after_count, repeat_after_seconds):
        if not callable(get_geometry_hash):
            raise QuadrantsSyntaxError("qd.perf_dispatch(get_geometry_hash=...) needs a "
                                       "callable taking the operation's arguments")
        for name, value in (("first_warmup", first_warmup), ("warmup", warmup),
                            ("active", active)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise QuadrantsSyntaxError(f"qd.perf_dispatch({name}=...) must be a "
                                           f"non-negative int, got {value!r}")
        if active < 1:
            raise QuadrantsSyntaxError("qd.perf_dispatch(active=...) must be at least 1: the "
                                       "winner is chosen from timed calls")
        functools.update_wrapper(self, prototype, updated=())
        self._prototype_params = _parameter_names(prototype)
        self.get_geometry_hash = get_geometry_hash
        self.first_warmup = first_warmup
        self.warmup = warmup
        self.active = active
        if repeat_after_count is None and repeat_after_seconds is None:
            repeat_after_count = DEFAULT_REPEAT_AFTER_COUNT
        self.repeat_after_count = repeat_after_count
        self.repeat_after_seconds = repeat_after_seconds
        self._impls = []
        self._trial_count_by_dispatch_impl_by_geometry_hash = {}
        self._durations_by_dispatch_impl_by_geometry_hash = {}
        self._fastest_dispatch_impl_by_geometry_hash = {}
        self._first_eval_completed = set()
        self._winner_calls_by_geometry_hash = {}
        self._winner_since_by_geometry_hash = {}
        self._announced = False

    # ---- registration -----------------------------------------------------
    def register(self, impl=None, *, is_compatible=None):
        """Registers an implementation (a qd.kernel or a Python function with
        the prototype's parameter names), as @d.register or
        @d.register(is_compatible=fn). It must be the outermost decorator."""
        if impl is None:
            return lambda fn: self.register(fn, is_compatible=is_compatible)
        names = _parameter_names(impl)
        for name in names:
            if name not in self._prototype_params:
                raise _error(QuadrantsSyntaxError,
                             f"Signature parameter {name} of function not in perf_dispatch "
                             f"function prototype", "PERFDISPATCH_ANNOTATION_SEQUENCE_MISMATCH")
        if len(names) != len(self._prototype_params):
            raise _error(QuadrantsSyntaxError,
                         f"Number of function parameters {len(names)} doesn't match number of "
                         f"parameters in perf_dispatch function prototype "
                         f"{len(self._prototype_params)}",
                         "PERFDISPATCH_ANNOTATION_SEQUENCE_MISMATCH")
        wrapped = DispatchImpl(impl, is_compatible)
        self._impls.append(wrapped)
        if _ANY_FORCE_ACTIVE or _PRINT_DEBUG:
            print(f"perf_dispatch '{self.__name__}': registered '{wrapped.__name__}'")
        return wrapped

    # ---- calls ------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        forced = self._forced_impl()
        if forced is not None:
            return forced(*args, **kwargs)
        compatible = [impl for impl in self._impls
                      if impl.is_compatible is None or impl.is_compatible(*args, **kwargs)]
        if not compatible:
            raise QuadrantsRuntimeError("No suitable functions were found.")
        if len(compatible) == 1:
            return compatible[0](*args, **kwargs)
        geometry = self.get_geometry_hash(*args, **kwargs)
        winner = self._fastest_dispatch_impl_by_geometry_hash.get(geometry)
        if winner is not None and winner in compatible and not self._repeat_due(geometry):
            return winner(*args, **kwargs)
        return self._trial(geometry, compatible, args, kwargs)

    def _forced_impl(self):
        if not _ANY_FORCE_ACTIVE:
            return None
        names = [impl.__name__ for impl in self._impls]
        if not self._announced:
            self._announced = True
            print(f"perf_dispatch '{self.__name__}': available implementations: {names}")
            wanted = _FORCE_MAP.get(self.__name__)
            if wanted is not None and wanted not in names:
                print(f"[perf_dispatch] WARNING: QD_PERFDISPATCH_FORCE requested '{wanted}' for "
                      f"'{self.__name__}', which has no such implementation ({names}). Falling "
                      f"back to normal benchmarking.")
            elif wanted is not None:
                print(f"perf_dispatch '{self.__name__}': forced to '{wanted}' via "
                      f"QD_PERFDISPATCH_FORCE")
        wanted = _FORCE_MAP.get(self.__name__)
        return next((impl for impl in self._impls if impl.__name__ == wanted), None)

    def _repeat_due(self, geometry):
        """Counts a winner call; True (and the geometry's statistics cleared)
        when a re-evaluation trigger fires with this call."""
        calls = self._winner_calls_by_geometry_hash.get(geometry, 0) + 1
        self._winner_calls_by_geometry_hash[geometry] = calls
        by_count = self.repeat_after_count is not None and self.repeat_after_count > 0 and \
            calls >= self.repeat_after_count
        by_time = self.repeat_after_seconds is not None and self.repeat_after_seconds > 0 and \
            time.perf_counter() - self._winner_since_by_geometry_hash[geometry] >= \
            self.repeat_after_seconds
        if not (by_count or by_time):
            return False
        del self._fastest_dispatch_impl_by_geometry_hash[geometry]
        self._trial_count_by_dispatch_impl_by_geometry_hash.pop(geometry, None)
        self._durations_by_dispatch_impl_by_geometry_hash.pop(geometry, None)
        return True

    def _trial(self, geometry, compatible, args, kwargs):
        trials = self._trial_count_by_dispatch_impl_by_geometry_hash.setdefault(geometry, {})
        durations = self._durations_by_dispatch_impl_by_geometry_hash.setdefault(geometry, {})
        warmup = self.warmup if geometry in self._first_eval_completed else self.first_warmup
        impl = min(compatible, key=lambda candidate: trials.get(candidate, 0))
        done = trials.get(impl, 0)
        if done >= warmup:
            _sync()
            start = time.perf_counter()
            result = impl(*args, **kwargs)
            _sync()
            durations.setdefault(impl, []).append(time.perf_counter() - start)
        else:
            result = impl(*args, **kwargs)
        trials[impl] = done + 1
        if all(trials.get(candidate, 0) >= warmup + self.active for candidate in compatible):
            fastest = min(compatible, key=lambda candidate: sum(durations[candidate]) /
                          len(durations[candidate]))
            self._fastest_dispatch_impl_by_geometry_hash[geometry] = fastest
            self._first_eval_completed.add(geometry)
            self._winner_calls_by_geometry_hash[geometry] = 0
            self._winner_since_by_geometry_hash[geometry] = time.perf_counter()
            if _PRINT_DEBUG:
                print(f"perf_dispatch '{self.__name__}': geometry {geometry!r} chose "
                      f"'{fastest.__name__}'")
        return result


def perf_dispatch(*, get_geometry_hash, first_warmup=NUM_FIRST_WARMUP, warmup=NUM_WARMUP,
                  active=NUM_ACTIVE, repeat_after_count=None, repeat_after_seconds=None):
    """qd.perf_dispatch(get_geometry_hash=..., first_warmup=1, warmup=0,
    active=1, repeat_after_count=None, repeat_after_seconds=None): makes the
    decorated prototype (an empty function naming the parameters) a
    dispatcher; `.register` adds implementations.

    get_geometry_hash(*args, **kwargs) keys the choice (shapes, say; avoid
    reading device data). first_warmup untimed trials per implementation
    before the first choice for a geometry, warmup before later ones, then
    active timed ones. The choice is re-made after repeat_after_count winner
    calls or repeat_after_seconds seconds (<= 0 turns a trigger off); with
    both None it is re-made every 300 calls.
    """
    def decorate(prototype):
        return PerformanceDispatcher(prototype, get_geometry_hash, first_warmup, warmup, active,
                                     repeat_after_count, repeat_after_seconds)
    return decorate
