"""Struct-for over a sparse pointer grid against the same kernel over a
dense field, both measured in this run.

The grid has 2^24 cells (4096 x 4096 f32): qd.root.pointer(qd.ij, 128)
.dense(qd.ij, 32), that is 16,384 blocks of 32 x 32. A fraction of the
blocks (none, 1 %, 10 %, and all of them) is activated; the kernel visits
the active cells with `for i, j in x` and runs a recurrence of STEPS steps
on each: a light body (32 steps, memory-bound) and a heavy one (4096
steps, compute-bound). The reference is the same kernel over a dense
4096 x 4096 field. Target, for the heavy body: time(sparse) / time(dense)
<= 3x the active fraction (the ideal ratio). A sparse struct-for pays a
fixed cost (three launches: clear the list, list the active blocks, run),
printed as the time with no block active; with the light body that cost
dominates at 1 %. Each time is the best of REPEATS runs of LAUNCHES
launches and one qd.sync().

Usage: python benchmarks/sparse_struct_for.py [--arch cuda|cpu]
"""
import argparse
import time

import numpy as np

import quadrants as qd

SIDE = 4096
BLOCK = 32
STEPS = (32, 4096)
REPEATS = 5
LAUNCHES = 5


def best_time(fn):
    fn()
    qd.sync()
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            fn()
        qd.sync()
        best = min(best, (time.perf_counter() - start) / LAUNCHES)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), sparse_pool_mb=0)
    if not qd.is_extension_supported(getattr(qd, args.arch), qd.extension.sparse):
        raise SystemExit(f"{args.arch} does not support qd.extension.sparse")

    dense = qd.field(qd.f32, shape=(SIDE, SIDE))
    sparse = qd.field(qd.f32)
    ptr = qd.root.pointer(qd.ij, SIDE // BLOCK)
    ptr.dense(qd.ij, BLOCK).place(sparse)

    @qd.kernel
    def step(x: qd.template(), steps: qd.template()):
        for i, j in x:                  # the active cells of a sparse x
            v = x[i, j]
            for _ in range(steps):
                v = v * 0.999 + 0.001
            x[i, j] = v

    @qd.kernel
    def activate(blocks: qd.types.ndarray()):
        for k in range(blocks.shape[0]):
            qd.activate(ptr, [blocks[k] // (SIDE // BLOCK), blocks[k] % (SIDE // BLOCK)])

    @qd.kernel
    def count() -> qd.i32:
        n = 0
        for i, j in sparse:
            n += 1
        return n

    prog = qd.lang.runtime.program()
    print(f"device: {prog.device_description or args.arch}")
    blocks = (SIDE // BLOCK) ** 2
    worst = 0.0
    for steps in STEPS:
        t_dense = best_time(lambda: step(dense, steps))
        print(f"\n{steps} steps per cell; dense 4096 x 4096 struct-for: "
              f"{t_dense * 1e3:.3f} ms")
        print(f"{'active':>8} {'cells':>10} {'sparse ms':>10} {'ratio':>8} {'ideal':>8} "
              f"{'ratio/ideal':>12}")
        rng = np.random.default_rng(0)
        for fraction in (0.0, 0.01, 0.10, 1.0):
            ptr.deactivate_all()
            chosen = rng.choice(blocks, int(round(blocks * fraction)), replace=False)
            if len(chosen):
                activate(chosen.astype(np.int32))
            cells = count()
            assert cells == len(chosen) * BLOCK * BLOCK, (cells, len(chosen))
            t_sparse = best_time(lambda: step(sparse, steps))
            ideal = cells / SIDE ** 2
            ratio = t_sparse / t_dense
            per_ideal = ratio / ideal if ideal else float("nan")
            print(f"{fraction:>8.0%} {cells:>10} {t_sparse * 1e3:>10.3f} {ratio:>8.4f} "
                  f"{ideal:>8.4f} {per_ideal:>12.2f}")
            if 0 < fraction < 1 and steps == STEPS[-1]:
                worst = max(worst, per_ideal)
    print(f"\nheavy body: worst ratio/ideal at 1% and 10%: {worst:.2f} (target <= 3)")


if __name__ == "__main__":
    main()
