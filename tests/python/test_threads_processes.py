"""Kernels launched from several Python threads at once, and several
processes compiling the same kernels into one offline cache directory.

Threads: each of 8 threads owns its arrays and fields and, for a fixed 10 s
shared by all, launches kernels (some compiled for the first time while the
others launch), their gradients through kernel.grad and qd.ad.Tape, and
Python-scope vector arithmetic. Inputs are small integers, so every result
and gradient is exact in f32 and is compared exactly with its analytic
value (x^3 + 2x has derivative 3x^2 + 2; the loss c * sum(x^2) has gradient
2cx). Anything one thread sees of another's compilation or launch (a kernel
taken for kernel code, another thread's values, a lost tape record) fails.

Processes: 4 fresh interpreters compile the same 50 kernels into one cache
directory at once (waiting for each other first, two in forward order and
two in reverse, so the same entries are written and read concurrently);
each checks its results, no entry may be rejected, and a fifth process
then loads all 50 from the cache.
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import numpy as np

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

THREADS = 8
DURATION_S = 10.0
N = 64

vec1 = qd.types.ndarray(qd.f32, 1)


@qd.kernel
def affine(x: vec1, y: vec1, a: qd.f32, b: qd.f32):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + b


@qd.kernel
def cubic(x: vec1, y: vec1):
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i] * x[i] + 2.0 * x[i]


@qd.kernel
def weighted_sum_of_squares(x: qd.template(), loss: qd.template(), c: qd.f32):
    for i in x:
        loss[None] += c * x[i] * x[i]


@qd.kernel
def scaled(x: vec1, y: vec1, k: qd.template()):
    for i in range(x.shape[0]):
        y[i] = x[i] * k


class _Worker:
    """One thread's arrays, fields and checks."""

    def __init__(self, tid, x_field, loss):
        self.tid = tid
        self.x_field, self.loss = x_field, loss
        self.rounds = 0
        self._new_arrays()

    def _new_arrays(self):
        # Made again now and then, while other threads' tapes clear the
        # gradients of every ndarray that has one.
        self.x = qd.ndarray(qd.f32, N, needs_grad=True)
        self.y = qd.ndarray(qd.f32, N, needs_grad=True)

    def round(self, r):
        tid = self.tid
        xs = ((np.arange(N) + r + 3 * tid) % 9 - 4).astype(np.float32)
        if r % 16 == 15:
            self._new_arrays()
        self.x.from_numpy(xs)

        a, b = float(tid + 1), float(r % 5)
        affine(self.x, self.y, a, b)
        _expect(self.y.to_numpy(), a * xs + b, "affine", tid, r)

        seed = float(r % 3 + 1)
        cubic(self.x, self.y)
        _expect(self.y.to_numpy(), xs ** 3 + 2 * xs, "cubic", tid, r)
        self.x.grad.fill(0)
        self.y.grad.fill(seed)
        cubic.grad(self.x, self.y)
        _expect(self.x.grad.to_numpy(), seed * (3 * xs ** 2 + 2), "cubic.grad", tid, r)

        c = float(tid + 1)
        self.x_field.from_numpy(xs)
        self.x_field.grad.fill(0)
        with qd.ad.Tape(loss=self.loss, clear_gradients=False):
            weighted_sum_of_squares(self.x_field, self.loss, c)
        _expect(np.array([self.loss[None]]), np.array([c * np.sum(xs ** 2)]),
                "tape loss", tid, r)
        _expect(self.x_field.grad.to_numpy(), 2 * c * xs, "tape gradient", tid, r)

        # A new template instance every other round: compiled while the
        # other threads launch (and compile).
        k = 1000 * tid + r // 2
        out = np.zeros(N, dtype=np.float32)
        scaled(xs, out, k)
        _expect(out, xs * k, "scaled", tid, r)

        v = qd.Vector([float(tid), float(r)])
        w = v * 3 + v
        _expect(np.array([w[0], w[1]]), np.array([4.0 * tid, 4.0 * r]), "Python scope",
                tid, r)
        self.rounds += 1


def _expect(got, want, what, tid, r):
    if not np.array_equal(np.asarray(got, dtype=np.float64),
                          np.asarray(want, dtype=np.float64)):
        raise AssertionError(f"thread {tid}, round {r}: {what}: got {got}, want {want}")


@test_utils.test()
def test_threads_launch_kernels_and_gradients_at_once():
    workers = [_Worker(tid, qd.field(qd.f32, shape=N, needs_grad=True, name=f"x{tid}"),
                       qd.field(qd.f32, shape=(), needs_grad=True, name=f"loss{tid}"))
               for tid in range(THREADS)]
    errors = []
    deadline = []
    start = threading.Barrier(
        THREADS, action=lambda: deadline.append(time.monotonic() + DURATION_S))

    def run(worker):
        try:
            start.wait()
            r = 0
            while time.monotonic() < deadline[0]:
                worker.round(r)
                r += 1
        except Exception:  # pylint: disable=broad-except
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    # Threads switch far more often than by default, to interleave them
    # inside compilations and launches.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    qd.sync()
    assert not errors, f"{len(errors)} thread(s) failed; the first:\n{errors[0]}"
    # Every thread got through rounds of its own, concurrently with the others.
    assert all(w.rounds >= 3 for w in workers), [w.rounds for w in workers]
    # The tape state is per thread: nothing is left recording here.
    assert runtime.state.tape is None


KERNELS = 50

# A fresh interpreter: inits with the shared cache, waits until every process
# of its batch is ready, then compiles and checks the 50 kernels and prints
# its cache statistics as JSON.
_SCRIPT = """
import json, os, sys, time
import numpy as np
import quadrants as qd
from quadrants.lang import runtime

arch, cache_dir, ready_dir, index, batch, reverse = sys.argv[1:7]
index, batch, reverse = int(index), int(batch), reverse == "1"
qd.init(arch=getattr(qd, arch), offline_cache=True, offline_cache_file_path=cache_dir)


def make(k):
    @qd.kernel
    def kernel(x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = x[i] * (k + 1) + k % 7
    return kernel


kernels = [make(k) for k in range({kernels})]
open(os.path.join(ready_dir, str(index)), "w").close()
deadline = time.monotonic() + 120
while len(os.listdir(ready_dir)) < batch and time.monotonic() < deadline:
    time.sleep(0.01)
x = np.arange(16, dtype=np.float32)
for k in (reversed(range({kernels})) if reverse else range({kernels})):
    y = np.zeros_like(x)
    kernels[k](x, y)
    if not np.array_equal(y, x * (k + 1) + k % 7):
        sys.exit(f"kernel {{k}}: got {{y}}")
print(json.dumps(runtime.offline_cache_stats()))
""".format(kernels=KERNELS)


def _start(script, arch, cache_dir, ready_dir, index, batch, reverse):
    return subprocess.Popen(
        [sys.executable, str(script), arch.name, str(cache_dir), str(ready_dir), str(index),
         str(batch), "1" if reverse else "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def _finish(process):
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@test_utils.test()
def test_processes_share_one_offline_cache_directory(tmp_path):
    arch = runtime.state.arch
    script = tmp_path / "compile_kernels.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    cache_dir = tmp_path / "cache"
    batch = 4
    ready_dir = tmp_path / "ready"
    ready_dir.mkdir()
    processes = [_start(script, arch, cache_dir, ready_dir, i, batch, reverse=i % 2 == 1)
                 for i in range(batch)]
    stats = [_finish(p) for p in processes]
    for s in stats:
        assert s["directory"] == str(cache_dir / "kernel_compilation_manager")
        assert s["hits"] + s["misses"] == KERNELS, s
        assert s["rejected"] == 0 and s["store_failures"] == 0, s
    # The entries, and the index of their uses the sessions' ends wrote.
    names = sorted(os.listdir(cache_dir / "kernel_compilation_manager"))
    entries = [n for n in names if n.endswith(".qdc")]
    assert len(entries) == KERNELS and names == sorted(entries + ["qdcache.qdb"]), names

    (tmp_path / "ready_last").mkdir()
    last = _finish(_start(script, arch, cache_dir, tmp_path / "ready_last", 0, 1,
                          reverse=False))
    assert (last["hits"], last["misses"], last["rejected"]) == (KERNELS, 0, 0), last
