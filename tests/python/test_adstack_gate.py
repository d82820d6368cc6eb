"""Gate-counted adstack heaps: a task whose adstacks are all used under one
`if array[index] <op> constant` (indices that map distinct iterations to
distinct elements, an array the kernel never writes) gets, at launch, a
heap of one row per element passing the gate instead of one slice per
thread, when ad_stack_sparse_threshold_bytes is 0 or below the per-thread
heap. Each test compares the gated gradient with the full-heap run of the
same kernel (ad_stack_sparse_threshold_bytes above any heap): every
iteration pushes and pops only its own row, so per-iteration gradients are
bit for bit the same, and with analytic gradients where there are some.
Shapes outside the captured set keep the full heap and say why at debug
log level."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

FULL = 1 << 62  # a threshold no heap reaches: never gated
OPTIONS = dict(require=qd.extension.adstack, ad_stack_experimental_enabled=True,
               cpu_max_num_threads=2)
# Tasks in CPU SIMD lanes keep their threads' slices (a few dozen), so the
# row path is exercised on the CPU with lanes off.
SCALAR = dict(OPTIONS, cpu_simd=False)


def _reinit(threshold, **extra):
    arch = runtime.state.arch
    options = dict(ad_stack_experimental_enabled=True, cpu_max_num_threads=2,
                   cpu_simd=False, offline_cache=False,
                   ad_stack_sparse_threshold_bytes=threshold)
    options.update(extra)
    qd.reset()
    qd.init(arch=arch, **options)


def _stats():
    return qd.lang.runtime.adstack_stats()


def _selection(n, fraction, seed=0):
    rng = np.random.default_rng(seed)
    sel = np.zeros(n, np.float32)
    sel[rng.choice(n, size=int(round(fraction * n)), replace=False)] = 1.0
    return sel


def _ndarray_recurrence(n, sel_np, steps=8, x0=None):
    """Gradient of sum over gated i of the recurrence v <- sin(v) * 1.05 +
    0.05 from x[i], gated by an ndarray; returns (x.grad, stats)."""
    x = qd.ndarray(qd.f32, shape=(n,), needs_grad=True)
    out = qd.ndarray(qd.f32, shape=(1,), needs_grad=True)
    sel = qd.ndarray(qd.f32, shape=(n,))

    @qd.kernel
    def compute(x: qd.types.NDArray, sel: qd.types.NDArray,
                out: qd.types.NDArray, m: qd.i32):
        for i in range(n):
            if sel[i] > 1e-9:
                v = x[i]
                for _ in range(m):
                    v = qd.sin(v) * 1.05 + 0.05
                out[0] += v

    sel.from_numpy(sel_np)
    if x0 is None:
        x0 = 0.1 + 0.5 * np.arange(n) / n
    x.from_numpy(x0.astype(np.float32))
    out.grad.from_numpy(np.ones(1, np.float32))
    compute(x, sel, out, steps)
    compute.grad(x, sel, out, steps)
    return x.grad.to_numpy(), _stats()


@test_utils.test(**SCALAR)
def test_five_percent_gate_over_a_million_iterations_pays_for_passing_rows():
    n = 1 << 20
    sel = _selection(n, 0.05)
    passing = int(sel.sum())
    _reinit(FULL)
    want, full = _ndarray_recurrence(n, sel)
    assert full["gated_rows"] == [0]
    _reinit(0)
    got, gated = _ndarray_recurrence(n, sel)
    stride = gated["per_thread_stride"][0]
    assert gated["gated_rows"] == [passing]
    assert gated["bytes_needed"] == passing * stride
    assert gated["heap_bytes"] <= 1.2 * passing * stride
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got) == passing


@test_utils.test(**OPTIONS)
def test_heap_never_exceeds_the_passing_rows_whatever_the_backend_runs():
    # With SIMD lanes the CPU keeps threads x lanes slices, fewer than the
    # passing rows; the other backends gate. Either way the heap stays
    # within 1.2 x passing rows.
    n = 1 << 20
    sel = _selection(n, 0.05)
    passing = int(sel.sum())
    _reinit(0, cpu_simd=True)
    got, stats = _ndarray_recurrence(n, sel)
    stride = stats["per_thread_stride"][0]
    assert stats["bytes_needed"] <= 1.2 * passing * stride
    assert stats["heap_bytes"] <= 1.2 * passing * stride
    assert np.count_nonzero(got) == passing


@pytest.mark.parametrize("fraction", [0.0, 0.05, 0.5, 1.0])
@test_utils.test(**SCALAR)
def test_gate_pass_fractions_match_the_chain_rule(fraction):
    # v <- sin(v) * c + d: d out / d x[i] is the product of c cos(v_k) along
    # i's trajectory where the gate passes, 0 elsewhere (f64 reference; f32
    # kernel, 8 steps: 1e-5 relative). A heap forced to 32 slots per stack,
    # as upstream's tests do, with debug checks, makes a wrong row mapping
    # overflow.
    n, steps, c = 256, 8, 1.05
    _reinit(0, ad_stack_size=32, debug=True)
    sel_np = _selection(n, fraction, seed=1)
    x0 = np.linspace(0.1, 0.4, n)
    got, stats = _ndarray_recurrence(n, sel_np, steps, x0=x0)
    assert stats["gated_rows"] == [max(int(sel_np.sum()), 1)]
    v, slope = x0.copy(), np.ones(n)
    for _ in range(steps):
        slope *= c * np.cos(v)
        v = np.sin(v) * c + 0.05
    want = np.where(sel_np > 0, slope, 0.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)


def _field_kernels(shape, sel_np, kind):
    """Gradients of a gated 2-D kernel over fields: a struct-for over the
    gate field, or an ndrange whose flat index the gate splits."""
    sel = qd.field(qd.f32, shape=shape)
    x = qd.field(qd.f32, shape=shape, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    sel.from_numpy(sel_np)
    x.from_numpy(np.linspace(0.2, 0.9, sel_np.size).reshape(shape)
                 .astype(np.float32))

    if kind == "struct_for":
        @qd.kernel
        def compute(m: qd.i32):
            for i, j in sel:
                if sel[i, j] >= 0.5:
                    v = x[i, j]
                    for _ in range(m):
                        v = qd.sin(v) + 0.1 * v
                    loss[None] += v
    else:
        @qd.kernel
        def compute(m: qd.i32):
            for i, j in qd.ndrange(shape[0], shape[1]):
                if 0.5 <= sel[i, j]:
                    v = x[i, j]
                    for _ in range(m):
                        v = qd.sin(v) + 0.1 * v
                    loss[None] += v

    compute(6)
    loss.grad[None] = 1.0
    compute.grad(6)
    return x.grad.to_numpy(), _stats()


@pytest.mark.parametrize("kind", ["struct_for", "ndrange"])
@test_utils.test(**SCALAR)
def test_field_gates_of_two_axes_match_the_full_heap(kind):
    shape = (48, 40)
    sel = _selection(shape[0] * shape[1], 0.1, seed=2).reshape(shape)
    _reinit(FULL)
    want, _ = _field_kernels(shape, sel, kind)
    _reinit(0)
    got, stats = _field_kernels(shape, sel, kind)
    assert stats["gated_rows"] == [int(sel.sum())]
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got) == int(sel.sum())


def _typed_gates(case):
    """(x.grad, stats, passing) of a kernel gated by an i32 equality, an
    f64 threshold, or a slice of a 2-D ndarray chosen by an argument."""
    n = 512
    rng = np.random.default_rng(3)
    x = qd.ndarray(qd.f32, shape=(n,), needs_grad=True)
    out = qd.ndarray(qd.f32, shape=(1,), needs_grad=True)
    x.from_numpy(rng.random(n).astype(np.float32))
    out.grad.from_numpy(np.ones(1, np.float32))
    if case == "i32":
        gate_np = rng.integers(0, 4, n).astype(np.int32)
        gate = qd.ndarray(qd.i32, shape=(n,))
        passing = int((gate_np == 2).sum())

        @qd.kernel
        def compute(x: qd.types.NDArray, g: qd.types.NDArray,
                    out: qd.types.NDArray, k: qd.i32, r: qd.i32):
            for i in range(n):
                if g[i] == 2:
                    v = x[i]
                    for _ in range(k):
                        v = qd.sin(v) * v
                    out[0] += v
    elif case == "f64":
        gate_np = np.where(rng.random(n) < 0.3, 1.0, 0.25)
        gate = qd.ndarray(qd.f64, shape=(n,))
        passing = int((gate_np > 0.5).sum())

        @qd.kernel
        def compute(x: qd.types.NDArray, g: qd.types.NDArray,
                    out: qd.types.NDArray, k: qd.i32, r: qd.i32):
            for i in range(n):
                if g[i] > 0.5:
                    v = x[i]
                    for _ in range(k):
                        v = qd.sin(v) * v
                    out[0] += v
    else:
        gate_np = (rng.random((3, n)) < 0.2).astype(np.float32)
        gate = qd.ndarray(qd.f32, shape=(3, n))
        passing = int(gate_np[1].sum())

        @qd.kernel
        def compute(x: qd.types.NDArray, g: qd.types.NDArray,
                    out: qd.types.NDArray, k: qd.i32, r: qd.i32):
            for i in range(n):
                if g[r, i] != 0.0:
                    v = x[i]
                    for _ in range(k):
                        v = qd.sin(v) * v
                    out[0] += v
    gate.from_numpy(gate_np)
    compute(x, gate, out, 5, 1)
    compute.grad(x, gate, out, 5, 1)
    return x.grad.to_numpy(), _stats(), passing


@pytest.mark.parametrize("case", ["i32", "f64", "argument_slice"])
@test_utils.test(require=[qd.extension.adstack, qd.extension.data64],
                 ad_stack_experimental_enabled=True, cpu_max_num_threads=2)
def test_integer_double_and_sliced_gates_count_what_the_kernel_tests(case):
    _reinit(FULL)
    want, _, _ = _typed_gates(case)
    _reinit(0)
    got, stats, passing = _typed_gates(case)
    assert stats["gated_rows"] == [passing]
    np.testing.assert_array_equal(got, want)


FALLBACKS = {
    "modulo": "may map several iterations to one element",
    "indirect": "is not a loop index digit",
    "constant": "may map several iterations to one element",
    "else": "in an else branch",
}


@pytest.mark.parametrize("shape", sorted(FALLBACKS))
@test_utils.test(**SCALAR)
def test_shapes_outside_the_captured_set_keep_the_full_heap_and_say_why(shape, capfd):
    n = 96
    _reinit(0, log_level="debug")
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    sel = qd.field(qd.f32, shape=n)
    perm = qd.field(qd.i32, shape=n)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.1, 0.7, n).astype(np.float32))
    sel.from_numpy(_selection(n, 0.3, seed=4))
    perm.from_numpy(np.random.default_rng(5).permutation(n).astype(np.int32))

    def body(i, m):
        v = x[i]
        for _ in range(m):
            v = qd.sin(v) + 0.5 * v
        loss[None] += v

    @qd.kernel
    def compute(m: qd.i32):
        for i in range(n):
            if qd.static(shape == "modulo"):
                if sel[i % 7] > 0.5:
                    body(i, m)
            elif qd.static(shape == "indirect"):
                if sel[perm[i]] > 0.5:
                    body(i, m)
            elif qd.static(shape == "constant"):
                if sel[3] > 0.5:
                    body(i, m)
            else:
                if sel[i] > 0.5:
                    pass
                else:
                    body(i, m)

    capfd.readouterr()
    compute(4)
    loss.grad[None] = 1.0
    compute.grad(4)
    err = capfd.readouterr().err
    assert "adstack heap sized for every thread, not gated: " in err, err
    assert FALLBACKS[shape] in err, err
    assert _stats()["gated_rows"] == [0]


@test_utils.test(**SCALAR)
def test_captured_gate_is_logged_and_its_count_is_cached_until_the_array_changes(capfd):
    n = 2048
    _reinit(0, log_level="debug")
    capfd.readouterr()
    x = qd.ndarray(qd.f32, shape=(n,), needs_grad=True)
    out = qd.ndarray(qd.f32, shape=(1,), needs_grad=True)
    sel = qd.ndarray(qd.f32, shape=(n,))

    @qd.kernel
    def compute(x: qd.types.NDArray, sel: qd.types.NDArray,
                out: qd.types.NDArray):
        for i in range(n):
            if sel[i] > 0.5:
                v = x[i]
                for _ in range(3):
                    v = qd.sin(v)
                out[0] += v

    first = _selection(n, 0.1, seed=6)
    sel.from_numpy(first)
    compute.grad(x, sel, out)
    assert "adstack heap gated by sel[i0] > 0.5" in capfd.readouterr().err
    assert _stats()["gated_rows"] == [int(first.sum())]
    counts = _stats()["gate_counts"]
    compute.grad(x, sel, out)
    assert _stats()["gate_counts"] == counts  # unchanged array: cached
    second = _selection(n, 0.3, seed=7)
    sel.from_numpy(second)
    compute.grad(x, sel, out)
    assert _stats()["gate_counts"] == counts + 1
    assert _stats()["gated_rows"] == [int(second.sum())]


@test_utils.test(**SCALAR)
def test_threshold_gates_only_heaps_above_it():
    # The per-thread heap of this launch (whatever the backend dispatches)
    # is B bytes for T threads: a threshold of B leaves it alone, without
    # counting; B - 1 counts the gate and gates the heap if the passing
    # rows are fewer than T (CPU threads are few: then it stays).
    n = 1024
    sel = _selection(n, 0.05)
    passing = int(sel.sum())
    _reinit(FULL)
    want, stats = _ndarray_recurrence(n, sel)
    per_thread = stats["bytes_needed"]
    threads = per_thread // stats["per_thread_stride"][0]
    _reinit(per_thread)
    _, stats = _ndarray_recurrence(n, sel)
    assert stats["gated_rows"] == [0] and stats["gate_counts"] == 0
    _reinit(per_thread - 1)
    got, stats = _ndarray_recurrence(n, sel)
    assert stats["gate_counts"] == 1
    assert stats["gated_rows"] == [passing if passing < threads else 0]
    np.testing.assert_array_equal(got, want)
