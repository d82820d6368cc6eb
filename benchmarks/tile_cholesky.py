"""Batched Cholesky solves of 2^16 16x16 SPD systems A X = B, each with 16
right-hand sides: qd.simt.Tile16x16 (one subgroup per system: cholesky_,
solve_triangular_ for L Y = B, and a backward substitution with L^T by
subgroup shuffles) against torch.linalg.cholesky + torch.cholesky_solve on
the same CUDA tensors, in one process. Prints ms for each, best of
--repeats, the largest difference between the two solutions, and
torch / ours (target: > 1, ours faster).

    python benchmarks/tile_cholesky.py --arch cuda
"""
import argparse

import torch

import quadrants as qd
from progress import best_ms

N = 16
SUBGROUP = qd.simt.subgroup


@qd.func
def back_substitute(L, Y):
    """Solves L^T z = y in place of each lane's row y of Y (L lower
    triangular, row m on lane m)."""
    for back in qd.static(range(N)):
        acc = Y._regs[N - 1 - back]
        for m in qd.static(range(N - back, N)):
            acc -= SUBGROUP.shuffle(L._regs[N - 1 - back], m) * Y._regs[m]
        Y._regs[N - 1 - back] = acc / SUBGROUP.shuffle(L._regs[N - 1 - back], N - 1 - back)


def make_kernel(dtype):
    arr = qd.types.NDArray[dtype, 3]

    @qd.kernel
    def solve(a: arr, b: arr, x: arr):
        qd.loop_config(block_dim=N)
        for g in range(a.shape[0] * N):
            k = g // N
            L = qd.simt.Tile16x16.zeros(dtype=dtype)
            L[:] = a[k, 0:N, 0:N]
            L.cholesky_(1e-30)
            Y = qd.simt.Tile16x16.zeros(dtype=dtype)
            Y[:] = b[k, 0:N, 0:N]       # lane i: right-hand side i
            L.solve_triangular_(Y)      # lane i: L^{-1} b_i
            back_substitute(L, Y)       # lane i: A^{-1} b_i
            x[k, 0:N, 0:N] = Y
    return solve


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cuda")
    parser.add_argument("--log2-batch", type=int, default=16)
    parser.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    dtype = getattr(qd, args.dtype)
    tdtype = torch.float32 if args.dtype == "f32" else torch.float64
    batch = 1 << args.log2_batch
    gen = torch.Generator(device="cuda").manual_seed(0)
    m = torch.rand(batch, N, N, device="cuda", dtype=tdtype, generator=gen)
    a = m @ m.transpose(1, 2) + N * torch.eye(N, device="cuda", dtype=tdtype)
    b = torch.rand(batch, N, N, device="cuda", dtype=tdtype, generator=gen)  # rows: RHS
    x = torch.empty_like(b)
    solve = make_kernel(dtype)
    result = {}

    def ours():
        solve(a, b, x)

    def theirs():
        chol = torch.linalg.cholesky(a)
        result["x"] = torch.cholesky_solve(b.transpose(1, 2), chol).transpose(1, 2)

    sync = torch.cuda.synchronize
    ours()  # compiles
    theirs()
    sync()
    ours_ms = best_ms(ours, lambda: None, args.repeats, sync)
    torch_ms = best_ms(theirs, lambda: None, args.repeats, sync)
    diff = (x - result["x"]).abs().max().item()
    scale = result["x"].abs().max().item()
    tolerance = 1e-4 if args.dtype == "f32" else 1e-10
    assert diff <= tolerance * scale, f"solutions differ by {diff} (scale {scale})"
    device = (qd.lang.runtime.program().device_description or args.arch)[:60]
    print(f"{batch} Cholesky solves of {N}x{N} {args.dtype} systems with {N} right-hand "
          f"sides on {device}, best of {args.repeats} (max difference {diff:.1e}):")
    print(f"  qd.simt.Tile16x16                       {ours_ms:8.3f} ms")
    print(f"  torch.linalg.cholesky + cholesky_solve  {torch_ms:8.3f} ms")
    print(f"  torch / ours = {torch_ms / ours_ms:.2f}   (target > 1)")


if __name__ == "__main__":
    main()
