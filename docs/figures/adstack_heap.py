"""The adstack heap of one launch against the trip count of its dynamic
loop, with no budget and with a 256 KiB budget (checkpointing), as
qd.lang.runtime.adstack_stats() reports them. usage: adstack_heap.py OUT_DIR"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  pylint: disable=wrong-import-position

import quadrants as qd  # noqa: E402  pylint: disable=wrong-import-position

THREADS = 64
BUDGET = 256 << 10
STEPS = [16, 64, 256, 1024, 4096, 16384]


def heap_bytes(steps, budget):
    qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True, ad_stack_max_bytes=budget,
            cpu_max_num_threads=1, offline_cache=False)
    x = qd.field(qd.f32, shape=THREADS, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def simulate(n: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(n):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v

    with qd.ad.Tape(loss=loss):
        simulate(steps)
    stats = qd.lang.runtime.adstack_stats()
    qd.reset()
    return stats["bytes_needed"]


def main():
    out = sys.argv[1]
    plain = [heap_bytes(s, 0) for s in STEPS]
    budgeted = [heap_bytes(s, BUDGET) for s in STEPS]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.loglog(STEPS, [b / 1024 for b in plain], "o-", label="no budget")
    ax.loglog(STEPS, [b / 1024 for b in budgeted], "s-",
              label=f"ad_stack_max_bytes = {BUDGET >> 10} KiB (checkpointed)")
    ax.axhline(BUDGET / 1024, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("iterations of the dynamic loop")
    ax.set_ylabel("adstack heap of the launch (KiB)")
    ax.set_title(f"{THREADS} threads, one carried f32, cpu")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "adstack_heap.png"), dpi=110)
    for s, a, b in zip(STEPS, plain, budgeted):
        print(f"adstack_heap: {s} iterations: {a} bytes, {b} bytes with the budget")


if __name__ == "__main__":
    main()
