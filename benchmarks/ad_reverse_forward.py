"""Reverse-mode cost relative to the forward kernel.

A representative kernel: 10^6 threads, each a 20-op elementwise chain of
mixed arithmetic and transcendentals, summed into a scalar loss. Prints the
forward time, the gradient kernel's time and their ratio (target <= 3).
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


def main():
    qd.init(arch=qd.cpu)
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

    phase("forward kernel")
    forward = best_time(chain)
    loss.grad[None] = 1.0
    phase("gradient kernel")
    reverse = best_time(chain.grad)
    print(f"threads: {N}, chain of 20 ops into a scalar loss (CPU, "
          f"{qd.lang.runtime.program().num_cpu_threads} threads)")
    print(f"forward kernel   {forward * 1e3:8.2f} ms")
    print(f"gradient kernel  {reverse * 1e3:8.2f} ms")
    ratio = reverse / forward
    print(f"reverse / forward = {ratio:.2f} ({'meets' if ratio <= 3 else 'misses'} "
          f"the <= 3 target)")


if __name__ == "__main__":
    main()
