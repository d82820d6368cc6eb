"""Host copies on the CPU backend: GB/s of to_numpy() and from_numpy() of
fields and ndarrays (f32 scalar, vec2 and mat3 elements; fields as qd.field
/ qd.Vector.field / qd.Matrix.field, and a vec2 and a mat3 field laid out
struct-of-arrays, layout=qd.Layout.SOA, whose components a strided loop
interleaves), each against
numpy.copy of the same bytes measured in the same run (best of REPEATS).
Target: every copy >= 0.5x numpy.copy.

usage: bazel run //benchmarks:host_copies [-- --mib 256 --repeats 5]
"""
import argparse
import time

import numpy as np

import quadrants as qd


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def containers(elements):
    """(name, container, numpy array of its shape) for each case."""
    out = []
    out.append(("field f32", qd.field(qd.f32, shape=elements), (elements,)))
    out.append(("field vec2", qd.Vector.field(2, qd.f32, shape=elements // 2),
                (elements // 2, 2)))
    out.append(("field mat3", qd.Matrix.field(3, 3, qd.f32, shape=elements // 9),
                (elements // 9, 3, 3)))
    out.append(("field vec2 SoA", qd.Vector.field(2, qd.f32, shape=elements // 2,
                                                  layout=qd.Layout.SOA), (elements // 2, 2)))
    out.append(("field mat3 SoA", qd.Matrix.field(3, 3, qd.f32, shape=elements // 9,
                                                  layout=qd.Layout.SOA), (elements // 9, 3, 3)))
    out.append(("ndarray f32", qd.ndarray(qd.f32, shape=elements), (elements,)))
    out.append(("ndarray vec2", qd.Vector.ndarray(2, qd.f32, shape=elements // 2),
                (elements // 2, 2)))
    out.append(("ndarray mat3", qd.Matrix.ndarray(3, 3, qd.f32, shape=elements // 9),
                (elements // 9, 3, 3)))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    qd.init(arch=qd.cpu, offline_cache=False)
    elements = (args.mib << 20) // 4
    reference = np.random.default_rng(0).random(elements, dtype=np.float32)
    copy_s = best(lambda: reference.copy(), args.repeats)
    gbs = lambda seconds, nbytes: nbytes / seconds / 1e9  # noqa: E731
    print(f"numpy.copy of {args.mib} MiB: {gbs(copy_s, reference.nbytes):.2f} GB/s "
          f"(best of {args.repeats})")
    print(f"{'case':<15} {'to_numpy GB/s':>14} {'ratio':>7} {'from_numpy GB/s':>16} {'ratio':>7}")
    worst = float("inf")
    for name, container, shape in containers(elements):
        host = reference[:int(np.prod(shape))].reshape(shape)
        container.from_numpy(host)
        out = container.to_numpy()
        np.testing.assert_array_equal(out, host, err_msg=name)
        nbytes = host.nbytes
        numpy_s = best(lambda: host.copy(), args.repeats)
        to_s = best(container.to_numpy, args.repeats)
        from_s = best(lambda: container.from_numpy(host), args.repeats)
        to_ratio, from_ratio = numpy_s / to_s, numpy_s / from_s
        worst = min(worst, to_ratio, from_ratio)
        print(f"{name:<15} {gbs(to_s, nbytes):>14.2f} {to_ratio:>6.2f}x "
              f"{gbs(from_s, nbytes):>16.2f} {from_ratio:>6.2f}x")
    print(f"worst ratio to numpy.copy: {worst:.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
