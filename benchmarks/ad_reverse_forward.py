"""Reverse-mode cost relative to the forward kernel.

A representative kernel: 10^6 threads, each a 20-op elementwise chain of
mixed arithmetic and transcendentals, summed into a scalar loss. Prints the
forward time, the gradient kernel's time and their ratio (target <= 3),
with the CPU backend's SIMD lanes (the default) and with cpu_simd=False in
the same run, and the lanes' speedup over scalar code for each kernel.
"""
import time

import numpy as np

import quadrants as qd
from progress import phase

N = 1_000_000


def best_time(fn, repeats=7):
    fn()  # compile and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        qd.sync()
        best = min(best, time.perf_counter() - start)
    return best


def measure(simd):
    """(forward s, gradient s, x.grad) in a fresh runtime."""
    qd.init(arch=qd.cpu, cpu_simd=simd)
    x = qd.field(qd.f32, shape=N, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x.from_numpy(np.linspace(0.1, 1.0, N, dtype=np.float32))

    @qd.kernel
    def chain():
        for i in x:
            v = x[i]
            a = qd.sin(v) * 1.5 + v          # 3
            b = qd.exp(-a * 0.5) + a * a     # 5
            c = qd.sqrt(b + 1.0) - qd.cos(a)  # 4
            d = c * b / (1.0 + v)            # 3
            e = qd.tanh(d) + qd.log(b + 2.0)  # 4
            loss[None] += e * 0.5            # 1 (+ atomic)

    mode = "SIMD lanes" if simd else "scalar"
    phase(f"{mode}: forward kernel")
    forward = best_time(chain)
    loss.grad[None] = 1.0
    phase(f"{mode}: gradient kernel")
    reverse = best_time(chain.grad)
    x.grad.fill(0)
    chain.grad()
    return forward, reverse, x.grad.to_numpy()


def main():
    lanes = measure(True)
    scalar = measure(False)
    print(f"threads: {N}, chain of 20 ops into a scalar loss (CPU, "
          f"{qd.lang.runtime.program().num_cpu_threads} threads)")
    for name, (forward, reverse, _) in (("SIMD lanes", lanes), ("scalar", scalar)):
        ratio = reverse / forward
        print(f"{name:10s} forward {forward * 1e3:8.2f} ms, gradient {reverse * 1e3:8.2f} ms, "
              f"reverse / forward = {ratio:.2f} "
              f"({'meets' if ratio <= 3 else 'misses'} the <= 3 target)")
    print(f"speedup of SIMD lanes over scalar: forward {scalar[0] / lanes[0]:.2f}x, "
          f"gradient {scalar[1] / lanes[1]:.2f}x")
    rel = np.max(np.abs(lanes[2] - scalar[2]) / np.maximum(np.abs(scalar[2]), 1e-3))
    print(f"gradient, lanes against scalar: max relative difference {rel:.1e}")


if __name__ == "__main__":
    main()
