"""The CPU backend's SIMD-lane lowering (cpu_simd=True): each parallel task
runs W consecutive iterations per step as vector lanes. Every kernel here
runs with lanes and with cpu_simd=False and must give the same results
(integers exactly, floats to the ulp that a different order of a sum or a
vector math function allows), across what the lowering masks or
serializes: varying branches, loops whose trip count differs per lane,
break/continue under varying conditions, gathers and scatters, atomics on
one address or many, adstacks whose depth differs per lane, partial last
steps, every element type, and qd.random() streams. A debug log names
the tasks that stay scalar and why.
"""

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


def both(build):
    """build() -> results with lanes, then scalar."""
    out = []
    for simd in (True, False):
        qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False,
                ad_stack_experimental_enabled=True)
        out.append(build())
    return out


def assert_same(lanes, scalar, rtol=0.0):
    for a, b in zip(lanes, scalar):
        a, b = np.asarray(a), np.asarray(b)
        if rtol == 0.0 or not np.issubdtype(a.dtype, np.floating):
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 33, 1000])
def test_branches_loops_and_jumps(n):
    trips = (np.arange(n) * 7919) % 23

    def build():
        k = qd.ndarray(qd.i32, shape=n)
        out = qd.ndarray(qd.i32, shape=n)
        acc = qd.ndarray(qd.f32, shape=n)
        k.from_numpy(trips.astype(np.int32))

        @qd.kernel
        def run(k: qd.types.ndarray(), out: qd.types.ndarray(),
                acc: qd.types.ndarray()):
            for i in range(n):
                if i % 5 == 3:
                    continue  # a varying continue of the parallel loop
                s = 0
                f = 0.0
                for j in range(k[i]):  # per-lane trip count
                    if j % 4 == 1:
                        continue
                    if j * i > 900:
                        break
                    s += j
                    f += qd.sin(qd.cast(j, qd.f32))
                m = 0
                while True:  # exits at a different step per lane
                    if m >= k[i] // 2:
                        break
                    m += 1
                if k[i] > 11:
                    out[i] = s * 100 + m
                else:
                    out[i] = -s
                acc[i] = f

        run(k, out, acc)
        return out.to_numpy(), acc.to_numpy()

    lanes, scalar = both(build)
    expected = np.zeros(n, np.int64)
    for i in range(n):
        if i % 5 == 3:
            continue
        s = 0
        for j in range(trips[i]):
            if j % 4 == 1:
                continue
            if j * i > 900:
                break
            s += j
        expected[i] = s * 100 + trips[i] // 2 if trips[i] > 11 else -s
    np.testing.assert_array_equal(lanes[0], expected)
    assert_same(lanes, scalar, rtol=2.0**-22)


def test_gathers_scatters_and_strides():
    n = 301
    perm = np.random.default_rng(1).permutation(n).astype(np.int32)

    def build():
        p = qd.ndarray(qd.i32, shape=n)
        src = qd.ndarray(qd.f32, shape=2 * n)
        dst = qd.ndarray(qd.f32, shape=n)
        grid = qd.ndarray(qd.i32, shape=(n, 5))
        p.from_numpy(perm)
        src.from_numpy(np.arange(2 * n, dtype=np.float32) * 0.25)
        f2 = qd.field(qd.i32, shape=(7, 9))
        f1 = qd.field(qd.f32, shape=n)

        @qd.kernel
        def run(p: qd.types.ndarray(), src: qd.types.ndarray(),
                dst: qd.types.ndarray(), grid: qd.types.ndarray()):
            for i in range(n):
                dst[p[i]] = src[2 * i + 1] + src[p[i]]  # scatter, stride, gather
                for j in range(5):
                    grid[i, j] = i * 10 + j  # row-major: lanes stride 5
                f1[i] = src[0] + src[n - 1 - i]  # uniform and reversed
            for c in qd.grouped(f2):
                f2[c] = c[0] * 100 + c[1]  # cells of a 2-D struct-for

        run(p, src, dst, grid)
        return dst.to_numpy(), grid.to_numpy(), f1.to_numpy(), f2.to_numpy()

    lanes, scalar = both(build)
    src = np.arange(2 * n, dtype=np.float32) * 0.25
    want = np.zeros(n, np.float32)
    want[perm] = src[2 * np.arange(n) + 1] + src[perm]
    np.testing.assert_array_equal(lanes[0], want)
    np.testing.assert_array_equal(lanes[1], np.arange(n)[:, None] * 10 + np.arange(5))
    np.testing.assert_array_equal(lanes[3], np.arange(7)[:, None] * 100 + np.arange(9))
    assert_same(lanes, scalar)


def test_atomics_one_address_and_many():
    n = 1003

    def build():
        total = qd.field(qd.f32, shape=())
        itotal = qd.field(qd.i32, shape=())
        lo = qd.field(qd.f32, shape=())
        hi = qd.field(qd.i32, shape=())
        bits = qd.field(qd.i32, shape=())
        hist = qd.field(qd.i32, shape=7)
        slot = qd.field(qd.i32, shape=())
        order = qd.field(qd.i32, shape=n)
        ticks = qd.field(qd.i32, shape=())
        seen = qd.field(qd.i32, shape=n)
        lo[None] = 1e9
        hi[None] = -(10**9)

        @qd.kernel
        def run():
            for i in range(n):
                if i % 3 != 0:  # only some lanes take part
                    total[None] += 0.5
                    itotal[None] += i
                    qd.atomic_min(lo[None], qd.cast(i, qd.f32) - 7.5)
                    qd.atomic_max(hi[None], i * 3)
                    qd.atomic_or(bits[None], 1 << (i % 20))
                hist[i % 7] += 1  # colliding addresses within a step
                order[qd.atomic_add(slot[None], 1)] = i  # old value used
                ticks[None] += 1
                seen[i] = ticks[None]  # read back: no deferred sums

        run()
        return (total[None], itotal[None], lo[None], hi[None], bits[None],
                hist.to_numpy(), np.sort(order.to_numpy()), ticks[None],
                seen.to_numpy().min() >= 1)

    lanes, scalar = both(build)
    part = [i for i in range(n) if i % 3 != 0]
    assert lanes[0] == 0.5 * len(part)
    assert lanes[1] == sum(part)
    assert lanes[2] == min(part) - 7.5
    assert lanes[3] == 3 * max(part)
    assert lanes[4] == (1 << 20) - 1
    np.testing.assert_array_equal(lanes[5], np.bincount(np.arange(n) % 7))
    np.testing.assert_array_equal(lanes[6], np.arange(n))
    assert lanes[7] == n and lanes[8]  # each iteration sees its own tick
    assert_same(lanes, scalar)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i32", "i64", "u32"])
def test_chunk_sums_of_unread_targets(dtype):
    """Atomics whose target the task never reads land once per chunk: the
    sums, minima and maxima are those of every iteration, however many
    chunks and threads."""
    n = 100_003

    def build():
        t = getattr(qd, dtype)
        total = qd.field(t, shape=())
        low = qd.field(t, shape=2)
        high = qd.ndarray(t, shape=3)
        low[1] = 10**6
        high.from_numpy(np.zeros(3, high.to_numpy().dtype))

        @qd.kernel
        def run(high: qd.types.ndarray()):
            for i in range(n):
                if i % 7 != 3:
                    total[None] += qd.cast(i % 5, t)
                qd.atomic_min(low[1], qd.cast(i % 1000 + 17, t))
                qd.atomic_max(high[2], qd.cast(i % 977, t))

        run(high)
        return total[None], low[1], high.to_numpy()[2]

    lanes, scalar = both(build)
    i = np.arange(n)
    assert lanes[0] == (i % 5)[i % 7 != 3].sum()
    assert lanes[1] == 17
    assert lanes[2] == 976
    assert_same(lanes, scalar)


def recurrence_loss(x, trips):
    v = x.copy()
    out = np.zeros_like(x)
    for i in range(len(x)):
        w = x[i]
        for j in range(trips[i]):
            w = np.sin(w) * 0.9 + x[i] if j % 3 else np.cos(w) + 0.1 * w
        out[i] = w
    return out.sum()


def test_adstack_with_per_lane_depth_matches_finite_differences():
    """range(k[i]) and a branch on the step: each lane pushes a different
    number of values, so stack depths are per lane (gathers/scatters)."""
    n = 77
    trips = ((np.arange(n) * 13) % 19).astype(np.int32)
    x0 = np.linspace(0.1, 1.2, n)

    def build():
        x = qd.field(qd.f64, shape=n, needs_grad=True)
        k = qd.field(qd.i32, shape=n)
        loss = qd.field(qd.f64, shape=(), needs_grad=True)
        x.from_numpy(x0)
        k.from_numpy(trips)

        @qd.kernel
        def run():
            for i in x:
                w = x[i]
                for j in range(k[i]):
                    if j % 3 != 0:
                        w = qd.sin(w) * 0.9 + x[i]
                    else:
                        w = qd.cos(w) + 0.1 * w
                loss[None] += w

        with qd.ad.Tape(loss=loss):
            run()
        return loss[None], x.grad.to_numpy()

    lanes, scalar = both(build)
    eps = 1e-6
    fd = np.array([(recurrence_loss(x0 + eps * np.eye(n)[i], trips) -
                    recurrence_loss(x0 - eps * np.eye(n)[i], trips)) / (2 * eps)
                   for i in range(n)])
    # f64 central differences: truncation ~eps^2, cancellation ~1e-16/eps.
    np.testing.assert_allclose(lanes[1], fd, rtol=1e-7, atol=1e-8)
    assert lanes[0] == pytest.approx(recurrence_loss(x0, trips), rel=1e-12)
    assert_same(lanes, scalar, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["u1", "i8", "u8", "i16", "u16", "i32", "u32",
                                   "i64", "u64", "f16", "f32", "f64"])
def test_every_element_type(dtype):
    n = 45

    def build():
        t = getattr(qd, dtype)
        a = qd.field(t, shape=n)
        b = qd.field(t, shape=n)

        @qd.kernel
        def run():
            for i in a:
                v = qd.cast(i % 9, t)
                if i % 2 == 0:
                    a[i] = v
                else:
                    a[i] = qd.cast((i * 3) % 5, t)
                b[i] = qd.max(a[i], qd.cast(2, t)) + qd.cast(i % 2, t)

        run()
        return a.to_numpy(), b.to_numpy()

    lanes, scalar = both(build)
    assert_same(lanes, scalar)


def python_floordiv_mod(a, b, signed):
    """Floor division and modulo as the language defines them: Python's signs,
    a zero divisor gives 0 (and a signed modulo by -1), results wrap to the
    type."""
    q = np.zeros_like(a)
    r = np.zeros_like(a)
    mask = (1 << (8 * a.dtype.itemsize)) - 1
    for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        if y != 0:
            q[k] = np.array((x // y) & mask, dtype=np.uint64).astype(a.dtype)
            r[k] = 0 if signed and y == -1 else x % y
    return q, r


@pytest.mark.parametrize("dtype,np_type", [
    ("i8", np.int8), ("i16", np.int16), ("i32", np.int32), ("u8", np.uint8),
    ("u16", np.uint16), ("u32", np.uint32), ("i64", np.int64)])
def test_integer_floordiv_and_mod_in_lanes(dtype, np_type):
    """Lanes divide 32-bit and narrower integers in vector f64 arithmetic;
    every edge of the exact-floor argument: extremes of the type, negative
    operands of each sign, divisors 0 and -1, the most negative value over -1
    (which wraps), and quotients near 2^31."""
    info = np.iinfo(np_type)
    signed = info.min < 0
    edges = [info.min, info.max, 0, 1, -1, 2, -2, 3, -3, 7, -7, info.min + 1,
             info.max - 1, info.max // 2, info.min // 2, 12345, -12345]
    rng = np.random.default_rng(7)
    values = [v for v in edges if info.min <= v <= info.max]
    a = np.array([x for x in values for _ in values]
                 + rng.integers(info.min, info.max, 300, endpoint=True).tolist(),
                 dtype=np_type)
    b = np.array([y for _ in values for y in values]
                 + rng.integers(info.min, info.max, 300, endpoint=True).tolist(),
                 dtype=np_type)
    n = len(a)

    def build():
        t = getattr(qd, dtype)
        xa = qd.field(t, shape=n)
        xb = qd.field(t, shape=n)
        q = qd.field(t, shape=n)
        r = qd.field(t, shape=n)
        xa.from_numpy(a)
        xb.from_numpy(b)

        @qd.kernel
        def run():
            for i in xa:
                q[i] = xa[i] // xb[i]
                r[i] = xa[i] % xb[i]

        run()
        return q.to_numpy(), r.to_numpy()

    lanes, scalar = both(build)
    assert_same(lanes, scalar)
    want_q, want_r = python_floordiv_mod(a, b, signed)
    np.testing.assert_array_equal(lanes[0], want_q)
    np.testing.assert_array_equal(lanes[1], want_r)


def test_debug_log_names_lane_tasks_and_scalar_fallbacks(tmp_path):
    log = test_utils.run_debug_logged("""
        import quadrants as qd
        qd.init(arch=qd.cpu, offline_cache=False)
        f = qd.field(qd.f32, shape=100)
        d = qd.field(qd.f64, shape=100)

        @qd.kernel
        def lanes():
            for i in f:
                f[i] = qd.sin(f[i])

        @qd.kernel
        def wide():
            for i in d:
                d[i] = d[i] * 2.0

        few = qd.field(qd.f32, shape=2)

        @qd.kernel
        def prints():
            for i in few:
                print(few[i])

        lanes()
        wide()
        prints()
        qd.init(arch=qd.cpu, offline_cache=False, cpu_simd=False)
        g = qd.field(qd.f32, shape=100)

        @qd.kernel
        def off():
            for i in g:
                g[i] = 1.0

        off()
    """, tmp_path)
    widths = [line for line in log.splitlines() if "kernel 'lanes'" in line]
    assert widths and "iterations per step in SIMD lanes" in widths[0], log
    lanes = int(widths[0].split(" runs ")[1].split()[0])
    assert lanes in (16, 32, 64)  # four registers of SSE, AVX or AVX-512
    wide = [line for line in log.splitlines() if "kernel 'wide'" in line][0]
    assert f"runs {lanes // 2} iterations per step" in wide  # 64-bit lanes
    prints = [line for line in log.splitlines() if "kernel 'prints'" in line][0]
    assert "runs one iteration at a time: print() in the body" in prints
    assert "kernels.py:" in prints  # the task's source location
    assert "kernel 'off'" not in log  # cpu_simd=False: nothing to decide


def test_offline_cache_hit_keeps_the_lane_count(tmp_path):
    """A cached SIMD-lane task must come back with its lane count: the
    adstack heap is sized for threads x lanes slices, and the gradient of a
    cache hit equals a fresh compile's."""
    n = 203
    x0 = np.linspace(0.2, 1.5, n)

    def session():
        qd.init(arch=qd.cpu, offline_cache=True, offline_cache_file_path=str(tmp_path),
                ad_stack_experimental_enabled=True, cpu_simd=True)
        x = qd.field(qd.f64, shape=n, needs_grad=True)
        k = qd.field(qd.i32, shape=n)
        loss = qd.field(qd.f64, shape=(), needs_grad=True)
        x.from_numpy(x0)
        k.from_numpy((np.arange(n) % 11).astype(np.int32))

        @qd.kernel
        def run():
            for i in x:
                w = x[i]
                for _ in range(k[i]):
                    w = qd.sin(w) + 0.3 * w
                loss[None] += w

        with qd.ad.Tape(loss=loss):
            run()
        stats = qd.lang.runtime.adstack_stats()
        return (x.grad.to_numpy(), stats["heap_bytes"], stats["bytes_needed"],
                qd.lang.runtime.offline_cache_stats()["hits"])

    fresh = session()
    hit = session()
    assert fresh[3] == 0 and hit[3] >= 1
    np.testing.assert_array_equal(hit[0], fresh[0])
    assert hit[1:3] == fresh[1:3]
    threads = qd.lang.runtime.program().num_cpu_threads
    stride = qd.lang.runtime.adstack_stats()["per_thread_stride"][0]
    # f64 values: 32 lanes with AVX-512, 16 with AVX2, 8 with SSE (four
    # registers each); the heap holds a slice per thread and lane.
    assert hit[2] // (threads * stride) in (8, 16, 32)


def test_no_lane_left_after_a_divergent_break_runs_nothing():
    """Once every lane has broken out of an inner loop (at a step where the
    loop's bounds would go on), the rest of that iteration must not run for
    anyone: here it would apply an atomic min to h[8], turning its NaN into
    +inf, although no iteration reaches j == 8."""
    n = 40

    def build():
        c = qd.field(qd.i32, shape=n)
        x = qd.field(qd.f32, shape=n)
        h = qd.field(qd.f32, shape=9)
        c.from_numpy((np.arange(n) % 9).astype(np.int32))  # at most 8
        x.from_numpy(np.linspace(1.0, 2.0, n).astype(np.float32))
        h.from_numpy(np.full(9, np.nan, np.float32))

        @qd.kernel
        def run():
            for i in range(n):
                for j in range(1000):
                    if j >= c[i]:
                        break
                    qd.atomic_min(h[j], x[i])

        run()
        return (h.to_numpy(),)

    lanes, scalar = both(build)
    assert np.isnan(lanes[0][8]), lanes[0]
    np.testing.assert_array_equal(np.isnan(lanes[0]), np.isnan(scalar[0]))


def test_struct_for_over_a_field_of_a_later_axis():
    """A field placed on axis j only is 1-D (its dimension is axis j): the
    struct-for's cell number runs along j, while layout axis i stays 0."""
    m = 64

    def build():
        x = qd.field(qd.f32)
        qd.root.dense(qd.j, m).place(x)
        y = qd.field(qd.f32, shape=4)
        z = qd.field(qd.f32, shape=m)
        y.from_numpy(np.array([3.0, 5.0, 7.0, 11.0], np.float32))

        @qd.kernel
        def run():
            for j in x:
                x[j] = j + 0.5
            for j in x:
                z[j] = y[1] * x[j] + j

        run()
        return (z.to_numpy(),)

    lanes, scalar = both(build)
    np.testing.assert_array_equal(lanes[0], 5.0 * (np.arange(m) + 0.5) + np.arange(m))
    assert_same(lanes, scalar)


@pytest.mark.parametrize("dtype", ["f32", "i32", "f64"])
def test_atomics_on_elements_each_iteration_owns(dtype):
    """a[i] += ... where only iteration i touches a[i] (a gradient's usual
    accumulation) becomes a vector read-modify-write; the same target read
    back, or touched at another index, keeps per-lane atomics. Results and
    the atomics' old values match scalar code."""
    n = 1001

    def build():
        t = getattr(qd, dtype)
        a = qd.field(t, shape=n)
        b = qd.ndarray(t, shape=n)
        c = qd.field(t, shape=n + 1)
        olds = qd.field(t, shape=n)
        a.from_numpy(np.arange(n).astype(a.to_numpy().dtype))

        @qd.kernel
        def run(b: qd.types.ndarray()):
            for i in range(n):
                if i % 3 != 1:
                    olds[i] = qd.atomic_add(a[i], qd.cast(i % 7, t))
                    qd.atomic_max(b[i], qd.cast(i % 5, t))
                    a[i] -= qd.cast(1, t)
                c[i] += qd.cast(1, t)
                c[i + 1] += qd.cast(2, t)  # shared with the next iteration

        run(b)
        return a.to_numpy(), b.to_numpy(), c.to_numpy(), olds.to_numpy()

    lanes, scalar = both(build)
    i = np.arange(n)
    on = i % 3 != 1
    np.testing.assert_array_equal(lanes[0], np.where(on, i + i % 7 - 1, i))
    np.testing.assert_array_equal(lanes[1], np.where(on, i % 5, 0))
    np.testing.assert_array_equal(lanes[2], np.r_[1, np.full(n - 1, 3), 2])
    np.testing.assert_array_equal(lanes[3], np.where(on, i, 0))
    assert_same(lanes, scalar)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000])
def test_random_streams_in_lanes_equal_the_scalar_ones(n):
    """Every iteration draws from its own stream, so lanes give the scalar
    path's numbers bit for bit: several draws of every kind per iteration,
    draws only in the lanes of a varying branch (idle lanes must not
    advance their streams), a varying number of draws per lane, and a
    second launch (a new key)."""
    def build():
        f = qd.field(qd.f32, shape=n)
        g = qd.field(qd.f64, shape=n)
        k = qd.field(qd.i32, shape=n)
        u = qd.field(qd.u64, shape=n)
        b = qd.field(qd.i32, shape=n)

        @qd.kernel
        def draw():
            for i in f:
                f[i] = qd.random()
                if i % 3 == 0:
                    g[i] = qd.random(qd.f64)
                    k[i] = qd.random(qd.i32)
                for _ in range(i % 5):
                    u[i] += qd.random(qd.u64) % 1000
                b[i] = qd.cast(qd.random(qd.u1), qd.i32) + qd.cast(qd.random() * 8, qd.i32)

        draw()
        first = [x.to_numpy() for x in (f, g, k, u, b)]
        draw()
        return first + [f.to_numpy()]

    lanes, scalar = both(build)
    assert_same(lanes, scalar)
    assert len(np.unique(lanes[0])) > 0.9 * n  # streams differ per iteration
    assert not np.array_equal(lanes[0], lanes[-1])  # and per launch


def test_random_task_runs_in_lanes(tmp_path):
    log = test_utils.run_debug_logged("""
        import quadrants as qd
        qd.init(arch=qd.cpu, offline_cache=False)
        f = qd.field(qd.f32, shape=100)

        @qd.kernel
        def draws():
            for i in f:
                f[i] = qd.random()

        draws()
    """, tmp_path)
    line = [line for line in log.splitlines() if "kernel 'draws'" in line][0]
    assert "iterations per step in SIMD lanes" in line, log
