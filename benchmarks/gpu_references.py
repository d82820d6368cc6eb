"""Reference timings for benchmarks/adstack_recurrence.py --arch cuda.

Runs under the GPU machine's own python3 (PyTorch, JAX, CuPy), measuring
the gradient of sum_i v_i, where v = x_i, then ITERATIONS times
v = sin(v) * A + x_i, with respect to x:
  - PyTorch eager CUDA autograd;
  - JAX jit(grad(...)) over lax.scan with a static trip count;
  - a hand-written fused CUDA kernel (forward, tape in global memory,
    reverse), compiled here through CuPy: once with the tape laid out
    slot-major (coalesced across a warp) and once with each thread owning a
    contiguous slice.
Prints one JSON object: seconds per method (best of several runs) or the
reason a method was skipped, and the max relative gradient difference of
each against the hand-written kernel.

    python3 benchmarks/gpu_references.py --threads 65536 --iterations 256
"""
import argparse
import json
import time

A = 0.9

_KERNEL = r"""
extern "C" __global__ void recurrence_grad(const float* x, float* tape,
                                           float* grad, int n, int iters,
                                           int coalesced) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float xi = x[i];
  float v = xi;
  for (int k = 0; k < iters; ++k) {
    long slot = coalesced ? (long)k * n + i : (long)i * iters + k;
    tape[slot] = v;
    v = sinf(v) * %(a)ff + xi;
  }
  float g = 1.0f, gx = 0.0f;
  for (int k = iters - 1; k >= 0; --k) {
    long slot = coalesced ? (long)k * n + i : (long)i * iters + k;
    gx += g;
    g *= cosf(tape[slot]) * %(a)ff;
  }
  grad[i] = gx + g;
}
""" % {"a": A}


def best(fn, sync, repeats=5):
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def x_values(n):
    import numpy as np  # pylint: disable=import-outside-toplevel
    return (0.1 + 0.5 * np.arange(n) / n).astype(np.float32)


def handwritten(n, iters, coalesced):
    import cupy as cp  # pylint: disable=import-outside-toplevel
    kernel = cp.RawKernel(_KERNEL, "recurrence_grad")
    x = cp.asarray(x_values(n))
    tape = cp.empty(n * iters, dtype=cp.float32)
    grad = cp.empty(n, dtype=cp.float32)
    block = 128
    grid = (n + block - 1) // block

    def run():
        kernel((grid,), (block,), (x, tape, grad, cp.int32(n), cp.int32(iters),
                                   cp.int32(1 if coalesced else 0)))
    seconds = best(run, cp.cuda.Device().synchronize)
    return seconds, cp.asnumpy(grad)


def torch_eager(n, iters):
    import torch  # pylint: disable=import-outside-toplevel
    x = torch.tensor(x_values(n), device="cuda", requires_grad=True)

    def run():
        v = x
        for _ in range(iters):
            v = torch.sin(v) * A + x
        v.sum().backward()

    def reset_and_run():
        x.grad = None
        run()
    seconds = best(reset_and_run, torch.cuda.synchronize, repeats=3)
    return seconds, x.grad.detach().cpu().numpy()


def jax_scan(n, iters):
    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel

    def loss(x):
        def body(v, _):
            return jnp.sin(v) * A + x, None
        v, _ = jax.lax.scan(body, x, None, length=iters)
        return v.sum()
    grad = jax.jit(jax.grad(loss))
    x = jnp.asarray(x_values(n))
    out = {}

    def run():
        out["g"] = grad(x)

    def sync():
        out["g"].block_until_ready()
    seconds = best(run, sync)
    import numpy as np  # pylint: disable=import-outside-toplevel
    return seconds, np.asarray(out["g"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1 << 16)
    parser.add_argument("--iterations", type=int, default=256)
    parser.add_argument("--save-grad", help="write the hand-written kernel's "
                        "gradient here (.npy) for the caller to compare with")
    args = parser.parse_args()
    import numpy as np  # pylint: disable=import-outside-toplevel
    results, grads = {}, {}
    methods = {
        "handwritten_coalesced": lambda: handwritten(args.threads, args.iterations, True),
        "handwritten_slices": lambda: handwritten(args.threads, args.iterations, False),
        "torch_eager": lambda: torch_eager(args.threads, args.iterations),
        "jax_scan": lambda: jax_scan(args.threads, args.iterations),
    }
    for name, run in methods.items():
        try:
            seconds, grad = run()
            results[name] = seconds
            grads[name] = grad
        except Exception as e:  # pylint: disable=broad-except
            results[name] = f"skipped: {type(e).__name__}: {e}"
    reference = grads.get("handwritten_coalesced")
    if reference is not None and args.save_grad:
        np.save(args.save_grad, reference)
    if reference is not None:
        for name, grad in grads.items():
            rel = np.max(np.abs(grad - reference) / np.maximum(np.abs(reference), 1e-6))
            results[name + "_max_rel_diff"] = float(rel)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
