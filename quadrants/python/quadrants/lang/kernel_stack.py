"""The kernels being compiled, innermost last, per thread, and the IR
builder (the C++ core's, see quadrants._core) of the innermost one. The
compile context itself (quadrants.lang.context) builds on Expr, which needs
the builder."""
import threading


class _Stack(threading.local):
    """The kernels being compiled, innermost last, per thread: a thread that
    launches kernels or runs Python-scope code while another compiles must
    not see (or build into) the other thread's kernel."""

    def __init__(self):
        super().__init__()
        self.contexts = []


_stack = _Stack()


def push(ctx):
    _stack.contexts.append(ctx)


def pop():
    _stack.contexts.pop()


def current():
    contexts = _stack.contexts
    return contexts[-1] if contexts else None


def builder():
    return _stack.contexts[-1].builder
