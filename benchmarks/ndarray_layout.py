"""Ndarray layouts: a column-major ndarray (qd.tensor(..., layout=(1, 0)))
read along its contiguous axis against a row-major one read along its own.

Each kernel reads an N x M f32 ndarray and writes y = 2 x + 1 into another
of the same layout, best of REPEATS launches (each followed by qd.sync()),
printed as GB/s moved (8 bytes per element):
  - row-major, rows outer (j fastest: contiguous);
  - column-major, columns outer (i fastest: contiguous), spelled
    qd.ndrange(N, M, axes=(1, 0));
  - column-major, `for i, j in x` (the loop runs in memory order);
  - column-major, rows outer (strided: what the layout avoids).
Target: each contiguous column-major kernel >= 0.9x the row-major one.

usage: bazel run //benchmarks:ndarray_layout [-- --arch cpu --n 4096 --m 4096]
"""
import argparse
import time

import numpy as np

import quadrants as qd


@qd.kernel
def rows_outer(x: qd.types.ndarray(), y: qd.types.ndarray()):
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        y[i, j] = x[i, j] * 2.0 + 1.0


@qd.kernel
def columns_outer(x: qd.types.ndarray(), y: qd.types.ndarray()):
    for i, j in qd.ndrange(x.shape[0], x.shape[1], axes=(1, 0)):
        y[i, j] = x[i, j] * 2.0 + 1.0


@qd.kernel
def memory_order(x: qd.types.ndarray(), y: qd.types.ndarray()):
    for i, j in x:
        y[i, j] = x[i, j] * 2.0 + 1.0


def best(kernel, x, y, repeats):
    kernel(x, y)  # compiles
    qd.sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(x, y)
        qd.sync()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=["cpu", "cuda", "vulkan"], default="cpu")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    shape = (args.n, args.m)
    src = np.random.default_rng(0).random(shape, dtype=np.float32)
    expected = src * 2 + 1
    row = [qd.tensor(qd.f32, shape) for _ in range(2)]
    col = [qd.tensor(qd.f32, shape, layout=(1, 0)) for _ in range(2)]
    row[0].from_numpy(src)
    col[0].from_numpy(src)
    cases = [("row-major, rows outer (contiguous)", rows_outer, row),
             ("column-major, columns outer (contiguous)", columns_outer, col),
             ("column-major, for i, j in x (memory order)", memory_order, col),
             ("column-major, rows outer (strided)", rows_outer, col)]
    gb = 8 * args.n * args.m / 1e9
    print(f"{args.arch}: y = 2 x + 1 over {args.n} x {args.m} f32, GB/s moved, best of "
          f"{args.repeats}")
    rates = {}
    for name, kernel, (x, y) in cases:
        seconds = best(kernel, x, y, args.repeats)
        np.testing.assert_allclose(y.to_numpy(), expected, rtol=1e-6)
        rates[name] = gb / seconds
        print(f"  {name:<46} {rates[name]:8.2f} GB/s  {seconds * 1e3:8.3f} ms")
    base = rates[cases[0][0]]
    for name, _, _ in cases[1:3]:
        print(f"{name} / row-major contiguous = {rates[name] / base:.2f} (target >= 0.9)")
    print(f"column-major strided / row-major contiguous = {rates[cases[3][0]] / base:.2f}")


if __name__ == "__main__":
    main()
