"""Streams: qd.create_stream() / qd.create_event() and kernel launches
with qd_stream=..., and qd.stream_parallel(): in a kernel, each `with qd.stream_parallel():`
block is independent work that may run concurrently with the others (on
CUDA, the branches of the kernel's graph; elsewhere one after another).

The front end (GraphRegionsMixin.stream_parallel_block) compiles each block
as a section of one region of the kernel, as qd.graph.parallel() sections
are: see quadrants.lang.graph."""
import ast
import contextlib

from quadrants.lang import runtime
from quadrants.lang.exception import (QuadrantsRuntimeError, QuadrantsSyntaxError,
                                      QuadrantsTypeError)


@contextlib.contextmanager
def stream_parallel():
    """Outside kernels a no-op context manager, so helpers shared between
    Python and kernel code run unchanged."""
    yield


def is_stream_parallel(statement, resolve):
    """Whether `statement` is `with qd.stream_parallel():`; `resolve` maps
    the call's target expression to its value (None when unknown)."""
    if not isinstance(statement, ast.With) or len(statement.items) != 1:
        return False
    call = statement.items[0].context_expr
    return isinstance(call, ast.Call) and resolve(call.func) is stream_parallel


def check_exclusive(body, resolve, error):
    """A kernel whose top level has a stream_parallel block has only those
    (and a docstring): what runs between them would have no stream."""
    if not any(is_stream_parallel(s, resolve) for s in body):
        return
    for index, statement in enumerate(body):
        if index == 0 and isinstance(statement, ast.Expr) and \
                isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str):
            continue
        if not is_stream_parallel(statement, resolve):
            raise error(statement, f"When using qd.stream_parallel(), all top-level statements "
                        f"in the kernel must be 'with qd.stream_parallel():' blocks; found a "
                        f"{type(statement).__name__} statement", QuadrantsSyntaxError)


class _Handle:
    """A driver handle of the session that made it (0: the backend has no
    streams, and every operation is a no-op or a full sync); released by
    destroy() or at the end of a `with`."""

    _kind = "handle"

    def __init__(self, handle=0):
        self._handle = handle
        self._generation = runtime.state.generation

    @property
    def handle(self):
        return self._handle

    def _program(self):
        if self._generation != runtime.state.generation:
            raise QuadrantsRuntimeError(f"this {self._kind} belongs to a session that ended "
                                        f"(qd.reset() or a new qd.init()); create another")
        return runtime.program()

    def _release(self, prog):
        raise NotImplementedError

    def destroy(self):
        """Releases it; safe to call again."""
        if self._handle != 0 and self._generation == runtime.state.generation:
            self._release(runtime.program())
        self._handle = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()


class Stream(_Handle):
    """A GPU stream (qd.create_stream()): kernels launched with
    qd_stream=stream run on it, in order, and may overlap with work on other
    streams. On backends without streams (cpu, vulkan) its handle is 0 and
    it is a no-op: launches run in order as always."""

    _kind = "stream"

    def synchronize(self):
        """Waits until the work on this stream is done (every launch where
        the backend has no streams)."""
        prog = self._program()
        if self._handle == 0:
            prog.sync()
        else:
            prog.synchronize_stream(self._handle)

    def _release(self, prog):
        prog.destroy_stream(self._handle)


class Event(_Handle):
    """A point in a stream's work (qd.create_event()): record(stream)
    marks it, wait(qd_stream=other) makes another stream wait for it."""

    _kind = "event"

    def record(self, stream=None):
        """Marks the end of the work queued on `stream` so far (None: the
        default stream)."""
        self._program().record_event(self._handle, handle_of(stream))

    def wait(self, qd_stream=None):
        """Makes `qd_stream` (None: the default stream) wait for the
        recorded point before its later work."""
        self._program().wait_event(self._handle, handle_of(qd_stream))

    def synchronize(self):
        """Waits on the host until the recorded point is reached."""
        prog = self._program()
        if self._handle == 0:
            prog.sync()
        else:
            prog.synchronize_event(self._handle)

    def _release(self, prog):
        prog.destroy_event(self._handle)


def handle_of(stream):
    if stream is None:
        return 0
    if not isinstance(stream, Stream):
        raise QuadrantsTypeError(f"expected a qd.Stream (qd.create_stream()), got "
                                 f"{type(stream).__name__}")
    return stream.handle


def create_stream():
    """A new stream (see Stream)."""
    return Stream(runtime.program().create_stream())


def create_event():
    """A new event (see Event)."""
    return Event(runtime.program().create_event())
