"""Launch-time adstack sizing (SPEC section 3.4): SizeExpr capture, per-launch
evaluation against live field / ndarray state, the 1 << 24 guard, the caches
and the out-of-grammar fallback.

Every kernel here runs the same recurrence: for each i, v = x[i], then some
number trips[i] of steps v = sin(v) * 0.5 + 0.3 * w[i], then loss += v. So
every test checks, for its bound:

* gradients of x and w against a closed form (forward-mode derivatives of
  the same recurrence in numpy; rel 1e-10) and against f64 central finite
  differences of the forward kernel (h = 1e-6, so round-off ~1e-10 and
  truncation ~1e-13: rel 1e-6, abs 1e-8). dv/dx shrinks like 0.5^trips, but
  dv/dw stays O(1), so long loops still check that every popped primal is
  the right one;
* the exact per-stack capacities reported by adstack_stats(): a loop of K
  trips needs K + 2 slots, maximized over the outer indices its bound
  depends on;
* no overflow: debug=True makes a push past capacity raise at qd.sync(), and
  default_ad_stack_size=2 makes any stack that silently fell back to the
  default overflow, so a passing test proves symbolic sizing. The fallback
  warning is turned into an error below for the same reason.
"""
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

SIZING = dict(ad_stack_experimental_enabled=True, default_ad_stack_size=2,
              default_fp=qd.f64, debug=True,
              require=[qd.extension.adstack, qd.extension.data64])

CLOSED_FORM = dict(rel=1e-10, abs=1e-14)
FD = dict(rel=1e-6, abs=1e-8)

# The fallback to default_ad_stack_size is a failure in every test but the
# one that asks for it (pytest.warns there records instead).
pytestmark = pytest.mark.filterwarnings(
    "error:kernel '[^']*'. the trip count of the loop:UserWarning")

GUARD = 1 << 24


# ---- helpers ---------------------------------------------------------------------

def stats():
    return runtime.adstack_stats()


def capacities():
    """Sorted capacities of every stack of the last launch that used stacks."""
    return sorted(c for task in stats()["capacities"] for c in task)


def counters():
    """(evaluations, cache hits) so far; an evaluation is a host tree walk
    or a run of the Vulkan sizer shader (which sizes data-reading bounds)."""
    s = stats()
    return s["tree_evaluations"] + s["sizer_dispatches"], s["cache_hits"]


def as_container(values, dtype, container):
    """`values` as a qd.ndarray or as a (zero-copy) numpy array argument."""
    values = np.ascontiguousarray(values, dtype=qd.types.to_numpy_dtype(dtype))
    if container == "numpy" or values.size == 0:
        return values  # qd.ndarray refuses an empty shape, as upstream
    array = qd.ndarray(dtype, values.shape)
    array.from_numpy(values)
    return array


def source_line(code, marker):
    """'file:line' of the one line of `code` containing `marker`."""
    lines, start = inspect.getsourcelines(code)
    hits = [start + k for k, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return f"{inspect.getsourcefile(code)}:{hits[0]}"


def reference(xv, wv, trips):
    """Closed form: (loss, d loss/dx, d loss/dw) of the recurrence, with
    trips[i] steps for element i; elements with trips[i] < 0 are not in the
    loss (their index is not iterated)."""
    loss, gx, gw = 0.0, np.zeros(len(xv)), np.zeros(len(xv))
    for i, (x0, w, k) in enumerate(zip(xv, wv, trips)):
        if k < 0:
            continue
        v, dx, dw = x0, 1.0, 0.0
        for _ in range(int(k)):
            d = 0.5 * np.cos(v)
            v, dx, dw = np.sin(v) * 0.5 + 0.3 * w, d * dx, d * dw + 0.3
        loss, gx[i], gw[i] = loss + v, dx, dw
    return loss, gx, gw


class Recurrence:
    """x, w (needs_grad, length n) and a 0-D loss for the kernels above."""

    def __init__(self, n):
        self.n = n
        self.x = qd.field(qd.f64, shape=n, needs_grad=True)
        self.w = qd.field(qd.f64, shape=n, needs_grad=True)
        self.loss = qd.field(qd.f64, shape=(), needs_grad=True)
        self.xv = np.linspace(-0.4, 0.8, n)
        self.wv = np.linspace(0.9, 1.3, n)
        self.x.from_numpy(self.xv)
        self.w.from_numpy(self.wv)

    def forward(self, kernel, *args):
        self.loss[None] = 0
        kernel(*args)
        return self.loss[None]

    def grads(self, kernel, *args):
        """(loss, x.grad, w.grad) from the forward kernel under a Tape; the
        qd.sync() raises if any stack overflowed."""
        self.loss[None] = 0
        with qd.ad.Tape(loss=self.loss):
            kernel(*args)
        qd.sync()
        return self.loss[None], self.x.grad.to_numpy(), self.w.grad.to_numpy()

    def finite_differences(self, kernel, *args, h=1e-6):
        out = []
        for field, base in ((self.x, self.xv), (self.w, self.wv)):
            g = np.zeros(self.n)
            for k in range(self.n):
                for sign in (1, -1):
                    v = base.copy()
                    v[k] += sign * h
                    field.from_numpy(v)
                    g[k] += sign * self.forward(kernel, *args) / (2 * h)
            field.from_numpy(base)
            out.append(g)
        return out

    def check(self, kernel, *args, trips, caps, fd=True):
        """Launches kernel.grad through a Tape and checks capacities (exact),
        the loss and both gradients (closed form, and FD unless fd=False)."""
        loss, gx, gw = self.grads(kernel, *args)
        got_caps = capacities()
        assert got_caps == sorted(caps), stats()
        ref_loss, rx, rw = reference(self.xv, self.wv, trips)
        assert loss == pytest.approx(ref_loss, rel=1e-12, abs=1e-14)
        assert gx == pytest.approx(rx, **CLOSED_FORM), "d loss / dx vs closed form"
        assert gw == pytest.approx(rw, **CLOSED_FORM), "d loss / dw vs closed form"
        if fd:
            fx, fw = self.finite_differences(kernel, *args)
            assert gx == pytest.approx(fx, **FD), "d loss / dx vs finite differences"
            assert gw == pytest.approx(fw, **FD), "d loss / dw vs finite differences"


# ---- 1. a 0-D field bound ----------------------------------------------------------

@test_utils.test(**SIZING)
def test_field_bound_is_sized_exactly_at_every_launch():
    r = Recurrence(4)
    n = qd.field(qd.i32, shape=())
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def field_bound():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    for trips in (1, 20, 50, 1000, 3):  # growing, then shrinking again
        n[None] = trips
        r.check(field_bound, trips=[trips] * r.n, caps=[trips + 2])


# ---- 2. every other leaf of the grammar --------------------------------------------

@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_ndarray_shape_bound(container):
    r = Recurrence(3)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def shape_bound(a: qd.types.ndarray(qd.i32, 2)):
        for i in x:
            v = x[i]
            for _ in range(a.shape[1]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    for shape in ((2, 37), (5, 1), (1, 300), (3, 0)):
        a = as_container(np.zeros(shape), qd.i32, container)
        r.check(shape_bound, a, trips=[shape[1]] * r.n, caps=[shape[1] + 2])


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_read_at_the_outer_parallel_index(container):
    # m is longer than x: its peak (at index 5) is never iterated and must
    # not count.
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def outer_index(m: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for _ in range(m[i]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    for values in ([3, 9, 5, 1, 0, 77], [0, 0, 0, 0, 0, 0], [12, 2, 2, 30, 1, 1]):
        m = as_container(values, qd.i32, container)
        r.check(outer_index, m, trips=values[:4], caps=[max(values[:4]) + 2])


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_2d_read_with_an_enclosing_loop(container):
    # a has one row more than x: row 4 is never read. Its linear offsets
    # (12..14) are also what a transposed (column-major) stride would read for
    # (i, j) = (2, 2), (3, 2), so both a wrong stride and a wrong range show.
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def read_2d(a: qd.types.ndarray(qd.i32, 2)):
        for i in x:
            v = x[i]
            for j in range(a.shape[1]):
                for _ in range(a[i, j]):
                    v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    values = np.array([[1, 2, 3],
                       [4, 0, 6],
                       [2, 8, 0],
                       [1, 1, 1],
                       [40, 50, 60]])
    a = as_container(values, qd.i32, container)
    inner = values[:4].max() + 2
    r.check(read_2d, a, trips=values[:4].sum(axis=1), caps=[3 + 2, inner])


@test_utils.test(**SIZING)
def test_3d_read_with_an_enclosing_loop_and_a_constant_index():
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def read_3d(a: qd.types.ndarray(qd.i32, 3)):
        for i in x:
            v = x[i]
            for j in range(a.shape[1]):
                for _ in range(a[i, j, 1]):
                    v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    values = np.zeros((5, 2, 3), np.int32)
    values[:4, :, 1] = [[0, 1], [2, 3], [7, 4], [5, 6]]
    values[:4, :, 0] = 70  # never read
    values[:4, :, 2] = 80  # never read
    values[4] = 90         # row never iterated
    r.check(read_3d, values, trips=values[:4, :, 1].sum(axis=1), caps=[2 + 2, 7 + 2])


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_stashed_value_reused_as_bound(container):
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def stashed_bound(m: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            k = m[i]
            for _ in range(k):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    values = [3, 17, 5, 2]
    r.check(stashed_bound, as_container(values, qd.i32, container), trips=values,
            caps=[17 + 2])


@test_utils.test(**SIZING)
def test_stashed_loop_index_reused_as_an_index():
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def stashed_index(m: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            k = i
            for _ in range(m[k]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    values = np.array([1, 2, 13, 4, 50], np.int32)  # m[4] is never read
    r.check(stashed_index, values, trips=values[:4], caps=[13 + 2])


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_start_stop_bounds_inside_an_outer_serial_loop(container):
    r = Recurrence(3)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def start_stop(s: qd.types.ndarray(qd.i32, 1), e: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for j in range(s.shape[0]):
                for _ in range(s[j], e[j]):
                    v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    for start, stop in (([2, 5, 0, 9], [4, 15, 3, 1]),   # the last one runs no trip
                        ([100, -4], [103, 2]),
                        ([7], [7])):
        start, stop = np.array(start), np.array(stop)
        per_j = np.maximum(stop - start, 0)
        s = as_container(start, qd.i32, container)
        e = as_container(stop, qd.i32, container)
        r.check(start_stop, s, e, trips=[per_j.sum()] * r.n,
                caps=[len(start) + 2, max(per_j.max() + 2, 2)])


@test_utils.test(**SIZING)
def test_triangular_inner_loop_over_a_struct_for():
    r = Recurrence(10)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def triangular():
        for i in x:
            v = x[i]
            for _ in range(i):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    r.check(triangular, trips=np.arange(r.n), caps=[(r.n - 1) + 2])


@test_utils.test(**SIZING)
def test_triangular_inner_loop_over_a_range_for_with_argument_bounds():
    r = Recurrence(12)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def triangular(lo: qd.i32, hi: qd.i32):
        for i in range(lo, hi):
            v = x[i]
            for _ in range(i):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    for lo, hi in ((3, 9), (0, 12), (5, 6)):
        trips = [i if lo <= i < hi else -1 for i in range(r.n)]
        r.check(triangular, lo, hi, trips=trips, caps=[(hi - 1) + 2])


@test_utils.test(**SIZING)
def test_triangular_inner_loop_over_a_2d_struct_for():
    # Non-square, so confusing the two axes of the struct-for shows.
    x = qd.field(qd.f64, shape=(3, 5), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    xv = np.linspace(-0.3, 0.9, 15).reshape(3, 5)
    x.from_numpy(xv)

    @qd.kernel
    def by_column():
        for i, j in x:
            v = x[i, j]
            for _ in range(j):
                v = qd.sin(v) * 0.5 + 0.3
            loss[None] += v

    @qd.kernel
    def by_row():
        for i, j in x:
            v = x[i, j]
            for _ in range(i):
                v = qd.sin(v) * 0.5 + 0.3
            loss[None] += v

    for kernel, trips, cap in ((by_column, np.tile(np.arange(5), 3), 4 + 2),
                               (by_row, np.repeat(np.arange(3), 5), 2 + 2)):
        loss[None] = 0
        with qd.ad.Tape(loss=loss):
            kernel()
        qd.sync()
        assert capacities() == [cap], stats()
        ref_loss, rx, _ = reference(xv.reshape(-1), np.ones(15), trips)
        assert loss[None] == pytest.approx(ref_loss, rel=1e-12)
        assert x.grad.to_numpy().reshape(-1) == pytest.approx(rx, **CLOSED_FORM)


@test_utils.test(**SIZING)
def test_two_stacks_in_one_task_with_different_bounds():
    r = Recurrence(3)
    n = qd.field(qd.i32, shape=())
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def two_loops(a: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            u = v * 0.5
            for _ in range(a.shape[0] * 2 + 1):
                u = qd.sin(u) * 0.5 + 0.3 * w[i]
            loss[None] += u

    for trips, length in ((40, 3), (2, 25)):
        n[None] = trips
        _, gx, gw = r.grads(two_loops, np.zeros(length, np.int32))
        assert capacities() == sorted([trips + 2, 2 * length + 1 + 2]), stats()
        fx, fw = r.finite_differences(two_loops, np.zeros(length, np.int32))
        assert gx == pytest.approx(fx, **FD)
        assert gw == pytest.approx(fw, **FD)


# ---- 3. bounds mixing two ndarrays of different lengths ----------------------------

# (a, b): matching lengths, a longer, b longer with its peak past a's end, and
# b - a negative everywhere.
MISMATCHED = [
    ([1, 0, 2, 0], [4, 6, 3, 1]),
    ([0, 0, 0, 0, 0], [3, 4]),
    ([0, 0], [3, 4, 1, 1, 50]),
    ([3, 4, 1, 1, 50], [0, 0]),
    ([], [9, 9]),
]


def mismatched_expectation(a, b):
    """(trips per element, capacities) of `mismatched_kernel` for a, b."""
    common = min(len(a), len(b))
    per_j = [max(b[j] - a[j], 0) for j in range(common)]
    inner = max([b[j] - a[j] + 2 for j in range(common)] + [2])
    return sum(per_j), sorted([len(a) + 2, inner])


def mismatched_kernel(x, w, loss):
    @qd.kernel
    def mismatched(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for j in range(a.shape[0]):
                if j < b.shape[0]:  # the kernel itself reads valid elements only
                    for _ in range(b[j] - a[j]):
                        v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v
    return mismatched


def check_mismatched(container):
    r = Recurrence(3)
    kernel = mismatched_kernel(r.x, r.w, r.loss)
    for a, b in MISMATCHED:
        trips, caps = mismatched_expectation(a, b)
        r.check(kernel, as_container(a, qd.i32, container), as_container(b, qd.i32, container),
                trips=[trips] * r.n, caps=caps)


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING)
def test_mismatched_ndarray_lengths(container):
    check_mismatched(container)


@pytest.mark.parametrize("container", ["ndarray", "numpy"])
@test_utils.test(**SIZING, check_out_of_bound=True)
def test_mismatched_ndarray_lengths_with_bounds_checks(container):
    check_mismatched(container)


# Each array is placed flush against a PROT_NONE page, so reading one element
# past either array's end (by the sizer or by the kernel) kills the process.
_GUARD_PAGE_SCRIPT = textwrap.dedent("""
    import ctypes, json, mmap, sys
    import numpy as np
    import quadrants as qd
    from tests.python.test_adstack_sizing import MISMATCHED, mismatched_kernel

    qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True, default_ad_stack_size=2,
            default_fp=qd.f64, debug=True, check_out_of_bound=True)
    PAGE = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    keep = []

    def guarded(values):
        buf = mmap.mmap(-1, 2 * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        assert libc.mprotect(ctypes.c_void_p(base + PAGE), ctypes.c_size_t(PAGE), 0) == 0
        arr = np.frombuffer(buf, dtype=np.int32, count=len(values),
                            offset=PAGE - 4 * len(values))
        arr[:] = values
        keep.append(buf)
        return arr

    x = qd.field(qd.f64, shape=3, needs_grad=True)
    w = qd.field(qd.f64, shape=3, needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array(json.loads(sys.argv[1])))
    w.from_numpy(np.array(json.loads(sys.argv[2])))
    kernel = mismatched_kernel(x, w, loss)
    for a, b in MISMATCHED:
        loss[None] = 0
        with qd.ad.Tape(loss=loss):
            kernel(guarded(a), guarded(b))
        qd.sync()
        stats = qd.lang.runtime.adstack_stats()
        print(json.dumps({"caps": sorted(c for t in stats["capacities"] for c in t),
                          "gx": x.grad.to_numpy().tolist(),
                          "gw": w.grad.to_numpy().tolist()}), flush=True)
""")


@test_utils.test()  # the work runs in a subprocess
def test_mismatched_lengths_sizing_reads_nothing_past_either_array(tmp_path):
    script = tmp_path / "guard_page.py"
    script.write_text(_GUARD_PAGE_SCRIPT)
    xv, wv = np.linspace(-0.4, 0.8, 3), np.linspace(0.9, 1.3, 3)
    repo_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(qd.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([repo_root, package_root] + [p for p in sys.path if p])
    python = sys.executable  # the interpreter (and environment) running the tests
    proc = subprocess.run([python, str(script), json.dumps(xv.tolist()), json.dumps(wv.tolist())],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(MISMATCHED), proc.stdout
    for (a, b), got in zip(MISMATCHED, results):
        trips, caps = mismatched_expectation(a, b)
        assert got["caps"] == caps, (a, b, got)
        _, rx, rw = reference(xv, wv, [trips] * 3)
        assert got["gx"] == pytest.approx(rx, **CLOSED_FORM), (a, b)
        assert got["gw"] == pytest.approx(rw, **CLOSED_FORM), (a, b)


# ---- 4. caches ---------------------------------------------------------------------

class Launches:
    """Runs the grad of one kernel and checks how the sizing counters moved.
    `trips` is a trip count for every element, or one per element."""

    def __init__(self, recurrence, kernel):
        self.r = recurrence
        self.kernel = kernel

    def run(self, *args, trips):
        trips = np.broadcast_to(trips, (self.r.n,))
        before = counters()
        self.r.check(self.kernel, *args, trips=trips, caps=[max(trips.max(), 0) + 2], fd=False)
        after = counters()
        return after[0] - before[0], after[1] - before[1]  # evaluations, hits

    def expect_hit(self, *args, trips):
        assert self.run(*args, trips=trips) == (0, 1), stats()

    def expect_evaluation(self, *args, trips):
        evaluations, hits = self.run(*args, trips=trips)
        assert evaluations >= 1 and hits == 0, stats()


@test_utils.test(**SIZING)
def test_cache_with_a_field_bound():
    r = Recurrence(3)
    n = qd.field(qd.i32, shape=())
    unrelated = qd.field(qd.i32, shape=(2,))
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def field_bound():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    @qd.kernel
    def set_n(k: qd.i32):
        n[None] = k

    @qd.kernel
    def bump_n():
        n[None] += 1

    @qd.kernel
    def set_unrelated(k: qd.i32):
        for i in unrelated:
            unrelated[i] = k

    @qd.kernel
    def read_n_into_unrelated():
        unrelated[0] = n[None]

    launches = Launches(r, field_bound)
    n[None] = 6
    launches.expect_evaluation(trips=6)
    launches.expect_hit(trips=6)  # identical launch
    launches.expect_hit(trips=6)
    n[None] = 11  # host write
    launches.expect_evaluation(trips=11)
    launches.expect_hit(trips=11)
    set_n(4)  # written by another kernel
    launches.expect_evaluation(trips=4)
    bump_n()  # atomically, by another kernel
    launches.expect_evaluation(trips=5)
    n.fill(9)
    launches.expect_evaluation(trips=9)
    n.from_numpy(np.array(3, np.int32))
    launches.expect_evaluation(trips=3)
    unrelated[1] = 100  # unrelated: host write
    launches.expect_hit(trips=3)
    set_unrelated(7)  # unrelated: kernel write
    launches.expect_hit(trips=3)
    unrelated.fill(2)
    launches.expect_hit(trips=3)
    read_n_into_unrelated()  # reading n does not invalidate
    launches.expect_hit(trips=3)
    r.check(field_bound, trips=[3] * r.n, caps=[5])  # finite differences too


@pytest.mark.parametrize("write", ["from_numpy", "setitem", "fill", "kernel"])
@test_utils.test(**SIZING)
def test_cache_with_an_ndarray_bound(write):
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def outer_index(m: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for _ in range(m[i]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    @qd.kernel
    def set_all(m: qd.types.ndarray(qd.i32, 1), k: qd.i32):
        for i in range(m.shape[0]):
            m[i] = k

    @qd.kernel
    def copy_into(src: qd.types.ndarray(qd.i32, 1), dst: qd.types.ndarray(qd.i32, 1)):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    m = qd.ndarray(qd.i32, (4,))
    other = qd.ndarray(qd.i32, (4,))
    m.from_numpy(np.array([3, 1, 2, 4], np.int32))
    launches = Launches(r, outer_index)
    launches.expect_evaluation(m, trips=[3, 1, 2, 4])
    launches.expect_hit(m, trips=[3, 1, 2, 4])
    if write == "from_numpy":
        m.from_numpy(np.array([3, 1, 12, 4], np.int32))
        values = [3, 1, 12, 4]
    elif write == "setitem":
        m[0] = 15
        values = [15, 1, 2, 4]
    elif write == "fill":
        m.fill(7)
        values = [7, 7, 7, 7]
    else:
        set_all(m, 9)
        values = [9, 9, 9, 9]
    launches.expect_evaluation(m, trips=values)
    launches.expect_hit(m, trips=values)
    copy_into(m, other)            # m only read: still valid
    other.fill(1)                  # another ndarray written
    launches.expect_hit(m, trips=values)
    r.check(outer_index, m, trips=values, caps=[max(values) + 2])


@test_utils.test(**SIZING)
def test_numpy_bound_modified_in_place_is_resized():
    # A numpy argument carries no generation counter: an in-place host write
    # must still be seen by the next launch.
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def outer_index(m: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            v = x[i]
            for _ in range(m[i]):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    m = np.array([3, 1, 2, 4], np.int32)
    r.check(outer_index, m, trips=m.copy(), caps=[4 + 2], fd=False)
    m[2] = 25
    before = counters()
    r.check(outer_index, m, trips=m.copy(), caps=[25 + 2])
    assert counters()[0] > before[0], stats()


@test_utils.test(**SIZING)
def test_cache_with_a_scalar_argument_bound():
    r = Recurrence(3)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def arg_bound(k: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(k):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    launches = Launches(r, arg_bound)
    launches.expect_evaluation(7, trips=7)
    launches.expect_hit(7, trips=7)
    launches.expect_evaluation(30, trips=30)
    launches.expect_evaluation(-5, trips=0)  # no trip: the two setup slots
    launches.expect_hit(-5, trips=0)


# ---- 5. the 1 << 24 guard on the serial sizer walk ---------------------------------

def within_length():
    """A long walk that the kernels themselves can run: on Vulkan, lavapipe
    ends the loops of an invocation after 65535 back edges in total, and
    code generation cannot unroll a loop whose body holds a loop, so the
    walk stays well below that there (the reverse kernel passes over it
    several times)."""
    arch = runtime.state.options.get("arch")
    return 8_000 if arch == runtime.vulkan else 1 << 20


def guard_kernel(x, w, loss):
    @qd.kernel
    def walk_every_element(a: qd.types.ndarray(qd.i8, 1)):
        for i in x:
            v = x[i]
            for j in range(a.shape[0]):
                for _ in range(a[j]):
                    v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v
    return walk_every_element


def halved_guard_kernel(x, w, loss):
    # a[j // 2] is outside the max-reducers' grammar: always a serial walk.
    @qd.kernel
    def walk_every_other_element(a: qd.types.ndarray(qd.i8, 1)):
        for i in x:
            v = x[i]
            for j in range(a.shape[0]):
                for _ in range(a[j // 2]):
                    v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v
    return walk_every_other_element


@test_utils.test(**SIZING)
def test_sizer_walk_past_the_guard_raises_naming_the_kernel():
    r = Recurrence(2)
    kernel = guard_kernel(r.x, r.w, r.loss)
    too_long = np.zeros(GUARD + 10, np.int8)
    r.loss[None] = 0
    with pytest.raises(qd.QuadrantsError) as info:
        with qd.ad.Tape(loss=r.loss):
            halved_guard_kernel(r.x, r.w, r.loss)(too_long)
        qd.sync()
    message = str(info.value)
    assert "16777216" in message, message
    assert "walk_every_other_element" in message, message
    del too_long

    # The runtime is still usable, and just inside the guard sizes exactly.
    length = within_length()
    within = np.zeros(length, np.int8)
    within[[5, length * 2 // 3, length - 1]] = [3, 9, 4]
    r.check(kernel, within, trips=[16] * r.n, caps=[length + 2, 9 + 2], fd=False)


@test_utils.test(**SIZING)
def test_sizer_walk_within_the_guard_is_exact():
    r = Recurrence(2)
    kernel = guard_kernel(r.x, r.w, r.loss)
    length = within_length()
    within = np.zeros(length, np.int8)
    within[[0, length // 8, length - 49]] = [2, 11, 5]
    r.check(kernel, within, trips=[18] * r.n, caps=[length + 2, 11 + 2])


# ---- 6. a bound outside the grammar ------------------------------------------------

@test_utils.test(**dict(SIZING, default_ad_stack_size=64))
def test_out_of_grammar_bound_warns_once_and_uses_the_default_size():
    r = Recurrence(3)
    n = qd.field(qd.i32, shape=())
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def halved():
        for i in x:
            v = x[i]
            for _ in range(n[None] >> 1):  # <- shift: outside the grammar
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    where = source_line(inspect.currentframe().f_code, "# <- " + "shift")
    n[None] = 40
    with pytest.warns(UserWarning, match=re.escape(where)) as caught:
        r.check(halved, trips=[20] * r.n, caps=[64])
    mine = [str(m.message) for m in caught if where in str(m.message)]
    assert len(mine) == 1, [str(m.message) for m in caught]
    assert "default_ad_stack_size" in mine[0] and "halved" in mine[0], mine[0]

    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        n[None] = 120  # 60 trips: still within the 64 slots
        r.check(halved, trips=[60] * r.n, caps=[64])
    assert not [m for m in again if "default_ad_stack_size" in str(m.message)], \
        [str(m.message) for m in again]


# ---- integer semantics of the bound ------------------------------------------------

@pytest.mark.parametrize("bound", ["i8_to_u8_cast", "u8_wraparound"])
@test_utils.test(**dict(SIZING, default_ad_stack_size=300))
def test_sign_changing_integer_bound_is_never_undersized(bound):
    r = Recurrence(4)
    x, w, loss = r.x, r.w, r.loss

    @qd.kernel
    def sign_cast(m: qd.types.ndarray(qd.i8, 1)):
        for i in x:
            v = x[i]
            for _ in range(qd.cast(m[i], qd.u8)):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    @qd.kernel
    def wraparound(m: qd.types.ndarray(qd.u8, 1)):
        for i in x:
            v = x[i]
            for _ in range(qd.cast(m[i] - qd.u8(1), qd.i32)):
                v = qd.sin(v) * 0.5 + 0.3 * w[i]
            loss[None] += v

    if bound == "i8_to_u8_cast":
        kernel, m = sign_cast, np.array([1, 2, 3, -1], np.int8)
    else:
        kernel, m = wraparound, np.array([2, 3, 4, 0], np.uint8)
    trips = [1, 2, 3, 255]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback, with its warning, is acceptable here
        _, gx, gw = r.grads(kernel, m)  # raises 'Adstack overflow' when undersized
    assert capacities()[0] >= 255 + 2, stats()
    _, rx, rw = reference(r.xv, r.wv, trips)
    assert gx == pytest.approx(rx, **CLOSED_FORM)
    assert gw == pytest.approx(rw, **CLOSED_FORM)


# ---- the guard on an index computed with floor division ---------------------------

def _halved_index_kernel(out, loss):
    @qd.kernel
    def halved_index(arr: qd.types.ndarray(qd.i64, 1), x: qd.types.ndarray(qd.f64, 1)):
        for i in range(arr.shape[0]):
            v = x[i % 4]
            for _ in range(arr[i // 2]):  # the index is i // 2
                v = qd.sin(v)
            loss[None] += v
    return halved_index


@test_utils.test(**SIZING)
def test_floor_divided_index_over_an_axis_past_the_guard_raises_it():
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    kernel = _halved_index_kernel(None, loss)
    x = np.array([0.1, 0.2, 0.3, 0.4])
    big = np.zeros((1 << 24) + 8, dtype=np.int64)
    loss.grad[None] = 1.0
    with pytest.raises(qd.QuadrantsError) as caught:
        kernel.grad(big, x)
    message = str(caught.value)
    assert "16777216" in message and "halved_index" in message, message

    small = np.zeros(1 << 16, dtype=np.int64)
    small[[10, 4001, 60000]] = [3, 17, 6]
    kernel.grad(small, x)
    qd.sync()
    # i // 2 reaches every element, so the capacity is max + 2.
    assert qd.lang.runtime.adstack_stats()["capacities"][0] == [17 + 2]
