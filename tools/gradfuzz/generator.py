"""Draws random differentiable kernels from a seed and prints them as Python.

A kernel is a tree of statement objects (below) inside one parallel loop.
Every generated kernel stays inside the subset Quadrants supports (README,
"Current limitations"; SPEC 3.1b, the global data access rule):

* inputs x, y (fields), w (ndarray) and state[0, :] are only read;
* state is written only as state[t + 1, i] in a time loop directly inside
  the parallel loop, reading state[t, i] (and state[t + 1, i] after the
  write); the loss only receives atomic adds;
* `continue` / `break` only end an `if` that is a top-level statement of a
  loop body;
* every index stays in bounds: loop variables are below MAX_TRIP <= every
  array length, carried integer indices are reduced modulo the length.

Values stay in the domains of the ops and bounded: every domain-restricted
op squashes its argument with tanh plus an offset (log(1.5 + tanh a) has an
argument in (0.5, 2.5)). floor and ceil jump at integers, and values land
on or next to integers by construction (tanh(0) = 0, cos(acos(0)) = 6e-17 in
f64 but -4e-8 in f32, tanh saturating at 1, a recurrence converging to 0),
where f32 and f64 round to different sides of the jump: their arguments are
shifted by 0.5 so the jumps sit at half-integers instead. Carried floats are
only updated through a bounded function (tanh/sin/cos) or a damped step, so
long loops neither overflow nor turn chaotic. The same seed gives the same kernel.
"""
import copy
import random

# Array extents. Loop variables are < MAX_TRIP, so y, w, c and cnt can be
# indexed by any loop variable; x and state columns by the parallel index.
N = 4            # parallel extent: x, state columns
M = 8            # y, cnt, c
W = 6            # w (its shape bounds loops)
MAX_TRIP = 6     # largest trip count of any serial loop
TS = MAX_TRIP    # state has TS + 1 time rows

# name -> (template, op class). Templates take {a} and {b}.
UNARY_OPS = {
    "sin": ("qd.sin({a})", "smooth"),
    "cos": ("qd.cos({a})", "smooth"),
    "tanh": ("qd.tanh({a})", "smooth"),
    "exp": ("qd.exp(qd.tanh({a}))", "smooth"),
    "neg": ("(-{a})", "smooth"),
    "tan": ("qd.tan(qd.tanh({a}))", "steep"),
    "log": ("qd.log(1.5 + qd.tanh({a}))", "steep"),
    "sqrt": ("qd.sqrt(1.25 + qd.tanh({a}))", "steep"),
    "rsqrt": ("qd.rsqrt(1.25 + qd.tanh({a}))", "steep"),
    "asin": ("qd.asin(0.9 * qd.tanh({a}))", "steep"),
    "acos": ("qd.acos(0.9 * qd.tanh({a}))", "steep"),
    "square": ("({a}) ** 2", "smooth"),
    "abs": ("qd.abs({a})", "kinked"),
    "floor": ("qd.floor({a} + 0.5)", "zero_derivative"),
    "ceil": ("qd.ceil({a} + 0.5)", "zero_derivative"),
}
BINARY_OPS = {
    "add": ("({a} + {b})", "smooth"),
    "sub": ("({a} - {b})", "smooth"),
    "mul": ("({a} * {b})", "smooth"),
    "div": ("({a} / (1.5 + qd.tanh({b})))", "steep"),
    "pow": ("qd.pow(1.25 + qd.tanh({a}), 1.5 * qd.tanh({b}))", "steep"),
    "pow_op": ("(1.25 + qd.tanh({a})) ** qd.tanh({b})", "steep"),
    "atan2": ("qd.atan2({a}, 1.5 + qd.tanh({b}))", "smooth"),
    "min": ("qd.min({a}, {b})", "kinked"),
    "max": ("qd.max({a}, {b})", "kinked"),
}
BOUNDED_UPDATES = ("qd.tanh", "qd.sin", "qd.cos")


# ---- expressions ---------------------------------------------------------------

class Leaf:
    def __init__(self, text, feature=None):
        self.text, self.feature = text, feature

    def render(self):
        return self.text

    def walk(self):
        yield self


class Op:
    def __init__(self, name, args):
        self.name, self.args = name, args

    def render(self):
        template = (UNARY_OPS.get(self.name) or BINARY_OPS[self.name])[0]
        parts = [a.render() for a in self.args]
        return template.format(a=parts[0], b=parts[-1])

    def walk(self):
        yield self
        for arg in self.args:
            yield from arg.walk()


# ---- statements ----------------------------------------------------------------

class Stmt:
    """A statement; `blocks` are its nested statement lists (for shrinking)."""
    blocks = ()

    def exprs(self):
        return []


class Assign(Stmt):
    """A carried float update: `v = f(expr)` with f bounded, or damped."""

    def __init__(self, var, expr, form):
        self.var, self.expr, self.form = var, expr, form

    def lines(self):
        e = self.expr.render()
        if self.form == "damped":
            return [f"{self.var} = 0.5 * {self.var} + 0.5 * qd.tanh({e})"]
        if self.form == "accumulate":
            return [f"{self.var} += 0.25 * qd.sin({e})"]
        return [f"{self.var} = {self.form}({e})"]

    def exprs(self):
        return [self.expr]


class IntStep(Stmt):
    """A carried integer index update, kept in [0, M)."""

    def __init__(self, var, step):
        self.var, self.step = var, step

    def lines(self):
        return [f"{self.var} = ({self.var} + {self.step}) % M"]


class LossAdd(Stmt):
    def __init__(self, expr, form):
        self.expr, self.form = expr, form

    def lines(self):
        e = self.expr.render()
        if self.form == "atomic_add":
            return [f"qd.atomic_add(loss[None], {e})"]
        return [f"loss[None] {self.form} {e}"]

    def exprs(self):
        return [self.expr]


class StateWrite(Stmt):
    def __init__(self, time_var, expr):
        self.time_var, self.expr = time_var, expr

    def lines(self):
        return [f"state[{self.time_var} + 1, i] = qd.tanh({self.expr.render()})"]

    def exprs(self):
        return [self.expr]


class If(Stmt):
    """if/else; with `jump` ('continue'/'break') the then-branch ends with it."""

    def __init__(self, cond, then, orelse=None, jump=None):
        self.cond, self.then, self.orelse, self.jump = cond, then, orelse or [], jump

    @property
    def blocks(self):
        return (self.then, self.orelse)

    def lines(self):
        then = self.then + ([Raw(self.jump)] if self.jump else [])
        # The shrinker may empty the then-branch; Python needs a statement.
        out = [f"if {self.cond}:"] + _indent(then or [Raw("pass")])
        if self.orelse:
            out += ["else:"] + _indent(self.orelse)
        return out


class Loop(Stmt):
    def __init__(self, var, bound, bound_kind, body, time_loop=False):
        self.var, self.bound, self.bound_kind, self.body = var, bound, bound_kind, body
        self.time_loop = time_loop

    @property
    def blocks(self):
        return (self.body,)

    def lines(self):
        return [f"for {self.var} in {self.bound}:"] + _indent(self.body or [Raw("pass")])


class Raw(Stmt):
    def __init__(self, text):
        self.text = text

    def lines(self):
        return [self.text]


def _indent(stmts):
    return ["    " + line for s in stmts for line in s.lines()]


# ---- the kernel ------------------------------------------------------------------

class KernelSpec:
    """A generated kernel: its data, its parallel loop and the body."""

    def __init__(self, seed, parallel, decls, body, data, time_bound=None):
        self.seed, self.parallel, self.decls, self.body = seed, parallel, decls, body
        self.data, self.time_bound = data, time_bound

    def all_stmts(self):
        def walk(stmts):
            for s in stmts:
                yield s
                for block in s.blocks:
                    yield from walk(block)
        return list(walk(self.body))

    def features(self):
        """Feature names present in this kernel (for the summary counts)."""
        feats = {f"parallel:{self.parallel}"}
        for s in self.all_stmts():
            feats.add(type(s).__name__.lower())
            if isinstance(s, Loop):
                feats.add("time_loop" if s.time_loop else f"bound:{s.bound_kind}")
            if isinstance(s, If):
                feats.add(f"jump:{s.jump}" if s.jump else "if_else")
            if isinstance(s, Assign):
                feats.add(f"update:{s.form}")
            for e in s.exprs():
                for node in e.walk():
                    if isinstance(node, Op):
                        feats.add(f"op:{node.name}")
                    elif node.feature:
                        feats.add(node.feature)
        feats.add(f"depth:{_loop_depth(self.body)}")
        return feats

    def op_classes(self):
        classes = set()
        for s in self.all_stmts():
            for e in s.exprs():
                for node in e.walk():
                    if isinstance(node, Op):
                        classes.add((UNARY_OPS.get(node.name) or BINARY_OPS[node.name])[1])
        return classes

    def source(self):
        """Plain, self-contained Python defining DATA, OP_CLASSES and build(fp)."""
        body = []
        if self.parallel.startswith("ndarray"):
            body += ["if i >= N:", "    continue"]
        for name, init in self.decls:
            body.append(f"{name} = {init}")
        body += [line for s in self.body for line in s.lines()]
        final = " + ".join(name for name, _ in self.decls if name.startswith("v")) or "0.0"
        body.append(f"loss[None] += {final}")
        if self.time_bound is not None:
            body.append(f"loss[None] += state[{self.time_bound}, i]")
        kernel_body = "\n".join("            " + line for line in body)
        return _TEMPLATE.format(
            seed=self.seed, features=", ".join(sorted(self.features())),
            N=N, M=M, W=W, TS=TS, data=repr(self.data),
            op_classes=repr(sorted(self.op_classes())), parallel=_PARALLEL[self.parallel],
            body=kernel_body)


def _loop_depth(stmts):
    best = 0
    for s in stmts:
        inner = max((_loop_depth(b) for b in s.blocks), default=0)
        best = max(best, inner + (1 if isinstance(s, Loop) else 0))
    return best


_PARALLEL = {
    "field": "i in x",
    "range": "i in range(N)",
    "ndarray": "i in c",            # c has M > N entries: the body starts with a guard
    "ndarray_shape": "i in range(c.shape[0])",
}

_TEMPLATE = '''\
"""Generated by tools/gradfuzz, seed {seed}.
Features: {features}
"""
import numpy as np
import quadrants as qd

N, M, W, TS = {N}, {M}, {W}, {TS}
# Integer data: the scalar argument n, the field cnt and the ndarray c bound loops.
DATA = {data}
OP_CLASSES = {op_classes}


def build(fp):
    """Fields and the kernel in float type fp; returns them by name."""
    x = qd.field(fp, shape=N, needs_grad=True, needs_dual=True)
    y = qd.field(fp, shape=M, needs_grad=True, needs_dual=True)
    state = qd.field(fp, shape=(TS + 1, N), needs_grad=True, needs_dual=True)
    cnt = qd.field(qd.i32, shape=M)
    loss = qd.field(fp, shape=(), needs_grad=True, needs_dual=True)

    @qd.kernel
    def kern(n: qd.i32, w: qd.types.ndarray(fp, 1), c: qd.types.ndarray(qd.i32, 1)):
        for {parallel}:
{body}

    return dict(kernel=kern, x=x, y=y, state=state, cnt=cnt, loss=loss)
'''


# ---- drawing ---------------------------------------------------------------------

class _Drawer:
    """Draws one kernel; `rng` is a random.Random seeded with the kernel seed."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seed = seed
        self.loop_count = 0

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    # -- expressions

    def leaf(self, scope):
        r = self.rng
        options = [(Leaf(v, "read:carried_float"), 3) for v in scope["floats"]]
        options.append((Leaf("x[i]", "read:x"), 2))
        options.append((Leaf(f"{r.choice([-1, 1]) * round(r.uniform(0.1, 1.0), 2)}",
                             "const"), 1))
        for k in scope["ints"]:
            options.append((Leaf(f"y[{k}]", "read:field_by_carried_int"), 2))
            options.append((Leaf(f"x[{k} % N]", "read:field_by_carried_int"), 1))
            options.append((Leaf(f"w[{k} % W]", "read:ndarray_by_carried_int"), 1))
        for j in scope["loop_vars"]:
            options.append((Leaf(f"y[{j}]", "read:field_by_loop_var"), 1))
            options.append((Leaf(f"w[{j}]", "read:ndarray"), 2))
            options.append((Leaf(f"({j} * 0.25)", "read:loop_var"), 1))
        if scope.get("time_var"):
            t = scope["time_var"]
            options.append((Leaf(f"state[{t}, i]", "read:state"), 4))
            if scope.get("state_written"):
                options.append((Leaf(f"state[{t} + 1, i]", "read:state_just_written"), 1))
        leaves, weights = zip(*options)
        return copy.deepcopy(r.choices(leaves, weights)[0])

    def expr(self, scope, depth=None):
        if depth is None:
            depth = self.rng.randint(1, 3)
        if depth == 0 or self.chance(0.15):
            return self.leaf(scope)
        if self.chance(0.55):
            return Op(self.pick(UNARY_OPS), [self.expr(scope, depth - 1)])
        return Op(self.pick(BINARY_OPS), [self.expr(scope, depth - 1), self.expr(scope, depth - 1)])

    def cond(self, scope):
        r = self.rng
        kinds = ["float"] + (["int"] if scope["ints"] else []) + \
            (["loop_var", "data"] if scope["loop_vars"] else [])
        kind = r.choice(kinds)
        if kind == "float":
            var = r.choice(scope["floats"])
            text = f"{var} {r.choice(['>', '<'])} {round(r.uniform(-0.5, 0.5), 2)}"
        elif kind == "int":
            text = f"{r.choice(scope['ints'])} % {r.randint(2, 3)} == 0"
        elif kind == "loop_var":
            text = f"{r.choice(scope['loop_vars'])} % {r.randint(2, 3)} == 1"
        else:
            text = f"w[{r.choice(scope['loop_vars'])}] > {round(r.uniform(-0.5, 0.5), 2)}"
        if self.chance(0.15):
            other = f"{r.choice(scope['floats'])} > {round(r.uniform(-0.8, 0.2), 2)}"
            text = f"{text} {r.choice(['and', 'or'])} {other}"
        return text

    # -- statements

    def simple(self, scope):
        """A statement without nested blocks."""
        r = self.rng
        roll = r.random()
        if roll < 0.2:
            return LossAdd(self.expr(scope), r.choice(["+=", "+=", "-=", "atomic_add"]))
        if roll < 0.32 and scope["ints"]:
            step = r.choice(["1", "2"] + [f"{j} + 1" for j in scope["loop_vars"]])
            return IntStep(r.choice(scope["ints"]), step)
        form = r.choice(BOUNDED_UPDATES + ("damped", "accumulate"))
        return Assign(r.choice(scope["floats"]), self.expr(scope), form)

    def block(self, scope, depth, in_loop, size=None):
        size = size or self.rng.randint(1, 3)
        stmts = []
        for _ in range(size):
            roll = self.rng.random()
            if roll < 0.25 and depth < scope["max_depth"]:
                stmts.append(self.loop(scope, depth + 1))
            elif roll < 0.42:
                stmts.append(self.if_else(scope, depth, in_loop))
            elif roll < 0.52 and in_loop:
                stmts.append(self.if_jump(scope))
            else:
                stmts.append(self.simple(scope))
        return stmts

    def if_else(self, scope, depth, in_loop):
        cond = self.cond(scope)
        then = self.block(scope, depth + 0, False, self.rng.randint(1, 2)) \
            if self.chance(0.2) else [self.simple(scope) for _ in range(self.rng.randint(1, 2))]
        orelse = [self.simple(scope)] if self.chance(0.6) else []
        return If(cond, then, orelse)

    def if_jump(self, scope):
        cond = self.cond(scope)
        then = [self.simple(scope) for _ in range(self.rng.randint(0, 2))]
        return If(cond, then, jump=self.pick(["continue", "break"]))

    def bound(self, scope):
        r = self.rng
        outer = scope["loop_vars"]
        kinds = ["const", "arg", "field", "ndarray_shape", "ndarray_read", "range_begin"]
        kinds += ["triangular"] * (2 if outer else 1)
        kind = r.choice(kinds)
        index = r.choice(outer + ["i"])
        if kind == "const":
            return f"range({r.randint(1, MAX_TRIP)})", kind
        if kind == "arg":
            return "range(n)", kind
        if kind == "field":
            return f"range(cnt[{index}])", kind
        if kind == "ndarray_shape":
            return "range(w.shape[0])", kind
        if kind == "ndarray_read":
            return f"range(c[{index}])", kind
        if kind == "range_begin":
            return f"range(1, {r.choice(['n', f'c[{index}]', str(r.randint(2, MAX_TRIP))])})", kind
        return f"range({index})", kind

    def loop(self, scope, depth):
        var = f"j{self.loop_count}"
        self.loop_count += 1
        bound, kind = self.bound(scope)
        inner = dict(scope, loop_vars=scope["loop_vars"] + [var])
        body = self.block(inner, depth, True)
        if self.rng.random() < 0.3 and scope["ints"]:
            body.append(IntStep(self.rng.choice(scope["ints"]), f"{var} + 1"))
        return Loop(var, bound, kind, body)

    def time_loop(self, scope):
        r = self.rng
        kind = r.choice(["const", "arg", "ndarray_read", "field"])
        bound = {"const": str(r.randint(1, TS)), "arg": "n", "ndarray_read": "c[i]",
                 "field": "cnt[i]"}[kind]
        inner = dict(scope, loop_vars=scope["loop_vars"] + ["t"], time_var="t")
        write = StateWrite("t", self.expr(inner))
        after = dict(inner, state_written=True)
        body = [write] + self.block(after, 1, False, r.randint(0, 2))
        return Loop("t", f"range({bound})", kind, body, time_loop=True), bound

    def kernel(self):
        r = self.rng
        floats = [f"v{k}" for k in range(r.randint(1, 3))]
        ints = [f"k{k}" for k in range(r.randint(0, 2))]
        decls = [(v, r.choice(["x[i]", "y[i]", "0.5 * x[i] + 0.1", "0.3"])) for v in floats]
        decls += [(k, r.choice(["i", "(i * 3 + 1) % M"])) for k in ints]
        scope = dict(floats=floats, ints=ints, loop_vars=[], max_depth=r.randint(1, 3))
        body = []
        if self.chance(0.1):
            body.append(If(r.choice(["cnt[i] == 0", "x[i] > 0.8"]), [], jump="continue"))
        time_bound = None
        if self.chance(0.35):
            loop, time_bound = self.time_loop(scope)
            body.append(loop)
        body.append(self.loop(scope, 1))
        body += self.block(scope, 0, False, r.randint(0, 2))
        data = dict(n=r.randint(0, MAX_TRIP),
                    cnt=[r.randint(0, MAX_TRIP) for _ in range(M)],
                    c=[r.randint(0, MAX_TRIP) for _ in range(M)])
        parallel = r.choice(sorted(_PARALLEL))
        return KernelSpec(self.seed, parallel, decls, body, data, time_bound)


def generate(seed):
    """The kernel for `seed` (deterministic)."""
    return _Drawer(seed).kernel()
