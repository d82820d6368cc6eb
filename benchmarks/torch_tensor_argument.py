"""A kernel on a PyTorch tensor passed directly against the same kernel on a
Quadrants ndarray: the tensor path must add no copy.

y[i] = 2 x[i] + 1 over 2^24 f32 elements, 200 launches with one sync after
them, best of 5, all measured in this run: with x and y torch tensors on the
kernels' device (CUDA tensors with --arch cuda, CPU tensors on cpu), and with
x and y qd.ndarrays. Prints ms per launch of each and tensor / ndarray
(target <= 1.05); the bandwidth the launch reaches (8 bytes per element)
shows that both stream memory rather than copy it.

    python3 benchmarks/torch_tensor_argument.py [--arch cuda]
"""
import argparse
import time

import numpy as np
import torch

import quadrants as qd

N = 1 << 24
LAUNCHES = 200
REPEATS = 5


def best_per_launch(kernel, x, y, launches):
    kernel(x, y)
    qd.sync()
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(launches):
            kernel(x, y)
        qd.sync()
        if isinstance(y, torch.Tensor) and y.is_cuda:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / launches)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--launches", type=int, default=LAUNCHES)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch))
    device = "cuda" if args.arch == "cuda" else "cpu"

    @qd.kernel
    def affine(x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = 2.0 * x[i] + 1.0

    values = np.random.default_rng(0).random(N, dtype=np.float32)
    tx = torch.from_numpy(values).to(device)
    ty = torch.empty(N, dtype=torch.float32, device=device)
    nx = qd.ndarray(qd.f32, shape=N)
    ny = qd.ndarray(qd.f32, shape=N)
    nx.from_numpy(values)

    tensor = best_per_launch(affine, tx, ty, args.launches)
    ndarray = best_per_launch(affine, nx, ny, args.launches)
    np.testing.assert_allclose(ty.cpu().numpy(), 2.0 * values + 1.0, rtol=1e-6)
    np.testing.assert_allclose(ny.to_numpy(), 2.0 * values + 1.0, rtol=1e-6)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"y = 2x + 1 over 2^24 f32 on {args.arch} ({name}), {args.launches} launches, "
          f"one sync, best of {REPEATS}; torch {torch.__version__}")
    for label, seconds in (("torch tensors", tensor), ("qd.ndarrays", ndarray)):
        print(f"  {label:14s} {seconds * 1e3:8.3f} ms per launch, "
              f"{8 * N / seconds / 1e9:7.1f} GB/s")
    print(f"  tensor / ndarray = {tensor / ndarray:.3f}  target <= 1.05")


if __name__ == "__main__":
    main()
