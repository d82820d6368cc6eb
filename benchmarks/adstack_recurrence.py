"""The adstack on a loop-carried recurrence.

2^16 threads each run 256 iterations of v = sin(v) * a + x[i] and add the
final v to a scalar loss; the gradient needs every iterate, so the reverse
pass replays them from the adstack. Printed, all measured in this run:
  - reverse / forward time (target <= 4);
  - on the CPU (default): Quadrants forward+reverse against a hand-written
    C++ tape, -O3, same thread count (target within 2x), and against PyTorch
    autograd on CPU, vectorised over threads (target >= 10x);
  - with --arch cuda: against a hand-written fused CUDA kernel with a
    coalesced global-memory tape (target within 1.5x), PyTorch eager CUDA
    autograd and JAX jit(grad) over lax.scan, all run by
    benchmarks/gpu_references.py under --references-python (the GPU
    machine's own python3 with CuPy, PyTorch and JAX), for 2^16 and 2^20
    threads;
  - with --arch vulkan: reverse / forward on Vulkan, and Vulkan's forward
    and reverse times against the CPU backend's, both measured in this run;
  - adstack heap bytes against the exact need.
"""
import argparse
import json
import os
import tempfile
import subprocess
import sys
import time

import numpy as np

import quadrants as qd
from progress import phase

THREADS = 1 << 16
ITERATIONS = 256
A = 0.9


def best(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        qd.sync()
        times.append(time.perf_counter() - start)
    return min(times)


def torch_seconds(x0):
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        return None, f"torch not installed ({e})"
    torch.set_num_threads(qd.lang.runtime.program().num_cpu_threads)
    x = torch.tensor(x0, requires_grad=True)

    def step():
        v = x
        for _ in range(ITERATIONS):
            v = torch.sin(v) * A + x
        v.sum().backward()
        x.grad = None

    step()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times), None


def reference_seconds(workers):
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tape_reference")
    if not os.path.exists(binary):
        runfiles = os.environ.get("RUNFILES_DIR", "")
        binary = os.path.join(runfiles, "quadrants", "benchmarks", "tape_reference")
    out = subprocess.run([binary, str(THREADS), str(ITERATIONS), str(workers)],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[0].split("=")[1])


def cuda_main(args):
    qd.init(arch=qd.cuda, ad_stack_experimental_enabled=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for threads in args.threads:
        x = qd.field(qd.f32, shape=threads, needs_grad=True)
        loss = qd.field(qd.f32, shape=(), needs_grad=True)
        x.from_numpy((0.1 + 0.5 * np.arange(threads) / threads).astype(np.float32))

        @qd.kernel
        def recurrence():
            for i in x:
                v = x[i]
                for _ in range(ITERATIONS):
                    v = qd.sin(v) * A + x[i]
                loss[None] += v

        phase(f"cuda, {threads} threads: forward and reverse")
        forward = best(recurrence)
        loss.grad[None] = 1.0

        def gradient():
            x.grad.fill(0)
            loss.grad[None] = 1.0
            recurrence.grad()
        reverse = best(recurrence.grad)
        gradient()
        ours = forward + reverse
        stats = qd.lang.runtime.adstack_stats()
        with tempfile.TemporaryDirectory() as tmp:
            saved = os.path.join(tmp, "grad.npy")
            phase(f"{threads} threads: CuPy, JAX and PyTorch references")
            # The references run in the machine's own Python: none of this
            # interpreter's environment (a bundled Python's home and paths).
            env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH",
                                "PYTHONNOUSERSITE")}
            run = subprocess.run(
                [args.references_python, os.path.join(here, "gpu_references.py"),
                 "--threads", str(threads), "--iterations", str(ITERATIONS),
                 "--save-grad", saved], capture_output=True, text=True, env=env)
            refs = json.loads(run.stdout) if run.returncode == 0 else {}
            reference_grad = np.load(saved) if os.path.exists(saved) else None
        print(f"{threads} threads x {ITERATIONS} iterations of v = sin(v) * a + x[i] "
              f"(f32, cuda)")
        print(f"  Quadrants forward       {forward * 1e3:9.3f} ms")
        print(f"  Quadrants reverse       {reverse * 1e3:9.3f} ms   reverse/forward = "
              f"{reverse / forward:.2f}")
        print(f"  Quadrants fwd+rev       {ours * 1e3:9.3f} ms")
        if run.returncode != 0:
            print(f"  references failed: {run.stderr.strip()[-400:]}")
        targets = {"handwritten_coalesced": "target: Quadrants within 1.5x",
                   "handwritten_slices": "",
                   "jax_scan": "target: Quadrants >= 20x faster",
                   "torch_eager": "target: Quadrants >= 100x faster"}
        for name, target in targets.items():
            value = refs.get(name)
            if isinstance(value, (int, float)):
                print(f"  {name:22s}  {value * 1e3:9.3f} ms   reference / Quadrants = "
                      f"{value / ours:.2f}  {target}")
            elif value is not None:
                print(f"  {name:22s}  {value}")
        if reference_grad is not None:
            ours_grad = x.grad.to_numpy()
            rel = np.max(np.abs(ours_grad - reference_grad) /
                         np.maximum(np.abs(reference_grad), 1e-6))
            print(f"  gradient vs hand-written kernel: max relative difference {rel:.2e}")
        # The threads dispatched (capped at those resident), each holding one
        # f32 primal per slot of its K + 2 slots.
        dispatched = stats["bytes_needed"] // max(1, stats["per_thread_stride"][0])
        exact = dispatched * (ITERATIONS + 2) * 4
        print(f"  adstack heap {stats['heap_bytes']} bytes, needed {stats['bytes_needed']} "
              f"bytes for {dispatched} threads; exact (one f32 per slot) {exact} bytes, "
              f"needed / exact = {stats['bytes_needed'] / exact:.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=["cpu", "cuda", "vulkan"], default="cpu")
    parser.add_argument("--threads", type=int, nargs="+", default=[1 << 16, 1 << 20],
                        help="thread counts (cuda)")
    parser.add_argument("--references-python", default="python3",
                        help="interpreter with CuPy, PyTorch and JAX (cuda)")
    args = parser.parse_args()
    if args.arch == "cuda":
        return cuda_main(args)
    if args.arch == "vulkan":
        return vulkan_main()
    return cpu_main()


def forward_and_reverse(arch):
    """(forward s, reverse s, adstack stats, x.grad) of the recurrence on
    `arch`, in a fresh runtime."""
    phase(f"{arch.name}: forward and reverse")
    qd.init(arch=arch, ad_stack_experimental_enabled=True)
    try:
        x = qd.field(qd.f32, shape=THREADS, needs_grad=True)
        loss = qd.field(qd.f32, shape=(), needs_grad=True)
        x.from_numpy((0.1 + 0.5 * np.arange(THREADS) / THREADS).astype(np.float32))

        @qd.kernel
        def recurrence():
            for i in x:
                v = x[i]
                for _ in range(ITERATIONS):
                    v = qd.sin(v) * A + x[i]
                loss[None] += v

        forward = best(recurrence)
        loss.grad[None] = 1.0
        reverse = best(recurrence.grad)
        return forward, reverse, qd.lang.runtime.adstack_stats(), x.grad.to_numpy()
    finally:
        qd.reset()


def vulkan_main():
    vk_fwd, vk_rev, stats, vk_grad = forward_and_reverse(qd.vulkan)
    cpu_fwd, cpu_rev, _, cpu_grad = forward_and_reverse(qd.cpu)
    print(f"{THREADS} threads x {ITERATIONS} iterations of v = sin(v) * a + x[i] "
          f"(f32, Vulkan against the CPU backend)")
    print(f"vulkan forward     {vk_fwd * 1e3:9.2f} ms")
    print(f"vulkan reverse     {vk_rev * 1e3:9.2f} ms   reverse/forward = "
          f"{vk_rev / vk_fwd:.2f} (target <= 4)")
    print(f"cpu forward        {cpu_fwd * 1e3:9.2f} ms   vulkan/cpu = {vk_fwd / cpu_fwd:.2f}")
    print(f"cpu reverse        {cpu_rev * 1e3:9.2f} ms   vulkan/cpu = {vk_rev / cpu_rev:.2f}"
          f"   (cpu reverse/forward = {cpu_rev / cpu_fwd:.2f})")
    # Sums of 256 contracting steps in f32: both backends agree to rounding.
    worst = float(np.max(np.abs(vk_grad - cpu_grad) / np.maximum(np.abs(cpu_grad), 1e-6)))
    print(f"gradient vulkan vs cpu: max relative difference {worst:.2e}")
    print(f"adstack: capacities {stats['capacities']}, heap {stats['heap_bytes']} bytes, "
          f"{stats['heap_grows']} allocations")


def cpu_main():
    qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True)
    x = qd.field(qd.f32, shape=THREADS, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    x0 = (0.1 + 0.5 * np.arange(THREADS) / THREADS).astype(np.float32)
    x.from_numpy(x0)

    @qd.kernel
    def recurrence():
        for i in x:
            v = x[i]
            for _ in range(ITERATIONS):
                v = qd.sin(v) * A + x[i]
            loss[None] += v

    phase("cpu: forward and reverse")
    forward = best(recurrence)
    loss.grad[None] = 1.0
    reverse = best(recurrence.grad)
    stats = qd.lang.runtime.adstack_stats()
    workers = qd.lang.runtime.program().num_cpu_threads
    phase("C++ tape reference")
    reference = reference_seconds(workers)
    phase("PyTorch autograd reference")
    torch_time, torch_note = torch_seconds(x0)

    print(f"{THREADS} threads x {ITERATIONS} iterations of v = sin(v) * a + x[i] "
          f"(f32, CPU, {workers} worker threads)")
    print(f"forward            {forward * 1e3:9.2f} ms")
    print(f"reverse (adstack)  {reverse * 1e3:9.2f} ms   reverse/forward = "
          f"{reverse / forward:.2f} (target <= 4)")
    ours = forward + reverse
    print(f"C++ tape, -O3      {reference * 1e3:9.2f} ms   Quadrants fwd+rev / C++ = "
          f"{ours / reference:.2f} (target <= 2)")
    if torch_time is None:
        print(f"PyTorch autograd   skipped: {torch_note}")
    else:
        print(f"PyTorch autograd   {torch_time * 1e3:9.2f} ms   speedup = "
              f"{torch_time / ours:.1f}x (target >= 10x)")
    capacity = stats["capacities"][0][0]
    exact = workers * ITERATIONS * 4  # one f32 primal per iteration per thread
    print(f"adstack: capacity {capacity} slots per thread, heap {stats['heap_bytes']} bytes, "
          f"needed {stats['bytes_needed']} bytes, exact primal bytes {exact} "
          f"(heap / exact = {stats['heap_bytes'] / exact:.2f}; each stack also reserves "
          f"8 bytes and 2 setup slots)")


if __name__ == "__main__":
    sys.exit(main())
