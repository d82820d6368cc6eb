"""The sum of 2^28 f32 values with qd.simt's block reduction, against
torch.sum of the same CUDA tensor (passed to the kernel without a copy), in
one process: each thread accumulates a grid-strided slice in registers, the
block sums its threads' partials (qd.simt.block.reduce_add: subgroup
shuffles, then shared memory), and thread 0 of each block adds the block's
total to the result with one atomic. Prints ms for each, best of
--repeats, the bandwidth each reaches, and ours / torch's bandwidth
(target: >= 0.8).

    python benchmarks/block_reduce_sum.py --arch cuda

--blocks: blocks launched (each of --block-dim threads); the default keeps
every SM of an H100/H200 busy with several resident blocks.
"""
import argparse

import torch

import quadrants as qd
from progress import best_ms

BLOCK_DIM = 256


def make_kernel(block_dim):
    @qd.kernel
    def block_sum(x: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f32, ndim=1),
                  threads: qd.i32):
        qd.loop_config(block_dim=block_dim)
        for t in range(threads):
            # Four independent loads in flight per step.
            n = x.shape[0]
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            j = t
            while j + 3 * threads < n:
                a0 += x[j]
                a1 += x[j + threads]
                a2 += x[j + 2 * threads]
                a3 += x[j + 3 * threads]
                j += 4 * threads
            while j < n:
                a0 += x[j]
                j += threads
            total = qd.simt.block.reduce_add((a0 + a1) + (a2 + a3), block_dim, qd.f32)
            if qd.simt.block.thread_idx() == 0:
                qd.atomic_add(out[0], total)
    return block_sum


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cuda")
    parser.add_argument("--log2-n", type=int, default=28)
    parser.add_argument("--blocks", type=int, default=132 * 8)
    parser.add_argument("--block-dim", type=int, default=BLOCK_DIM)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    n = 1 << args.log2_n
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    out = torch.zeros(1, device="cuda", dtype=torch.float32)
    threads = args.blocks * args.block_dim
    block_sum = make_kernel(args.block_dim)

    def ours():
        block_sum(x, out, threads)

    def reset():
        out.zero_()

    reference = {}

    def theirs():
        reference["sum"] = torch.sum(x)

    sync = torch.cuda.synchronize
    reset()
    ours()  # compiles
    sync()
    ours_ms = best_ms(ours, reset, args.repeats, sync)
    reset()
    ours()
    sync()
    got = float(out.item())
    torch_ms = best_ms(theirs, lambda: None, args.repeats, sync)
    expected = float(torch.sum(x.double()).item())
    rel = abs(got - expected) / abs(expected)
    assert rel < 1e-5, f"sum {got} against {expected} (relative error {rel:.2e})"
    gbytes = n * 4 / 1e9
    device = (qd.lang.runtime.program().device_description or args.arch)[:60]
    print(f"sum of 2^{args.log2_n} f32 on {device}, best of {args.repeats} "
          f"({args.blocks} blocks of {args.block_dim}; relative error {rel:.1e}):")
    print(f"  qd.simt.block.reduce_add  {ours_ms:8.3f} ms  {gbytes / ours_ms * 1e3:7.1f} GB/s")
    print(f"  torch.sum                 {torch_ms:8.3f} ms  {gbytes / torch_ms * 1e3:7.1f} GB/s")
    print(f"  ours / torch bandwidth = {torch_ms / ours_ms:.2f}   (target >= 0.8)")


if __name__ == "__main__":
    main()
