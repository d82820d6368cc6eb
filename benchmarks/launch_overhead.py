"""Python-side launch overhead of Quadrants kernels on the CPU.

Prints the time per call of an empty Python function (the floor any Python
API pays), an empty kernel, and a tiny kernel (one scalar store), all
measured in this run, and their ratios. Target: under 10 us per launch.
"""
import time

import numpy as np

import quadrants as qd


def per_call(fn, *args, repeats=5, calls=20000):
    """Best-of-`repeats` seconds per call."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main():
    qd.init(arch=qd.cpu)
    out = qd.field(qd.f32, shape=())
    arr = np.zeros(4, dtype=np.float32)

    def empty_python():
        pass

    @qd.kernel
    def empty_kernel():
        pass

    @qd.kernel
    def tiny_kernel(v: qd.f32):
        out[None] = v

    @qd.kernel
    def tiny_ndarray_kernel(x: qd.types.ndarray(qd.f32, 1), v: qd.f32):
        x[0] = v

    for warm in (empty_kernel, lambda: tiny_kernel(1.0), lambda: tiny_ndarray_kernel(arr, 1.0)):
        warm()
    base = per_call(empty_python)
    rows = [
        ("empty Python function", base),
        ("empty kernel", per_call(empty_kernel)),
        ("tiny kernel (scalar arg, field store)", per_call(tiny_kernel, 1.0)),
        ("tiny kernel (numpy array arg)", per_call(tiny_ndarray_kernel, arr, 1.0)),
    ]
    print(f"{'case':42s} {'us/call':>10s} {'x empty fn':>11s}")
    for name, seconds in rows:
        print(f"{name:42s} {seconds * 1e6:10.3f} {seconds / base:11.1f}")
    worst = max(seconds for _, seconds in rows[1:])
    verdict = "meets" if worst < 10e-6 else "misses"
    print(f"worst kernel launch {worst * 1e6:.2f} us: {verdict} the 10 us target")


if __name__ == "__main__":
    main()
