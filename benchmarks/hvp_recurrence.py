"""Hessian-vector products through the adstack recurrence
(benchmarks/adstack_recurrence.py's kernel: each of --threads threads runs
256 iterations of v = sin(v) * a + x[i] and adds the final v to the loss):
qd.ad.hvp (forward mode over the gradient kernel, tangents on twin
adstacks) against, in the same process and on the same device,
torch.func.jvp(torch.func.grad(...)) of a vectorised torch restatement
(torch.autograd.functional.hvp on torch < 2) and
jax.jvp(jax.grad(...)) of the lax.scan restatement under jax.jit, each
where installed. Prints ms (best of --repeats), each reference's largest
relative difference from ours, and reference / ours (> 1: ours faster).

    python benchmarks/hvp_recurrence.py --arch cuda
"""
import argparse
import importlib.util
import time

import numpy as np

import quadrants as qd
from progress import phase

ITERATIONS = 256
A = 0.9


def best_ms(fn, repeats, sync):
    fn()
    sync()
    best = float("inf")
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        sync()
        best = min(best, (time.perf_counter() - start) * 1e3)
    return best, result


def ours(threads, x0, v, repeats):
    x = qd.field(qd.f32, threads, needs_grad=True)
    loss = qd.field(qd.f32, (), needs_grad=True)

    @qd.kernel
    def recurrence():
        for i in x:
            value = x[i]
            for _ in range(ITERATIONS):
                value = qd.sin(value) * A + x[i]
            loss[None] += value

    x.from_numpy(x0)
    return best_ms(lambda: qd.ad.hvp(recurrence, loss, x, v), repeats, qd.sync)


def torch_reference(arch, x0, v, repeats):
    import torch  # pylint: disable=import-outside-toplevel
    device = "cuda" if arch == "cuda" else "cpu"
    xt = torch.tensor(x0, device=device)
    vt = torch.tensor(v, device=device)

    def loss(x):
        value = x
        for _ in range(ITERATIONS):
            value = torch.sin(value) * A + x
        return value.sum()

    if hasattr(torch, "func"):
        def run():
            return torch.func.jvp(torch.func.grad(loss), (xt,), (vt,))[1]
        name = "torch.func.jvp(grad)"
    else:
        def run():
            return torch.autograd.functional.hvp(loss, xt, vt)[1]
        name = "torch.autograd.functional.hvp"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    ms, result = best_ms(run, repeats, sync)
    return name, ms, result.cpu().numpy()


def jax_reference(x0, v, repeats):
    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel

    def loss(x):
        def step(value, _):
            return jnp.sin(value) * A + x, None
        final, _ = jax.lax.scan(step, x, None, length=ITERATIONS)
        return final.sum()

    hvp = jax.jit(lambda x, t: jax.jvp(jax.grad(loss), (x,), (t,))[1])
    xj, vj = jnp.asarray(x0), jnp.asarray(v)
    ms, result = best_ms(lambda: hvp(xj, vj).block_until_ready(), repeats, lambda: None)
    return "jax.jvp(grad) over lax.scan (jit)", ms, np.asarray(result)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda", "vulkan"])
    parser.add_argument("--threads", type=int, default=1 << 16)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), ad_stack_experimental_enabled=True)
    x0 = (0.1 + 0.5 * np.arange(args.threads) / args.threads).astype(np.float32)
    v = np.cos(np.arange(args.threads)).astype(np.float32)
    phase("ours: qd.ad.hvp")
    ours_ms, hv = ours(args.threads, x0, v, args.repeats)
    print(f"{args.threads} threads x {ITERATIONS} iterations, f32, arch {args.arch}")
    print(f"ours qd.ad.hvp                        {ours_ms:9.2f} ms")
    references = []
    if importlib.util.find_spec("torch") is not None:
        phase("torch")
        references.append(torch_reference(args.arch, x0, v, args.repeats))
    else:
        print("torch: not installed here")
    if importlib.util.find_spec("jax") is not None:
        phase("jax")
        references.append(jax_reference(x0, v, args.repeats))
    else:
        print("jax: not installed here")
    for name, ms, result in references:
        diff = np.abs(result - hv).max() / max(np.abs(result).max(), 1e-30)
        print(f"{name:38s}{ms:9.2f} ms   max rel diff {diff:.1e}   "
              f"{name.split('.')[0]} / ours {ms / ours_ms:.2f}")


if __name__ == "__main__":
    main()
