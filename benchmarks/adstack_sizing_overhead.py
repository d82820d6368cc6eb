"""Cost of launch-time adstack sizing on the CPU.

1. Per-launch sizing cost with every cache hot (target < 1 us), measured
   directly: launch_sizer_hot times LaunchSizer::Size alone, for a field
   bound, range(arr[i]) (a reducer-captured MaxOverRange) and arr2d[i, j].
   End to end, pairs of gradient kernels of the same shape follow: one
   carries a value through sin(), so it needs an adstack sized at every
   launch; the other is linear and needs none. Their difference also holds
   whatever else their reverse passes do differently, so it is only a rough
   check; the counters show that hot launches evaluate and dispatch nothing.

2. The max-reducer's throughput on 2^28 i32 elements (1 GiB): the wall time
   the launch sizer spends in the reducer (adstack_stats' reducer_seconds,
   results read back included) at a launch that must re-reduce because a
   kernel wrote the gating array. On the CPU it is set against a plain read
   of the same bytes by numpy (max and sum) in the same run (target: at least
   50% of the faster); with --arch cuda against a copy kernel's bandwidth,
   read plus write bytes, in the same run (target: at least 80%); with
   --arch vulkan, the reducer shader against the same copy kernel on Vulkan
   (target: at least 50%).
"""
import argparse
import os
import subprocess
import time

import numpy as np

import quadrants as qd


def per_launch(fn, calls=20000, repeats=5):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def sizer_alone():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch_sizer_hot")
    if not os.path.exists(binary):
        runfiles = os.environ.get("RUNFILES_DIR", "")
        binary = os.path.join(runfiles, "quadrants", "benchmarks", "launch_sizer_hot")
    if not os.path.exists(binary):
        here = os.path.dirname(os.path.abspath(__file__))
        binary = os.path.join(here, "..", "bazel-bin", "benchmarks", "launch_sizer_hot")
    if not os.path.exists(binary):
        print("1. launch_sizer_hot is not built (bazel build //benchmarks:launch_sizer_hot)")
        return
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
    print("1. LaunchSizer::Size per launch, caches hot")
    for line in out.split("\n"):
        if not line:
            continue
        fields = dict(f.split("=") for f in line.split()[1:])
        ns = float(fields["ns"])
        print(f"   {line.split()[0]:20s} {ns / 1000:6.3f} us"
              f" ({'meets' if ns < 1000 else 'misses'} the < 1 us target;"
              f" reducer dispatches over all calls: {fields['dispatches']})")


def launch_overhead():
    qd.init(arch=qd.cpu, ad_stack_experimental_enabled=True, cpu_max_num_threads=1,
            offline_cache=False)
    x = qd.field(qd.f32, shape=1, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    n = qd.field(qd.i32, shape=())
    n[None] = 4
    arr = qd.ndarray(qd.i32, (1,))
    arr.from_numpy(np.array([4], np.int32))

    @qd.kernel
    def field_with_adstack():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def field_without_adstack():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = v * 0.5 + 1.0
            loss[None] += v

    @qd.kernel
    def ndarray_with_adstack(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            v = x[0]
            for _ in range(a[i]):
                v = qd.sin(v)
            loss[None] += v

    @qd.kernel
    def ndarray_without_adstack(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            v = x[0]
            for _ in range(a[i]):
                v = v * 0.5 + 1.0
            loss[None] += v

    loss.grad[None] = 1.0
    rows = []
    for name, sized, plain in (
            ("field bound n[None]", field_with_adstack.grad, field_without_adstack.grad),
            ("ndarray bound arr[i] (reducer)", lambda: ndarray_with_adstack.grad(arr),
             lambda: ndarray_without_adstack.grad(arr))):
        sized()  # the first launch sizes, dispatches and fills the caches
        before = qd.lang.runtime.adstack_stats()
        t_sized = per_launch(sized)
        t_plain = per_launch(plain)
        after = qd.lang.runtime.adstack_stats()
        rows.append((name, t_sized, t_plain, before, after))
    print("   end to end, gradient launches with and without an adstack (cpu, 1 thread)")
    for name, t_sized, t_plain, before, after in rows:
        diff = (t_sized - t_plain) * 1e6
        print(f"   {name:32s} with adstack {t_sized * 1e6:6.2f} us, without {t_plain * 1e6:6.2f} us:"
              f" difference {diff:5.2f} us")
        print(f"   {'':32s} during the timing: tree evaluations "
              f"+{after['tree_evaluations'] - before['tree_evaluations']}, reducer dispatches "
              f"+{after['reducer_dispatches'] - before['reducer_dispatches']}, task cache hits "
              f"+{after['cache_hits'] - before['cache_hits']}")


def reducer_throughput(arch, log2_elements, repeats):
    qd.init(arch=arch, ad_stack_experimental_enabled=True, offline_cache=False)
    count = 1 << log2_elements
    x = qd.field(qd.f32, shape=1, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def gated(a: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            v = x[0]
            for _ in range(a[i]):
                v = qd.sin(v)
            if a[i] > 0:
                loss[None] += v

    @qd.kernel
    def touch(a: qd.types.ndarray(qd.i32, 1)):
        # A kernel write: the array's generation changes, its bytes do not
        # move (on a GPU a host write would migrate managed pages).
        a[0] = a[0]

    @qd.kernel
    def copy(src: qd.types.ndarray(qd.i32, 1), dst: qd.types.ndarray(qd.i32, 1)):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    values = np.zeros(count, np.int32)
    values[count - 5] = 7
    arr = qd.ndarray(qd.i32, (count,))
    arr.from_numpy(values)
    other = qd.ndarray(qd.i32, (1,))
    loss.grad[None] = 1.0
    for _ in range(2):  # compile, and bring the pages where kernels run
        touch(arr)
        gated.grad(arr)
    qd.sync()

    def stat(key):
        return qd.lang.runtime.adstack_stats()[key]

    def launch(written):
        touch(written)
        gated.grad(arr)
        qd.sync()

    reducer_times, dispatched = [], 0
    for _ in range(repeats):
        seconds, dispatches = stat("reducer_seconds"), stat("reducer_dispatches")
        launch(arr)  # the gating array changed: the reducer runs again
        dispatched += stat("reducer_dispatches") - dispatches
        reducer_times.append(stat("reducer_seconds") - seconds)
    t_reducer = max(min(reducer_times), 1e-9)
    t_cold = best_of(lambda: launch(arr), repeats)
    t_hot = best_of(lambda: launch(other), repeats)
    device = stat("device_reducer_dispatches")
    caps = stat("capacities")
    gib = count * 4 / 2**30
    print(f"2. max-reducer throughput on {arch} over 2^{log2_elements} i32 = {count} elements"
          f" ({gib:.2f} GiB)")
    print(f"   reducer {t_reducer * 1e3:8.3f} ms = {gib / t_reducer:7.2f} GiB/s"
          f" ({dispatched} dispatches in {repeats} re-reducing launches, {device} of all so far"
          f" on the device; capacity {caps})")
    print(f"   end to end: launch that re-reduces {t_cold * 1e3:8.2f} ms, hot launch"
          f" {t_hot * 1e3:8.2f} ms")
    if arch == qd.cpu:
        host = arr.to_numpy()
        t_max = best_of(lambda: host.max(), repeats)
        t_sum = best_of(lambda: host.sum(dtype=np.int64), repeats)
        print(f"   on {os.cpu_count()} hardware threads; numpy max {t_max * 1e3:8.2f} ms ="
              f" {gib / t_max:6.2f} GiB/s; numpy sum {t_sum * 1e3:8.2f} ms = {gib / t_sum:6.2f} GiB/s")
        ratio, target = min(t_max, t_sum) / t_reducer, 0.5
        print(f"   reducer / fastest plain read = {ratio * 100:5.1f}%"
              f" ({'meets' if ratio >= target else 'misses'} the >= 50% target)")
        return
    dst = qd.ndarray(qd.i32, (count,))
    copy(arr, dst)
    qd.sync()

    def run_copy():
        copy(arr, dst)
        qd.sync()

    t_copy = best_of(run_copy, repeats)
    copy_rate = 2 * gib / t_copy  # read and write
    print(f"   copy kernel {t_copy * 1e3:8.3f} ms = {copy_rate:7.2f} GiB/s (read + write)")
    ratio = (gib / t_reducer) / copy_rate
    target = 0.5 if arch == qd.vulkan else 0.8
    if arch == qd.vulkan:
        print(f"   device: {qd.lang.runtime.program().device_description}")
    print(f"   reducer / copy bandwidth = {ratio * 100:5.1f}%"
          f" ({'meets' if ratio >= target else 'misses'} the >= {target * 100:.0f}% target)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-elements", type=int, default=28,
                        help="reducer array size (2^28 i32 = 1 GiB; needs ~2.5 GiB free)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--arch", choices=["cpu", "cuda", "vulkan"], default="cpu",
                        help="cuda, vulkan: only the reducer's throughput, against a copy "
                             "kernel")
    args = parser.parse_args()
    if args.arch == "cpu":
        sizer_alone()
        launch_overhead()
    reducer_throughput(getattr(qd, args.arch), args.log2_elements, args.repeats)


if __name__ == "__main__":
    main()
