"""Gate-counted adstack heaps: the heap and the time of a gradient whose
adstacks are used only where `sel[i] > 0`, with 5% of 2^20 iterations
passing, gated (ad_stack_sparse_threshold_bytes=0: one heap row per
passing element, counted at launch) against the per-thread heap
(threshold above any heap), measured in one run. Prints the heap bytes,
their ratio to passing x per-thread stride, the times, and whether the
gradients are identical.

    python benchmarks/adstack_gate.py [--arch cpu|cuda|vulkan] [--log2n 20]
"""
import argparse
import time

import numpy as np

import quadrants as qd

FULL = 1 << 62


def measure(arch, threshold, n, sel_np, steps, repeats):
    qd.reset()
    qd.init(arch=arch, ad_stack_experimental_enabled=True, offline_cache=False,
            ad_stack_sparse_threshold_bytes=threshold)
    x = qd.ndarray(qd.f32, shape=(n,), needs_grad=True)
    out = qd.ndarray(qd.f32, shape=(1,), needs_grad=True)
    sel = qd.ndarray(qd.f32, shape=(n,))

    @qd.kernel
    def compute(x: qd.types.NDArray, sel: qd.types.NDArray,
                out: qd.types.NDArray, m: qd.i32):
        for i in range(n):
            if sel[i] > 0:
                v = x[i]
                for _ in range(m):
                    v = qd.sin(v) * 1.05 + 0.05
                out[0] += v

    sel.from_numpy(sel_np)
    x.from_numpy(np.linspace(0.1, 0.6, n).astype(np.float32))
    out.grad.from_numpy(np.ones(1, np.float32))
    compute(x, sel, out, steps)
    compute.grad(x, sel, out, steps)  # compile, count the gate
    qd.sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        compute.grad(x, sel, out, steps)
        qd.sync()
        best = min(best, time.perf_counter() - start)
    stats = qd.lang.runtime.adstack_stats()
    return x.grad.to_numpy(), stats, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda", "vulkan"])
    parser.add_argument("--log2n", type=int, default=20)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    arch = getattr(qd, args.arch)
    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    sel_np = np.zeros(n, np.float32)
    sel_np[rng.choice(n, size=n // 20, replace=False)] = 1.0
    passing = int(sel_np.sum())
    full_grad, full, full_s = measure(arch, FULL, n, sel_np, args.steps, args.repeats)
    gated_grad, gated, gated_s = measure(arch, 0, n, sel_np, args.steps, args.repeats)
    stride = gated["per_thread_stride"][0]
    print(f"arch {args.arch}: 2^{args.log2n} iterations, {passing} pass the gate, "
          f"{args.steps} steps, per-thread stride {stride} B")
    print(f"  per-thread heap: {full['bytes_needed']:>12} B  rows {full['gated_rows'][0]}  "
          f"reverse {full_s * 1e3:.3f} ms")
    print(f"  gated heap:      {gated['bytes_needed']:>12} B  rows {gated['gated_rows'][0]}  "
          f"reverse {gated_s * 1e3:.3f} ms")
    print(f"  gated heap / (passing x stride) = {gated['bytes_needed'] / (passing * stride):.3f}; "
          f"per-thread / gated heap = {full['bytes_needed'] / gated['bytes_needed']:.1f}x; "
          f"time gated / per-thread = {gated_s / full_s:.2f}")
    print(f"  gradients identical: {np.array_equal(full_grad, gated_grad)}")


if __name__ == "__main__":
    main()
