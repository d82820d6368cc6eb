"""qd.stream_parallel(): in a kernel, each `with qd.stream_parallel():`
block is independent work that may run concurrently with the others (on
CUDA, the branches of the kernel's graph; elsewhere one after another).

The front end (GraphRegionsMixin.stream_parallel_block) compiles each block
as a section of one region of the kernel, as qd.graph.parallel() sections
are: see quadrants.lang.graph."""
import ast
import contextlib

from quadrants.lang.exception import QuadrantsSyntaxError


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
