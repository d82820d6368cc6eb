"""The adstack on a loop-carried recurrence.

2^16 threads each run 256 iterations of v = sin(v) * a + x[i] and add the
final v to a scalar loss; the gradient needs every iterate, so the reverse
pass replays them from the adstack. Printed, all measured in this run:
  - reverse / forward time (target <= 4);
  - Quadrants forward+reverse against a hand-written C++ tape, -O3, same
    thread count (target within 2x);
  - against PyTorch autograd on CPU, vectorised over threads (target >= 10x);
  - adstack heap bytes against the exact need.
"""
import os
import subprocess
import sys
import time

import numpy as np

import quadrants as qd

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


def main():
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

    forward = best(recurrence)
    loss.grad[None] = 1.0
    reverse = best(recurrence.grad)
    stats = qd.lang.runtime.adstack_stats()
    workers = qd.lang.runtime.program().num_cpu_threads
    reference = reference_seconds(workers)
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
          f"(heap / exact = {stats['heap_bytes'] / exact:.2f}; slots also hold adjoints)")


if __name__ == "__main__":
    sys.exit(main())
