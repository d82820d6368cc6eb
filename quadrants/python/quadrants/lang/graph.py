"""qd.graph: control flow between the parallel loops of a @qd.kernel(graph=True).

`while qd.graph.do_while(counter):` repeats its body while the 0-d i32
ndarray `counter` is nonzero after an iteration (the body runs at least
once). `with qd.graph.parallel_context():` holds `with qd.graph.parallel():`
sections, independent work the kernel may run in any order; here they run
one after another.

A kernel using do_while is split at its loops: each run of statements
between them compiles as a part of the kernel (with the kernel's
parameters), and the launch runs the parts in order, reading the counter
back after each iteration (the documented host-checked form of the loop).
Called outside kernels these names do what Python would: do_while(c) is
bool(c) and the two contexts run their bodies.
"""
import ast
import contextlib
import warnings

from quadrants.lang import checkpoint as checkpoint_module
from quadrants.lang import tensor as tensor_module
from quadrants.lang.ndarray import Ndarray

__all__ = ["do_while", "parallel", "parallel_context"]

_NAMES = ("do_while", "parallel_context", "parallel")


def do_while(condition):
    """In a graph kernel: `while qd.graph.do_while(counter):`. Elsewhere:
    bool(condition)."""
    return bool(condition)


@contextlib.contextmanager
def parallel_context():
    """In a graph kernel: a region of qd.graph.parallel() sections. Elsewhere:
    runs its body."""
    yield


@contextlib.contextmanager
def parallel():
    """In a graph kernel: one section of a qd.graph.parallel_context()
    region. Elsewhere: runs its body."""
    yield


def matches(func_node, name):
    """Whether call target `func_node` spells qd.graph.<name> (or graph.<name>,
    or the deprecated flat qd.graph_<name> / graph_<name>)."""
    if isinstance(func_node, ast.Attribute):
        if func_node.attr == name:
            owner = func_node.value
            return (isinstance(owner, ast.Attribute) and owner.attr == "graph") or \
                (isinstance(owner, ast.Name) and owner.id == "graph")
        return func_node.attr == f"graph_{name}"
    return isinstance(func_node, ast.Name) and func_node.id == f"graph_{name}"


def is_deprecated_spelling(func_node, name):
    """Whether the call spells the flat qd.graph_<name>."""
    return matches(func_node, name) and (
        (isinstance(func_node, ast.Attribute) and func_node.attr == f"graph_{name}") or
        isinstance(func_node, ast.Name))


def warn_if_deprecated(func_node, name):
    if is_deprecated_spelling(func_node, name):
        warnings.warn(f"qd.graph_{name}() is deprecated and will be removed in a future "
                      f"release; use qd.graph.{name}() instead.", DeprecationWarning,
                      stacklevel=2)


def is_do_while(node):
    """Whether statement `node` is `while qd.graph.do_while(...):`."""
    return isinstance(node, ast.While) and isinstance(node.test, ast.Call) and \
        matches(node.test.func, "do_while")


def uses_do_while(function_node):
    return any(is_do_while(n) for n in ast.walk(function_node))


# ---- the plan of a kernel split at its do_while loops ------------------------

class Stage:
    """A checkpoint: its place in source order among all stages, its label
    (None for a for loop made a stage of its own) and its yield_on."""

    def __init__(self, index, label, yield_on):
        self.index = index
        self.label = label
        self.yield_on = yield_on


class Segment:
    """Statements compiled and launched together; a checkpoint's body when
    `stage` is set, else statements that always run."""

    def __init__(self, statements, stage=None):
        self.statements = statements
        self.stage = stage
        self.kernel = None  # the compiled part, made by the kernel


class Loop:
    """`while qd.graph.do_while(counter): body`."""

    def __init__(self, node, counter, body):
        self.node = node
        self.counter = counter  # the argument expression (Name / Attribute chain)
        self.body = body        # a list of Segment and Loop

    def last_stage(self):
        """The highest stage index in the body (None without stages)."""
        indices = [step.stage.index for step in self.body
                   if isinstance(step, Segment) and step.stage is not None]
        indices += [i for step in self.body if isinstance(step, Loop)
                    for i in [step.last_stage()] if i is not None]
        return max(indices) if indices else None


class Stages:
    """The stages of a checkpoints kernel, numbered as the plan meets them."""

    def __init__(self, globals_):
        self.globals = globals_
        self.all = []

    def add(self, label, yield_on):
        stage = Stage(len(self.all), label, yield_on)
        self.all.append(stage)
        return stage

    def labelled(self):
        return [s for s in self.all if s.label is not None]


_ALLOWED = (ast.For, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.If, ast.Pass,
            ast.With)


def plan(kernel_name, statements, error, top=True, stages=None, strict=True, each=False):
    """Segments and Loops of `statements`; `error(node, message)` makes the
    QuadrantsSyntaxError of a statement the split cannot take. With
    `stages` (a checkpoints kernel) each `with qd.checkpoint` and each for
    loop becomes a stage of its own. `strict`: the kernel uses do_while, so
    only the statement kinds a split body may hold are allowed. `each`:
    every statement is a segment of its own (the gradient's replay)."""
    steps, pending = [], []
    where = "the kernel body" if top else "a qd.graph.do_while() body"

    def flush():
        if pending:
            steps.append(Segment(list(pending)))
            pending.clear()

    for index, node in enumerate(statements):
        if stages is not None and checkpoint_module.is_checkpoint(node):
            arguments = checkpoint_module.parse(node, stages.globals, error)
            if any(s.label == arguments.label for s in stages.labelled()):
                raise error(node, f"qd.checkpoint(cp_id={arguments.label!r}, ...) declares a "
                            f"cp_id that is already used by another checkpoint in kernel "
                            f"{kernel_name!r}. Each `cp_id` label must be unique within a "
                            f"kernel so that resume(from_checkpoint=...) names one stage")
            checkpoint_module.check_body(node, error)
            flush()
            steps.append(Segment(node.body, stages.add(arguments.label, arguments.yield_on)))
            continue
        if stages is not None and isinstance(node, ast.For):
            flush()
            steps.append(Segment([node], stages.add(None, None)))
            continue
        if is_do_while(node):
            if node.orelse:
                raise error(node, "'else' clause for 'while' not supported in Quadrants "
                            "kernels")
            call = node.test
            warn_if_deprecated(call.func, "do_while")
            if len(call.args) != 1 or call.keywords:
                raise error(node, "qd.graph.do_while() takes one argument: the 0-d i32 "
                            "ndarray counter (`while qd.graph.do_while(counter):`)")
            flush()
            steps.append(Loop(node, call.args[0],
                              plan(kernel_name, node.body, error, False, stages, strict, each)))
            continue
        if strict and not isinstance(node, _ALLOWED):
            kind = type(node).__name__
            raise error(node, f"When a kernel uses qd.graph.do_while(), {where} may not "
                        f"contain a {kind} statement. Allowed: for-loops, "
                        f"qd.graph.do_while() while-loops, bare assignments, and @qd.func "
                        f"calls (freely mixed and nested). [offending stmt {index}: {kind}]")
        pending.append(node)
        if each:
            flush()
    flush()
    return steps


def resolve_array(kernel_name, expr, statement, bound, error, usage="qd.graph.do_while(...)"):
    """The ndarray `expr` (a Name or Attribute chain) names, from the
    launch's arguments by parameter name (`bound`)."""
    label = ast.unparse(expr)
    chain = []
    node = expr
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    value = None
    if isinstance(node, ast.Name) and node.id in bound:
        value = bound[node.id]
        for attr in reversed(chain):
            value = getattr(value, attr, None)
    value = tensor_module.unwrap(value)
    if not isinstance(value, Ndarray):
        raise error(statement, f"{usage} got {label!r} which does not resolve "
                    f"to an ndarray kernel parameter of {kernel_name!r}. The argument must "
                    f"reference an ndarray kernel parameter (e.g. `flag`) or a "
                    f"@qd.data_oriented member ndarray (e.g. `self.flag`); other "
                    f"expressions are not supported.")
    if value.shape not in ((), (1,)) or not value._scalar.is_integral:
        raise error(statement, f"{usage.replace('...', label)}: the flag must be a 0-d i32 "
                    f"ndarray, got one of shape {value.shape} and dtype {value._scalar}")
    return value


def counter_value(array):
    return int(array[()] if array.shape == () else array[0])


class RunState:
    """A launch's progress through the stages: the first stage to run (a
    resume) and the yield, once one fired."""

    def __init__(self, resume=0):
        self.resume = resume
        self.yielded = False
        self.label = None


def run(steps, bound, launch, kernel_name, error, state):
    """Runs a plan: `launch(segment)` for each Segment, and each Loop as a
    do-while on its counter read back after every iteration. Stages before
    the resume point are skipped (in a loop, on its first iteration only),
    and after a yield only the statements outside stages run."""
    for step in steps:
        if isinstance(step, Segment):
            stage = step.stage
            if stage is None:
                launch(step)
            elif not state.yielded and stage.index >= state.resume:
                launch(step)
                if stage.yield_on is not None and counter_value(resolve_array(
                        kernel_name, stage.yield_on, step.statements[0], bound, error,
                        "qd.checkpoint(yield_on=...)")) != 0:
                    state.yielded, state.label = True, stage.label
            continue
        last = step.last_stage()
        if state.yielded or (last is not None and last < state.resume):
            continue
        counter = resolve_array(kernel_name, step.counter, step.node, bound, error)
        while True:
            run(step.body, bound, launch, kernel_name, error, state)
            state.resume = 0
            if state.yielded or counter_value(counter) == 0:
                break
