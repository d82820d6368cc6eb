"""Vulkan (SPIR-V) against the CPU backend, in one run.

Times a saxpy-like kernel (y[i] = a * x[i] + y[i] over an ndarray of 2^22
f32) and a reduction (sum of x[i] * x[i] into a scalar with atomic adds)
on qd.vulkan and on qd.cpu, each the best of several launches after a
warm-up (compile excluded), and prints vulkan/cpu time ratios. On a
machine whose only Vulkan device is Mesa's lavapipe, the "GPU" is the same
CPU, so only the ratio means anything: it shows the cost of the Vulkan
path (SPIR-V through lavapipe's LLVM backend, its thread pool, command
submission and fences) against the native LLVM CPU backend.

usage: python3 benchmarks/vulkan_vs_cpu.py [--log2-n 22] [--repeats 7]
"""
import argparse
import time

import numpy as np

import quadrants as qd
from progress import phase


def best_time(fn, repeats):
    fn()  # compile and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        qd.sync()
        best = min(best, time.perf_counter() - start)
    return best


def measure(arch, n, repeats):
    qd.init(arch=arch, offline_cache=False)
    try:
        x = qd.ndarray(qd.f32, shape=(n,))
        y = qd.ndarray(qd.f32, shape=(n,))
        total = qd.field(qd.f32, shape=())
        values = np.random.default_rng(0).random(n, dtype=np.float32)
        x.from_numpy(values)
        y.from_numpy(values[::-1].copy())

        @qd.kernel
        def saxpy(a: qd.f32, x: qd.types.ndarray(), y: qd.types.ndarray()):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

        @qd.kernel
        def reduce(x: qd.types.ndarray()):
            for i in range(x.shape[0]):
                total[None] += x[i] * x[i]

        phase(f"{arch.name}: saxpy and reduction")
        t_saxpy = best_time(lambda: saxpy(0.5, x, y), repeats)
        total[None] = 0.0
        t_reduce = best_time(lambda: reduce(x), repeats)
        # Both backends must compute the sum: 2^22 f32 adds into one value
        # round at each add (about 2^-24 of ~1.4e6 apiece), hence 1%.
        total[None] = 0.0
        reduce(x)
        expected = float(np.sum(values.astype(np.float64) ** 2))
        got = total[None]
        assert abs(got - expected) <= 1e-2 * expected, (arch, got, expected)
        return t_saxpy, t_reduce
    finally:
        qd.reset()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-n", type=int, default=22)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n = 1 << args.log2_n
    from quadrants.lang import runtime  # pylint: disable=import-outside-toplevel
    reason = runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        raise SystemExit(f"vulkan is not available here: {reason}")
    cpu = measure(qd.cpu, n, args.repeats)
    vulkan = measure(qd.vulkan, n, args.repeats)
    print(f"n = 2^{args.log2_n} f32, best of {args.repeats}")
    for name, c, v in (("saxpy", cpu[0], vulkan[0]), ("reduction", cpu[1], vulkan[1])):
        print(f"{name:10s} cpu {c * 1e3:9.3f} ms   vulkan {v * 1e3:9.3f} ms   "
              f"vulkan/cpu {v / c:6.2f}")


if __name__ == "__main__":
    main()
