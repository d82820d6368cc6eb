"""Two independent loops that each fill half the GPU, run three ways in one
process, with results checked equal:
  (a) in sequence: one kernel with the two loops as top-level tasks;
  (b) the same loops as two `with qd.stream_parallel():` blocks (on CUDA,
      concurrent branches of the kernel's graph);
  (c) two kernels, one loop each, launched on two qd.create_stream()
      streams and synchronized.
Prints ms for each, best of --repeats, and the ratios (b)/(a) and (c)/(a)
(target: <= 0.7, the overlap shows).

    python benchmarks/stream_overlap.py --arch cuda

--n: items per loop; the default, 66 blocks of 128 threads, gives each loop
half the SMs of an H100/H200 (132), one block each: alone, a loop leaves
the other half idle, which the concurrent forms use.
"""
import argparse

import numpy as np

import quadrants as qd
from progress import best_ms

F32 = qd.types.ndarray(qd.f32, ndim=1)


@qd.func
def spin(x, rounds):
    v = x
    for _ in range(rounds):
        v = v * 0.999 + 0.5
    return v


@qd.kernel
def in_sequence(a: F32, b: F32, rounds: qd.i32):
    for i in range(a.shape[0]):
        a[i] = spin(a[i], rounds)
    for i in range(b.shape[0]):
        b[i] = spin(b[i], rounds)


@qd.kernel
def as_blocks(a: F32, b: F32, rounds: qd.i32):
    with qd.stream_parallel():
        for i in range(a.shape[0]):
            a[i] = spin(a[i], rounds)
    with qd.stream_parallel():
        for i in range(b.shape[0]):
            b[i] = spin(b[i], rounds)


@qd.kernel
def one_loop(a: F32, rounds: qd.i32):
    for i in range(a.shape[0]):
        a[i] = spin(a[i], rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cuda")
    parser.add_argument("--n", type=int, default=66 * 128)
    parser.add_argument("--rounds", type=int, default=400000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    start = np.linspace(0.0, 1.0, args.n, dtype=np.float32)
    a = qd.ndarray(qd.f32, shape=(args.n,))
    b = qd.ndarray(qd.f32, shape=(args.n,))
    s1, s2 = qd.create_stream(), qd.create_stream()

    def reset():
        a.from_numpy(start)
        b.from_numpy(start[::-1].copy())

    def on_streams():
        one_loop(a, args.rounds, qd_stream=s1)
        one_loop(b, args.rounds, qd_stream=s2)
        s1.synchronize()
        s2.synchronize()

    results = {}
    times = {}
    for name, run in (("(a) in sequence", lambda: in_sequence(a, b, args.rounds)),
                      ("(b) stream_parallel blocks", lambda: as_blocks(a, b, args.rounds)),
                      ("(c) two qd streams", on_streams)):
        reset()
        run()  # compiles
        times[name] = best_ms(run, reset, args.repeats, qd.sync)
        results[name] = (a.to_numpy(), b.to_numpy())
    first = next(iter(results.values()))
    for name, (ra, rb) in results.items():
        np.testing.assert_allclose(ra, first[0], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(rb, first[1], rtol=1e-6, err_msg=name)
    device = (qd.lang.runtime.program().device_description or args.arch)[:60]
    print(f"two loops of {args.n} items x {args.rounds} rounds on {device}, "
          f"best of {args.repeats}:")
    for name, ms in times.items():
        print(f"  {name:28s} {ms:9.2f} ms")
    base = times["(a) in sequence"]
    print(f"  (b)/(a) = {times['(b) stream_parallel blocks'] / base:.2f}   "
          f"(c)/(a) = {times['(c) two qd streams'] / base:.2f}   (target <= 0.7)")
    s1.destroy()
    s2.destroy()


if __name__ == "__main__":
    main()
