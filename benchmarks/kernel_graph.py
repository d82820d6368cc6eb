"""Graph replay against plain launches of a kernel with 10 tasks.

A kernel of ten parallel loops over 4096 elements is launched many times as
a plain kernel and as @qd.kernel(graph=True); prints the time per launch of
each, measured in this run, their ratio (target: the graph is faster on
cuda), and checks that both give the same field values. On archs without
graphs graph=True is a plain launch, so the ratio is about 1.

    python benchmarks/kernel_graph.py --arch cuda
"""
import argparse
import time

import numpy as np

import quadrants as qd
from progress import phase

N = 4096
TASKS = 10


def per_launch(fn, calls, repeats=5):
    """Best-of-`repeats` seconds per launch, synchronized at the end."""
    fn(1.0)
    qd.sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(1.0)
        qd.sync()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def make_kernels():
    x = qd.field(qd.f32, shape=N)
    y = qd.field(qd.f32, shape=N)

    def body(scale: qd.f32):
        for i in x:
            x[i] = i * scale
        for _ in qd.static(range(TASKS - 1)):
            for i in y:
                y[i] = y[i] * 0.5 + x[i]

    plain = qd.kernel(body)
    graph = qd.kernel(graph=True)(body)
    return x, y, plain, graph


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cuda", choices=["cpu", "cuda"])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch))
    x, y, plain, graph = make_kernels()
    prog = qd.lang.runtime.program()

    y.fill(0)
    plain(1.0)
    expected = y.to_numpy()
    y.fill(0)
    graph(1.0)
    replayed = prog.last_launch_replayed_graph
    np.testing.assert_array_equal(y.to_numpy(), expected)

    phase(f"{args.calls} plain launches")
    t_plain = per_launch(plain, args.calls)
    phase(f"{args.calls} graph launches")
    t_graph = per_launch(graph, args.calls)
    print(f"arch {args.arch}: {TASKS} tasks over {N} elements, {args.calls} launches")
    print(f"  plain launch        {t_plain * 1e6:9.2f} us/launch")
    print(f"  graph=True launch   {t_graph * 1e6:9.2f} us/launch"
          f"{'' if replayed else ' (no graph on this arch: a plain launch)'}")
    print(f"  graph speedup       {t_plain / t_graph:9.2f}x "
          f"({'faster' if t_graph < t_plain else 'not faster'})")
    print("  results identical:  yes")


if __name__ == "__main__":
    main()
