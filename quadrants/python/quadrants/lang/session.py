"""The process-wide session state: the current Program, the options of
qd.init() and each thread's autodiff scopes. quadrants.lang.runtime starts
and ends sessions (qd.init, qd.reset); this module only holds their state,
so the modules below runtime (the types) can read it.
"""
import threading

from quadrants.lang.exception import QuadrantsRuntimeError


class _ThreadState(threading.local):
    """The autodiff scopes one thread is in, for the session `generation`."""

    def __init__(self):
        super().__init__()
        self.generation = -1
        self.tape = None
        self.fwd_mode = None
        self.grad_replaced_depth = 0


def _scopes(state):
    """This thread's _ThreadState for the current session; qd.init and
    qd.reset (bumping the generation) drop every thread's."""
    local = state._thread  # pylint: disable=protected-access
    if local.generation != state.generation:
        local.__init__()
        local.generation = state.generation
    return local


def _per_thread(name):
    """A _State attribute each thread has its own of."""
    return property(lambda state: getattr(_scopes(state), name),
                    lambda state, value: setattr(_scopes(state), name, value))


# One compilation at a time: the IR builder and the Program's compile state
# (its warnings among them) are shared by all threads. Reentrant, so a
# compilation may compile what it needs.
compile_lock = threading.RLock()


class _State:
    program = None
    config = None
    # qd.init(arch=qd.python): kernels run as plain Python, with no Program.
    interpreted = False
    options = {}
    generation = 0  # bumped by every init/reset; stale objects compare against it
    _thread = _ThreadState()
    tape = _per_thread("tape")  # the qd.ad.Tape recording launches, if any
    # The qd.ad.FwdMode whose kernels propagate tangents, if any.
    fwd_mode = _per_thread("fwd_mode")
    # Nesting of qd.ad.grad_replaced calls: the kernels launched inside one
    # are not recorded on the tape (the function is, as one launch).
    grad_replaced_depth = _per_thread("grad_replaced_depth")
    # Unnamed fields are numbered per session, so a rerun names (and keys
    # in the offline cache) its fields the same way.
    unnamed_fields = 0

    def scopes(self):
        """This thread's tape, fwd_mode and grad_replaced_depth at once (the
        launch path reads all three)."""
        return _scopes(self)


state = _State()


def program():
    if state.program is None:
        if state.interpreted:
            raise QuadrantsRuntimeError(
                "qd.init(arch=qd.python) runs kernels as plain Python on torch tensors and "
                "has no compiled program; this needs a compiled backend (qd.cpu, qd.cuda, "
                "qd.vulkan, ...)")
        raise QuadrantsRuntimeError(
            "Quadrants is not initialized: call qd.init() before creating fields, "
            "ndarrays or launching kernels")
    return state.program


def is_initialized():
    return state.program is not None or state.interpreted


def option(name, default):
    """qd.init's option `name` in the active session; `default` before
    qd.init()."""
    return state.options[name] if state.program is not None else default
