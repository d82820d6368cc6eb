"""qd.checkpoint: stages of a @qd.kernel(graph=True, checkpoints=True) that
can pause the kernel and resume it later.

`with qd.checkpoint(label, yield_on=flag):` marks a stage; label is an int
or IntEnum member, flag a 0-d i32 ndarray parameter. After the stage runs,
a nonzero flag makes the launch yield: nothing after it runs (but the
kernel's bare statements, its prologue), every do_while loop is left, and
the call returns GraphStatus(yielded=True, checkpoint=label).
`kernel.resume(*args, from_checkpoint=label)` runs the kernel again from
that stage, skipping every stage declared before it. Each top-level for
loop outside an explicit stage (also directly in a do_while body) is a
stage of its own without a label, so a resume skips it too. The flag is
never cleared for you.
"""
import ast
import contextlib
import enum
import numbers

__all__ = ["GraphStatus", "checkpoint"]


class GraphStatus:
    """What a launch of a checkpoints kernel with a yielding stage returns."""

    __slots__ = ("yielded", "checkpoint")

    def __init__(self, yielded, checkpoint=None):
        self.yielded = yielded
        self.checkpoint = checkpoint

    def __repr__(self):
        if self.yielded:
            return f"GraphStatus(yielded=True, checkpoint={self.checkpoint!r})"
        return "GraphStatus(yielded=False)"

    def __eq__(self, other):
        return isinstance(other, GraphStatus) and \
            (self.yielded, self.checkpoint) == (other.yielded, other.checkpoint)

    __hash__ = None


@contextlib.contextmanager
def checkpoint(cp_id, yield_on=None):
    """In a checkpoints kernel: a stage (see the module). Elsewhere: runs its
    body."""
    del cp_id, yield_on
    yield


def is_checkpoint(node):
    """Whether statement `node` is `with <...>.checkpoint(...):`."""
    if not isinstance(node, ast.With) or len(node.items) != 1:
        return False
    call = node.items[0].context_expr
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "checkpoint") or \
        (isinstance(func, ast.Name) and func.id == "checkpoint")


class Arguments:
    """A checkpoint's label and its yield_on expression."""

    def __init__(self, label, yield_on):
        self.label = label
        self.yield_on = yield_on


def parse(node, globals_, error):
    """The Arguments of `with qd.checkpoint(...)` statement `node`; the
    argument-shape errors are upstream's."""
    call = node.items[0].context_expr
    if not call.args and not call.keywords:
        raise error(node, "qd.checkpoint() takes two arguments: `qd.checkpoint(cp_id, "
                    "yield_on=flag)`.")
    if len(call.args) > 2:
        raise error(node, f"qd.checkpoint() takes at most 2 positional arguments (cp_id, "
                    f"yield_on); got {len(call.args)}")
    given = dict(zip(("cp_id", "yield_on"), call.args))
    for keyword in call.keywords:
        if keyword.arg not in ("cp_id", "yield_on"):
            raise error(node, f"qd.checkpoint() got unexpected keyword argument "
                        f"{keyword.arg!r}; only 'cp_id' and 'yield_on' are supported")
        if keyword.arg in given:
            raise error(node, f"qd.checkpoint() got `{keyword.arg}` both positionally and as "
                        f"a keyword")
        given[keyword.arg] = keyword.value
    if "cp_id" not in given:
        raise error(node, "qd.checkpoint() is missing required argument `cp_id` (e.g. "
                    "`qd.checkpoint(0, yield_on=flag)` or `qd.checkpoint(Stage.SIM, "
                    "yield_on=flag)`)")
    if "yield_on" not in given:
        raise error(node, "qd.checkpoint() is missing required argument `yield_on` (e.g. "
                    "`qd.checkpoint(0, yield_on=overflow_flag)`)")
    yield_on = given["yield_on"]
    if not isinstance(yield_on, (ast.Name, ast.Attribute)):
        raise error(node, "qd.checkpoint(yield_on=...) must reference a kernel ndarray "
                    "argument -- e.g. `yield_on=flag` for a bare parameter, "
                    "`yield_on=self.flag` for a @qd.data_oriented member, or "
                    "`yield_on=params.flag` for a @dataclasses.dataclass parameter member; "
                    "arbitrary expressions are not supported")
    return Arguments(_label(node, given["cp_id"], globals_, error), yield_on)


def _label(node, expr, globals_, error):
    """The label: an int literal, a global int, or Enum.MEMBER."""
    value = None
    if isinstance(expr, ast.Constant):
        value = expr.value
    elif isinstance(expr, ast.Name) and expr.id in globals_:
        value = globals_[expr.id]
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and \
            expr.value.id in globals_:
        value = getattr(globals_[expr.value.id], expr.attr, None)
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, enum.IntEnum)):
        raise error(node, f"qd.checkpoint() first argument must be an int literal or an "
                    f"IntEnum value (e.g. `Stage.SIM`). Got an unresolvable expression at "
                    f"line {node.lineno}; pass the label itself, not a computed value")
    return value


def check_body(node, error):
    """A stage's body holds loops and control flow; a bare statement there
    would run whether or not the stage is skipped."""
    for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if inner is not node and is_checkpoint(inner):
            raise error(inner, "qd.checkpoint() cannot be nested inside another "
                        "qd.checkpoint(); checkpoints in the same kernel must be flat "
                        "siblings (a checkpoint inside qd.graph.do_while is fine)")
    for stmt in node.body:
        bare = isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or (
            isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.Constant))
        if bare:
            kind = type(stmt).__name__
            raise error(stmt, f"qd.checkpoint() body cannot contain a bare top-level {kind} "
                        f"statement (line {stmt.lineno}): every top-level statement in a "
                        f"checkpoint must be inside a for-loop (or other control-flow "
                        f"construct), so that it is skipped with the stage on a resume. "
                        f"Wrap the statement in `for _ in range(1):` to keep the original "
                        f"intent:\n\n    with qd.checkpoint(cp_id, yield_on=flag):\n        "
                        f"for _ in range(1):\n            ...")
