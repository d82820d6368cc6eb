"""Checkpointed reverse mode under ad_stack_max_bytes.

Two measurements, each in this run:
  1. The recurrence of adstack_recurrence.py (v = sin(v) * a + x[i], f32,
     a dynamic trip count) over THREADS threads x ITERATIONS iterations,
     unbudgeted and then under a budget (cuda: 512 MiB against about 4.4 GB
     of exact stacks; cpu: an eighth of the exact need). Printed: forward,
     reverse and fwd+rev times of both runs, the reverse-time ratio
     budgeted / unbudgeted (target <= 2.0: one extra forward per segment
     puts the floor near 1.5), the segment length the launch chose, the
     heap against the budget, and the largest gradient difference.
  2. (cuda, or --particles on cpu) a particle whose 3-D position and
     velocity (6 f32 values) are carried through PARTICLE_STEPS steps of a
     damped, coupled oscillator, over PARTICLE_THREADS threads, under a
     4 GiB budget (unbudgeted, the stacks would need threads x steps x 24
     bytes). Printed: its time, the segment length, the heap, and the
     gradient of 64 sampled threads against an f64 forward-mode reference
     computed here with numpy (target: 1e-4 relative to the largest entry).
"""
import argparse
import os
import sys
import time

import numpy as np

import quadrants as qd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from progress import phase  # pylint: disable=wrong-import-position

A = 0.9
DT = 1e-3
STIFFNESS = (1.0, 1.7, 2.3)
DAMPING = 0.05
COUPLING = 0.3
SAMPLES = 64


def timed(fn, repeats):
    fn()
    qd.sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        qd.sync()
        times.append(time.perf_counter() - start)
    return min(times)


def recurrence_run(arch, threads, iterations, budget, repeats):
    """(forward s, reverse s, x.grad, adstack stats) under `budget` (0: none)."""
    qd.init(arch=arch, ad_stack_experimental_enabled=True, ad_stack_max_bytes=budget)
    x = qd.field(qd.f32, shape=threads, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy((0.1 + 0.5 * np.arange(threads) / threads).astype(np.float32))

    @qd.kernel
    def recurrence(steps: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(steps):
                v = qd.sin(v) * A + x[i]
            loss[None] += v

    forward = timed(lambda: recurrence(iterations), repeats)

    def gradient():
        x.grad.fill(0)
        loss.grad[None] = 1.0
        recurrence.grad(iterations)
    gradient()
    qd.sync()
    stats = qd.lang.runtime.adstack_stats()
    reverse = timed(lambda: recurrence.grad(iterations), repeats)
    gradient()
    grad = x.grad.to_numpy()
    qd.reset()
    return forward, reverse, grad, stats


def describe(stats):
    segments = sorted({k for task in stats["segments"] for k in task if k > 0})
    return (f"segments {segments or 'none'}, heap {stats['heap_bytes'] / 2**20:.1f} MiB, "
            f"budget {stats['budget_bytes'] / 2**20:.1f} MiB, per-thread stride "
            f"{stats['per_thread_stride'][0]} B")


def recurrence_main(arch, threads, iterations, budget, repeats):
    phase(f"recurrence: {threads} threads x {iterations} iterations, unbudgeted")
    f0, r0, g0, s0 = recurrence_run(arch, threads, iterations, 0, repeats)
    if budget is None:
        budget = s0["bytes_needed"] // 8
    phase(f"recurrence: under a {budget}-byte budget")
    f1, r1, g1, s1 = recurrence_run(arch, threads, iterations, budget, repeats)
    exact = threads * (iterations + 2) * 4
    print(f"{threads} threads x {iterations} iterations of v = sin(v) * a + x[i] (f32, "
          f"{arch}); exact stacks for every thread: {exact / 2**30:.2f} GiB")
    print(f"  unbudgeted: forward {f0 * 1e3:9.3f} ms  reverse {r0 * 1e3:9.3f} ms  "
          f"fwd+rev {(f0 + r0) * 1e3:9.3f} ms  ({describe(s0)})")
    print(f"  budgeted:   forward {f1 * 1e3:9.3f} ms  reverse {r1 * 1e3:9.3f} ms  "
          f"fwd+rev {(f1 + r1) * 1e3:9.3f} ms  ({describe(s1)})")
    rel = np.max(np.abs(g1 - g0) / np.maximum(np.abs(g0), 1e-30))
    print(f"  reverse budgeted / unbudgeted = {r1 / r0:.2f}  (target <= 2.0); "
          f"fwd+rev ratio = {(f1 + r1) / (f0 + r0):.2f}; heap within budget: "
          f"{s1['heap_bytes'] <= budget}; gradient max relative difference {rel:.2e}")


def particle_reference(p0):
    """d(loss)/d(p0) for each sampled particle, in f64 forward mode: p0 has
    shape (3, S); returns (3, S)."""
    k = np.array(STIFFNESS)[:, None]
    p = p0.astype(np.float64).copy()
    v = np.zeros_like(p)
    # Tangents along each of the 3 initial-position axes: (axis, 3, S).
    dp = np.stack([np.eye(3)[a][:, None] * np.ones_like(p) for a in range(3)])
    dv = np.zeros_like(dp)
    for _ in range(PARTICLE_STEPS):
        roll = np.roll(p, -1, axis=0)
        droll = np.roll(dp, -1, axis=1)
        acc = -k * p - DAMPING * v + COUPLING * np.sin(roll)
        dacc = -k * dp - DAMPING * dv + COUPLING * np.cos(roll) * droll
        v = v + DT * acc
        dv = dv + DT * dacc
        p = p + DT * v
        dp = dp + DT * dv
    weights = np.array([1.0, 2.0, 3.0])[None, :, None]
    return np.sum(dp * weights, axis=1)


def particles_main(arch, threads, steps, budget):
    global PARTICLE_STEPS  # pylint: disable=global-statement
    PARTICLE_STEPS = steps
    qd.init(arch=arch, ad_stack_experimental_enabled=True, ad_stack_max_bytes=budget)
    px = qd.field(qd.f32, shape=threads, needs_grad=True)
    py = qd.field(qd.f32, shape=threads, needs_grad=True)
    pz = qd.field(qd.f32, shape=threads, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    rng = np.random.default_rng(0)
    start = rng.uniform(-1.0, 1.0, size=(3, threads)).astype(np.float32)
    for field, row in zip((px, py, pz), start):
        field.from_numpy(row)
    kx, ky, kz = STIFFNESS

    @qd.kernel
    def simulate(n: qd.i32):
        for i in px:
            x, y, z = px[i], py[i], pz[i]
            vx, vy, vz = 0.0, 0.0, 0.0
            for _ in range(n):
                ax = -kx * x - DAMPING * vx + COUPLING * qd.sin(y)
                ay = -ky * y - DAMPING * vy + COUPLING * qd.sin(z)
                az = -kz * z - DAMPING * vz + COUPLING * qd.sin(x)
                vx += DT * ax
                vy += DT * ay
                vz += DT * az
                x += DT * vx
                y += DT * vy
                z += DT * vz
            loss[None] += x + 2.0 * y + 3.0 * z

    phase(f"particles: {threads} threads x {steps} steps, forward")
    t0 = time.perf_counter()
    simulate(steps)
    qd.sync()
    forward = time.perf_counter() - t0
    phase("particles: reverse under the budget")
    loss.grad[None] = 1.0
    t0 = time.perf_counter()
    simulate.grad(steps)
    qd.sync()
    reverse = time.perf_counter() - t0
    stats = qd.lang.runtime.adstack_stats()
    picks = np.linspace(0, threads - 1, SAMPLES).astype(np.int64)
    ours = np.stack([f.grad.to_numpy()[picks] for f in (px, py, pz)])
    phase("particles: f64 forward-mode reference (numpy)")
    want = particle_reference(start[:, picks])
    rel = np.max(np.abs(ours - want)) / np.max(np.abs(want))
    unbudgeted = threads * (steps + 2) * 24
    print(f"{threads} threads x {steps} steps of a 3-D particle (6 carried f32, {arch}) under "
          f"a {budget / 2**30:.2f} GiB budget; unbudgeted stacks would take "
          f"{unbudgeted / 2**30:.0f} GiB")
    print(f"  forward {forward:.3f} s  reverse {reverse:.3f} s  ({describe(stats)})")
    print(f"  heap within budget: {stats['heap_bytes'] <= budget}; gradient of {SAMPLES} "
          f"sampled threads vs f64 reference: max difference / max entry = {rel:.2e} "
          f"(target <= 1e-4)")
    qd.reset()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=["cpu", "cuda", "vulkan"], default="cpu")
    parser.add_argument("--threads", type=int, help="recurrence threads")
    parser.add_argument("--iterations", type=int, help="recurrence iterations")
    parser.add_argument("--budget", type=int,
                        help="recurrence budget in bytes (cpu default: an eighth of the need)")
    parser.add_argument("--particles", action="store_true", help="run part 2 on cpu/vulkan too")
    parser.add_argument("--particle-threads", type=int, default=1 << 20)
    parser.add_argument("--particle-steps", type=int, default=1 << 16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    arch = getattr(qd, args.arch)
    gpu = args.arch != "cpu"
    threads = args.threads or (1 << 20 if gpu else 1 << 14)
    iterations = args.iterations or (4096 if gpu else 16384)
    budget = args.budget if args.budget is not None else (512 << 20 if gpu else None)
    recurrence_main(arch, threads, iterations, budget, args.repeats)
    if gpu or args.particles:
        particles_main(arch, args.particle_threads, args.particle_steps, 4 << 30)


if __name__ == "__main__":
    main()
