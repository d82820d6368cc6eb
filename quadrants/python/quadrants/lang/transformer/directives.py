"""Compile-time directives: qd.static(x) and qd.loop_config(...)."""
import ast
import numbers

from quadrants.lang import context, python_backend
from quadrants.lang.exception import (QuadrantsCompilationError, QuadrantsError,
                                      QuadrantsSyntaxError, QuadrantsTypeError)
from quadrants.lang.expr import is_runtime

class LoopConfig:
    """What qd.loop_config(...) asked of the next for loop."""

    def __init__(self, node, serialize=False, block_dim=None, name=None):
        self.node = node            # the qd.loop_config call, for errors
        self.serialize = serialize
        self.block_dim = block_dim
        self.name = name            # the task's name in profilers, or None


def loop_config(*, serialize=False, block_dim=None, parallelize=None,
                block_dim_adaptive=True, name=None):
    """qd.loop_config(serialize=False, block_dim=None, parallelize=None,
    block_dim_adaptive=True, name=None), as a statement right before a for
    loop in a kernel, configures that loop only.

    serialize=True runs the loop serially, in order, even when it is the
    outermost (parallel) loop of the kernel; `break` is then allowed in it.
    block_dim (a positive int, at most 1024) is the number of threads per
    GPU block (workgroup) the loop runs in: qd.simt.block's thread_idx(),
    sync() and SharedArray act on blocks of that size. Without it GPU
    launches use 128-thread blocks; CPU backends have no blocks.
    parallelize is the number of CPU threads the loop may use (a positive
    int, as upstream): 1 runs it serially, like serialize=True; a larger
    count is a hint that does not change results, so it is accepted and the
    runtime's thread pool is used. block_dim_adaptive (a bool, upstream's
    GPU block-size heuristic) is accepted and does not change results.
    name (a str) names a top-level loop's task: its compiled function is
    called after it (so profilers show it) and the IR printout shows
    `loop_name=...`; on a loop nested in another for loop, which becomes
    no task of its own, it is dropped with a warning.
    Kernels that run as plain Python (qd.python) run every loop in order,
    so there it does nothing.
    """
    if python_backend.active():
        return
    raise QuadrantsSyntaxError("qd.loop_config() can only be called in kernel code, as a "
                               "statement right before the for loop it configures")


_LOOP_CONFIG_OPTIONS = ("serialize", "block_dim", "parallelize", "block_dim_adaptive", "name")


def static(value):
    """qd.static(x): evaluates x at compile time (qd.static(range(n)) unrolls)."""
    return value


class DirectivesMixin:
    """FunctionCompiler's handling of qd.static() and qd.loop_config()."""

    def check_loop_config_target(self, body, i):
        """A qd.loop_config(...) statement configures the next for loop of
        its block (other statements may come between, as upstream allows);
        a block with no for loop after it is an error."""
        config = self.pending_loop_config
        if config is None:
            return
        if not any(isinstance(stmt, ast.For) for stmt in body[i + 1:]):
            self.pending_loop_config = None
            following = body[i + 1] if i + 1 < len(body) else None
            found = "nothing" if following is None else \
                f"a {type(following).__name__} statement and no for loop"
            raise self.error(config.node, f"qd.loop_config() must be followed by the for loop "
                             f"it configures, found {found}", QuadrantsSyntaxError)

    def is_static_call(self, call):
        try:
            fn = self.eval_quiet(call.func)
        except QuadrantsError:
            return False
        return fn is static

    def eval_quiet(self, node):
        if isinstance(node, ast.Attribute):
            base = self.eval_quiet(node.value)
            return getattr(base, node.attr)
        if isinstance(node, ast.Name):
            return self.lookup(node, node.id)
        raise QuadrantsCompilationError("not a plain name")

    def eval_static(self, call):
        if not call.args or call.keywords:
            raise self.error(call, "qd.static() takes positional arguments (one value, or "
                             "several for a tuple of them)", QuadrantsSyntaxError)
        if call in self.static_arguments:
            raise self.error(call, "qd.static() inside qd.static(): the outer one already "
                             "evaluates its argument at compile time", QuadrantsSyntaxError)
        self.static_depth += 1
        saved = self.static_arguments
        self.static_arguments = set(call.args)
        try:
            values = tuple(self.eval(arg) for arg in call.args)
        finally:
            self.static_depth -= 1
            self.static_arguments = saved
        if len(values) > 1:
            if any(is_runtime(v) for v in values):
                raise self.error(call, "qd.static() needs compile-time values, got a run-time "
                                 "one", QuadrantsTypeError)
            return values
        value = values[0]
        if is_runtime(value):
            raise self.error(call, "qd.static() needs a compile-time value, got a "
                             "run-time one: its arguments must be compile-time constants",
                             QuadrantsTypeError)
        return value

    def set_loop_config(self, node):
        if node.args:
            raise self.error(node, "qd.loop_config() takes keyword arguments only "
                             "(serialize=..., block_dim=..., parallelize=...)",
                             QuadrantsSyntaxError)
        options = {}
        for keyword in node.keywords:
            if keyword.arg not in _LOOP_CONFIG_OPTIONS:
                raise self.error(node, f"qd.loop_config() got an unknown option "
                                 f"'{keyword.arg}' (expected one of "
                                 f"{', '.join(_LOOP_CONFIG_OPTIONS)})", QuadrantsSyntaxError)
            value = context.load(self.eval(keyword.value))
            if is_runtime(value) and isinstance(keyword.value, ast.Name):
                value = self.known_constants.get(keyword.value.id, value)
            if is_runtime(value):
                raise self.error(node, f"qd.loop_config({keyword.arg}=...) needs a "
                                 f"compile-time value, got a run-time one",
                                 QuadrantsTypeError)
            options[keyword.arg] = value
        serialize = options.get("serialize", False)
        if not isinstance(serialize, bool):
            raise self.error(node, f"qd.loop_config(serialize=...) must be a bool, got "
                             f"{serialize!r}", QuadrantsTypeError)
        for name in ("block_dim", "parallelize"):
            count = options.get(name)
            if count is not None and (isinstance(count, bool) or
                                      not isinstance(count, numbers.Integral) or count <= 0):
                raise self.error(node, f"qd.loop_config({name}=...) must be a positive int "
                                 f"or None, got {count!r}", QuadrantsTypeError)
        block_dim = options.get("block_dim")
        if block_dim is not None and block_dim > 1024:
            raise self.error(node, f"qd.loop_config(block_dim=...) is at most 1024 threads "
                             f"per block, got {block_dim}", QuadrantsTypeError)
        parallelize = options.get("parallelize")
        if not isinstance(options.get("block_dim_adaptive", True), bool):
            raise self.error(node, f"qd.loop_config(block_dim_adaptive=...) must be a bool, "
                             f"got {options['block_dim_adaptive']!r}", QuadrantsTypeError)
        name = options.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise self.error(node, f"qd.loop_config(name=...) must be a non-empty str, got "
                             f"{name!r}", QuadrantsTypeError)
        # One thread is serial execution; more threads only change speed.
        serialize = serialize or parallelize == 1
        if self.pending_loop_config is not None:
            raise self.error(node, "qd.loop_config() is called twice before one loop",
                             QuadrantsSyntaxError)
        self.pending_loop_config = LoopConfig(node, serialize,
                                              None if block_dim is None else int(block_dim),
                                              name)
