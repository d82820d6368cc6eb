"""Forward-only CPU kernels with and without SIMD (qd.init(cpu_simd=...)), in
one run: a saxpy, a saxpy with sin(), and a sum reduction over 2^24 f32
elements of ndarrays. Prints each kernel's best time under both settings and
the speedup of the default (cpu_simd=True) over scalar code.
"""
import argparse
import time

import numpy as np

import quadrants as qd


def best_of(fn, repeats):
    fn()
    qd.sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        qd.sync()
        best = min(best, time.perf_counter() - start)
    return best


def measure(simd, n, repeats, threads):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False, cpu_max_num_threads=threads)
    x = qd.ndarray(qd.f32, (n,))
    y = qd.ndarray(qd.f32, (n,))
    total = qd.field(qd.f32, shape=())
    x.from_numpy(np.linspace(-1, 1, n, dtype=np.float32))

    @qd.kernel
    def saxpy(a: qd.f32, xs: qd.types.ndarray(qd.f32, 1), ys: qd.types.ndarray(qd.f32, 1)):
        for i in range(xs.shape[0]):
            ys[i] = a * xs[i] + ys[i]

    @qd.kernel
    def saxpy_sin(a: qd.f32, xs: qd.types.ndarray(qd.f32, 1), ys: qd.types.ndarray(qd.f32, 1)):
        for i in range(xs.shape[0]):
            ys[i] = a * qd.sin(xs[i]) + ys[i]

    @qd.kernel
    def reduce(xs: qd.types.ndarray(qd.f32, 1)):
        for i in range(xs.shape[0]):
            total[None] += xs[i]

    return {
        "saxpy": best_of(lambda: saxpy(2.0, x, y), repeats),
        "saxpy with sin": best_of(lambda: saxpy_sin(2.0, x, y), repeats),
        "sum reduction": best_of(lambda: reduce(x), repeats),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-elements", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0, help="0: one per hardware thread")
    args = parser.parse_args()
    n = 1 << args.log2_elements
    simd = measure(True, n, args.repeats, args.threads)
    scalar = measure(False, n, args.repeats, args.threads)
    print(f"cpu forward kernels over 2^{args.log2_elements} f32 elements")
    for name in simd:
        print(f"   {name:16s} simd {simd[name] * 1e3:8.3f} ms, scalar {scalar[name] * 1e3:8.3f} ms:"
              f" speedup over scalar {scalar[name] / simd[name]:5.2f}x")


if __name__ == "__main__":
    main()
