"""A Jacobi-style solver loop of 1,000 iterations of three small kernels,
run three ways in one process, with results checked equal:
  (a) plain launches from Python, reading the iteration counter back after
      each iteration (the host check a data-dependent loop needs);
  (b) one @qd.kernel(graph=True) whose body is `while qd.graph.do_while(c):`;
  (c) the same three steps in PyTorch, captured once as a torch.cuda.CUDAGraph
      of all 1,000 iterations (cuda only; the count is fixed there, which a
      data-dependent loop could not do).
Prints ms per solve for each, best of --repeats, and the ratios (a)/(b)
(target >= 3) and (b)/(c) (target <= 1.2).

    python benchmarks/graph_solver_loop.py --arch cuda
"""
import argparse

import numpy as np

import quadrants as qd
from progress import best_ms, phase

N = 1 << 14
ITERATIONS = 1000
ARR = qd.types.ndarray(qd.f32, ndim=1)
COUNTER = qd.types.ndarray(qd.i32, ndim=0)


@qd.kernel
def smooth(x: ARR, tmp: ARR):
    for i in range(1, x.shape[0] - 1):
        tmp[i] = 0.5 * (x[i - 1] + x[i + 1])


@qd.kernel
def relax(x: ARR, tmp: ARR, rhs: ARR):
    for i in range(1, x.shape[0] - 1):
        x[i] = 0.9 * tmp[i] + 0.1 * rhs[i]


@qd.kernel
def count_down(counter: COUNTER):
    for _ in range(1):
        counter[()] = counter[()] - 1


@qd.kernel(graph=True)
def solve(x: ARR, tmp: ARR, rhs: ARR, counter: COUNTER):
    while qd.graph.do_while(counter):
        for i in range(1, x.shape[0] - 1):
            tmp[i] = 0.5 * (x[i - 1] + x[i + 1])
        for i in range(1, x.shape[0] - 1):
            x[i] = 0.9 * tmp[i] + 0.1 * rhs[i]
        for _ in range(1):
            counter[()] = counter[()] - 1


def plain_launches(x, tmp, rhs, counter):
    while True:
        smooth(x, tmp)
        relax(x, tmp, rhs)
        count_down(counter)
        if counter.to_numpy() == 0:
            break


def torch_graph_ms(rhs_np, repeats):
    import torch  # pylint: disable=import-outside-toplevel
    x = torch.zeros(N, device="cuda")
    tmp = torch.zeros(N, device="cuda")
    rhs = torch.from_numpy(rhs_np).cuda()

    def steps():
        for _ in range(ITERATIONS):
            tmp[1:-1] = 0.5 * (x[:-2] + x[2:])
            x[1:-1] = 0.9 * tmp[1:-1] + 0.1 * rhs[1:-1]

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        steps()  # warm-up on a side stream, as capture requires
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        steps()
    best = best_ms(graph.replay, x.zero_, repeats, torch.cuda.synchronize)
    return best, x.cpu().numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="cuda")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch))
    rhs_np = np.linspace(0.0, 1.0, N, dtype=np.float32)
    x, tmp, rhs = (qd.ndarray(qd.f32, shape=(N,)) for _ in range(3))
    counter = qd.ndarray(qd.i32, shape=())
    rhs.from_numpy(rhs_np)

    def reset():
        x.fill(0.0)
        tmp.fill(0.0)
        counter.from_numpy(np.array(ITERATIONS, dtype=np.int32))

    phase("plain launches with a host check")
    plain_ms = best_ms(lambda: plain_launches(x, tmp, rhs, counter), reset, args.repeats,
                       qd.sync)
    plain_x = x.to_numpy()
    phase("graph kernel with qd.graph.do_while")
    graph_ms = best_ms(lambda: solve(x, tmp, rhs, counter), reset, args.repeats, qd.sync)
    graph_x = x.to_numpy()
    np.testing.assert_allclose(graph_x, plain_x, rtol=1e-6, atol=1e-6)
    print(f"device: {qd.lang.runtime.program().device_description[:60]}")
    print(f"(a) plain launches + host check : {plain_ms:9.2f} ms per {ITERATIONS} iterations")
    print(f"(b) graph kernel with do_while  : {graph_ms:9.2f} ms")
    print(f"    (a)/(b) = {plain_ms / graph_ms:.2f}  (target >= 3)")
    if args.arch == "cuda":
        phase("torch.cuda.CUDAGraph of the same loop")
        torch_ms, torch_x = torch_graph_ms(rhs_np, args.repeats)
        np.testing.assert_allclose(graph_x, torch_x, rtol=1e-5, atol=1e-5)
        print(f"(c) torch.cuda.CUDAGraph        : {torch_ms:9.2f} ms")
        print(f"    (b)/(c) = {graph_ms / torch_ms:.2f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
