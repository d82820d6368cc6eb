"""The gradfuzz oracle: checks one generated kernel module.

This file only imports numpy and quadrants, so its source is appended
verbatim to every repro file (runner.repro_source) and a failure is a
single runnable script.

A module defines N, M, W, TS, DATA, OP_CLASSES and build(fp) (see
generator.py). Its float inputs are x (field), y (field), state[0, :]
(field row) and w (ndarray); the loss is loss[None]. For one draw of input
values the checks are:

  fd        f64 kernel.grad against central differences of the f64 forward
            kernel (per op class step and tolerance, OP_CLASS_FD below);
  tape      qd.ad.Tape against kernel.grad (same gradient kernel);
  fwd       qd.ad.FwdMode tangents (fields only: forward mode treats
            ndarrays as constants) against kernel.grad;
  f32       the f32 kernel's loss and Tape gradient against f64;
  budget    (checkpoint mode, not run by default) the f64 kernel.grad again
            with every checkpointable loop run in segments of 1 to 4
            iterations (ad_stack_segment_length, by seed), against the
            unbudgeted kernel.grad.

Jumps (floor, ceil, branches on floats) and kinks (abs, min, max) make the
loss piecewise smooth. A finite difference that straddles a jump, or an f32
rounding that flips a branch, fails one draw of inputs without any bug; it
happens in a vanishing fraction of draws. So a failing draw is retried with
two fresh draws and the kernel fails when at least 2 of the 3 draws fail:
a wrong derivative fails every draw that reaches it.
"""
import re

import numpy as np
import quadrants as qd

EPS64 = float(np.finfo(np.float64).eps)

# Op class -> (relative step h / max(1, |v|), relative tolerance of a
# gradient entry, measured against the largest entry of the gradient).
#
# The central difference of a smooth loss has truncation error h^2 |f'''| / 6
# and round-off about eps64 * (1 + |loss|) / h (the absolute term below).
# * smooth (+ - * sin cos tanh exp atan2 square neg): h = 1e-6 is near the
#   optimum eps^(1/3); truncation ~1e-12 |f'''|, so rtol 1e-6 leaves margin
#   for f''' up to ~1e5 times the gradient.
# * steep (div log sqrt rsqrt tan asin acos pow): arguments are squashed
#   away from the singularities (distance >= 0.25 for rsqrt/sqrt/log/div,
#   |asin arg| <= 0.9, |tan arg| < 1), but higher derivatives are still
#   ~10^2..10^3 larger; rtol 1e-5.
# * kinked (abs min max) and zero_derivative (floor ceil): piecewise smooth;
#   a difference straddling a kink or jump is wrong without any bug, with a
#   probability proportional to h, so the step is 10x smaller (1e-7); the
#   round-off term grows 10x with it (it is in the absolute tolerance).
OP_CLASS_FD = {
    "smooth": (1e-6, 1e-6),
    "steep": (1e-6, 1e-5),
    "kinked": (1e-7, 1e-6),
    "zero_derivative": (1e-7, 1e-6),
}
# Forward vs reverse mode, and Tape vs kernel.grad, in f64: the same
# chain-rule products summed in a different order (atomics from 2 threads,
# tangents vs adjoints); each sum of <= ~10^3 terms is off by a few eps times
# the sum of magnitudes, bounded by ~10^3 times the gradient: rtol 1e-9 and
# 1e-11 (Tape and kernel.grad run the same gradient kernel).
FWD_REV_RTOL = 1e-9
TAPE_RTOL = 1e-11
# f32 against f64: eps32 = 6e-8 per rounding; a gradient entry is a sum of
# chain-rule products along paths of up to a few hundred roundings (loops of
# up to 6^3 iterations of short expressions), with the squashed ops' factors
# <= ~3: 1e-3 relative to the largest entry (and |loss|) covers that.
F32_RTOL = 1e-3
# Checkpointed against unbudgeted kernel.grad in f64: the same operations
# per thread; only atomic adds from 2 threads may sum in another order.
BUDGET_RTOL = 1e-11
DRAWS = 3          # input draws for a kernel that fails its first draw
FAILS_NEEDED = 2   # failing draws (of DRAWS) that make a mismatch


def fd_step_and_rtol(op_classes):
    classes = op_classes or ["smooth"]
    return (min(OP_CLASS_FD[c][0] for c in classes), max(OP_CLASS_FD[c][1] for c in classes))


def draw_inputs(mod, seed, draw):
    rng = np.random.default_rng([seed, draw])
    return dict(x=rng.uniform(-1, 1, mod.N), y=rng.uniform(-1, 1, mod.M),
                s0=rng.uniform(-1, 1, mod.N), w=rng.uniform(-1, 1, mod.W))


class Instance:
    """The module's fields and kernel built in one float type, with data."""

    def __init__(self, mod, fp):
        self.mod, self.fp = mod, fp
        self.f = mod.build(fp)
        self.np_fp = np.float64 if fp == qd.f64 else np.float32
        self.w = qd.ndarray(fp, mod.W, needs_grad=True)
        self.c = qd.ndarray(qd.i32, mod.M)
        self.c.from_numpy(np.array(mod.DATA["c"], dtype=np.int32))
        self.f["cnt"].from_numpy(np.array(mod.DATA["cnt"], dtype=np.int32))
        self.args = (mod.DATA["n"], self.w, self.c)

    def load(self, inputs):
        f, cast = self.f, (lambda a: np.asarray(a, dtype=self.np_fp))
        f["x"].from_numpy(cast(inputs["x"]))
        f["y"].from_numpy(cast(inputs["y"]))
        state = np.zeros((self.mod.TS + 1, self.mod.N))
        state[0] = inputs["s0"]
        f["state"].from_numpy(cast(state))
        self.w.from_numpy(cast(inputs["w"]))
        f["loss"][None] = 0

    def loss(self, inputs):
        self.load(inputs)
        self.f["kernel"](*self.args)
        return float(self.f["loss"][None])

    def _grads(self):
        f = self.f
        return dict(x=f["x"].grad.to_numpy(), y=f["y"].grad.to_numpy(),
                    s0=f["state"].grad.to_numpy()[0], w=self.w.grad.to_numpy())

    def kernel_grad(self, inputs):
        f = self.f
        self.load(inputs)
        for name in ("x", "y", "state"):
            f[name].grad.fill(0)
        self.w.grad.fill(0)
        f["kernel"](*self.args)
        f["loss"].grad[None] = 1
        f["kernel"].grad(*self.args)
        return _as_f64(self._grads())

    def tape_grad(self, inputs):
        self.load(inputs)
        with qd.ad.Tape(loss=self.f["loss"]):
            self.f["kernel"](*self.args)
        return _as_f64(self._grads())

    def tangents(self, inputs):
        """d loss / d input by forward mode, one unit seed per field entry."""
        out = {}
        for name, field, count in (("x", "x", self.mod.N), ("y", "y", self.mod.M),
                                   ("s0", "state", self.mod.N)):
            size = int(np.prod(self.f[field].shape))
            out[name] = np.zeros(count)
            for j in range(count):
                seed = [0.0] * size
                seed[j] = 1.0      # state is row-major: entry j of row 0
                self.load(inputs)
                with qd.ad.FwdMode(loss=self.f["loss"], param=self.f[field], seed=seed):
                    self.f["kernel"](*self.args)
                out[name][j] = self.f["loss"].dual[None]
        return out

    def central_differences(self, inputs, h_rel):
        out = {}
        for name, values in inputs.items():
            out[name] = np.zeros(len(values))
            for j, v in enumerate(values):
                h = h_rel * max(1.0, abs(v))
                plus, minus = _with(inputs, name, j, v + h), _with(inputs, name, j, v - h)
                out[name][j] = (self.loss(plus) - self.loss(minus)) / (2 * h)
        return out


def _with(inputs, name, j, value):
    changed = {k: v.copy() for k, v in inputs.items()}
    changed[name][j] = value
    return changed


def _as_f64(grads):
    return {k: np.asarray(v, dtype=np.float64) for k, v in grads.items()}


def compare(got, want, rtol, atol, names=None):
    """None when every entry agrees, else a description of the worst one.

    An entry agrees when |got - want| <= atol + rtol * scale, scale being
    the largest |want| over all inputs (the gradient's own size)."""
    names = names or list(want)
    scale = max([float(np.max(np.abs(want[n]))) for n in names if len(want[n])] + [0.0])
    worst = None
    for n in names:
        err = np.abs(got[n] - want[n])
        if not np.all(np.isfinite(got[n])):
            return f"{n}: non-finite {got[n]}"
        excess = err - (atol + rtol * scale)
        k = int(np.argmax(excess))
        if excess[k] > 0 and (worst is None or excess[k] > worst[0]):
            worst = (excess[k], f"{n}[{k}]: got {got[n][k]!r}, want {want[n][k]!r} "
                                f"(|diff| {err[k]:.3g} > {atol:.3g} + {rtol:g} * {scale:.3g})")
    return None if worst is None else worst[1]


def init(arch, fp, threads, budget=0, segment_length=0):
    qd.init(arch=getattr(qd, arch), default_fp=fp, ad_stack_experimental_enabled=True,
            offline_cache=False, cpu_max_num_threads=threads, ad_stack_max_bytes=budget,
            ad_stack_segment_length=segment_length)


def budget_grad(mod, seed, inputs, arch, threads):
    """kernel.grad in f64 with loops in segments of 1 + seed % 4 iterations,
    and whether a loop ran segmented."""
    init(arch, qd.f64, threads, segment_length=1 + seed % 4)
    try:
        grad = Instance(mod, qd.f64).kernel_grad(inputs)
        segments = qd.lang.runtime.adstack_stats()["segments"]
        return grad, any(k > 0 for task in segments for k in task)
    finally:
        qd.reset()


def check_draw(mod, seed, draw, arch="cpu", threads=2, checks=("fd", "tape", "fwd", "f32"),
               stats=None):
    """Failures of one input draw as {check: message}; exceptions propagate.
    `stats`, a dict, receives the largest |gradient entry| ('grad_max')."""
    inputs = draw_inputs(mod, seed, draw)
    h_rel, rtol = fd_step_and_rtol(mod.OP_CLASSES)
    failures = {}
    init(arch, qd.f64, threads)
    try:
        inst = Instance(mod, qd.f64)
        loss64 = inst.loss(inputs)
        if not np.isfinite(loss64):
            return {"nonfinite": f"loss {loss64}"}
        grad = inst.kernel_grad(inputs)
        if stats is not None:
            stats["grad_max"] = max(float(np.max(np.abs(g))) for g in grad.values())
        roundoff = 100 * EPS64 * (1 + abs(loss64)) / h_rel
        if "fd" in checks:
            _note(failures, "fd", compare(grad, inst.central_differences(inputs, h_rel),
                                          rtol, roundoff))
        if "tape" in checks:
            _note(failures, "tape", compare(inst.tape_grad(inputs), grad, TAPE_RTOL, 1e-14))
        if "fwd" in checks:
            _note(failures, "fwd", compare(inst.tangents(inputs), grad, FWD_REV_RTOL, 1e-13,
                                           names=["x", "y", "s0"]))
    finally:
        qd.reset()
    if "budget" in checks:
        bounded, segmented = budget_grad(mod, seed, inputs, arch, threads)
        if stats is not None:
            stats["segmented"] = segmented
        _note(failures, "budget", compare(bounded, grad, BUDGET_RTOL, 1e-14))
    if "f32" in checks:
        init(arch, qd.f32, threads)
        try:
            inst = Instance(mod, qd.f32)
            loss32 = inst.loss(inputs)
            scale = F32_RTOL * (1 + abs(loss64))
            if not abs(loss32 - loss64) <= scale:
                failures["f32"] = f"loss: f32 {loss32!r}, f64 {loss64!r}"
            else:
                _note(failures, "f32", compare(inst.tape_grad(inputs), grad, F32_RTOL, 1e-6))
        finally:
            qd.reset()
    return failures


def _note(failures, check, message):
    if message is not None:
        failures[check] = message


def check_module(mod, seed, arch="cpu", threads=2, checks=("fd", "tape", "fwd", "f32"),
                 stats=None):
    """Checks a module over up to DRAWS input draws.

    Returns (status, details): status is 'ok', 'flaky' (one draw of DRAWS
    failed: a jump or a branch flip, see the module docstring), 'mismatch',
    'compile_error' (a QuadrantsCompilationError or QuadrantsSyntaxError) or
    'error' (any other exception)."""
    failed = []
    for draw in range(DRAWS):
        try:
            failures = check_draw(mod, seed, draw, arch, threads, checks, stats)
        except (qd.QuadrantsCompilationError, qd.QuadrantsSyntaxError) as err:
            return "compile_error", f"{type(err).__name__}: {err}"
        except Exception as err:  # pylint: disable=broad-except
            return "error", f"{type(err).__name__}: {err}"
        if failures:
            failed.append((draw, failures))
        if len(failed) >= FAILS_NEEDED:
            return "mismatch", failed
        if draw == 0 and not failed:
            return "ok", []
    return ("flaky", failed) if failed else ("ok", [])


def failure_key(status, details):
    """What a shrunk kernel must keep failing with: the status plus, for a
    mismatch, the checks that failed in every failing draw, else the first
    line of the error without file names, line and statement numbers."""
    if status in ("compile_error", "error"):
        first_line = str(details).splitlines()[0] if str(details) else ""
        return (status, re.sub(r"\S+\.py:\d+:?|\$\d+|\d+", "", first_line))
    if status != "mismatch":
        return (status,)
    common = set.intersection(*(set(f) for _, f in details))
    return (status,) + tuple(sorted(common))
