"""Launch overhead of Quadrants kernels, and with --arch cuda host copies.

On the CPU (default): the time per call of an empty Python function (the
floor any Python API pays), an empty kernel, and a tiny kernel (one scalar
store), all measured in this run, and their ratios. Target: under 10 us per
launch.

With --arch cuda, all measured in this run: us per launch of an empty
kernel and of x[i] += 1.0 over a 1,024-element f32 field and ndarray (2,000
launches, one qd.sync() after them; best of 5) against a cupy.RawKernel of
the same body and torch.Tensor.add_ on a 1,024-element CUDA tensor (target:
ours <= 1.5x CuPy); then GB/s of to_numpy() / from_numpy() of a 256 MiB f32
field and ndarray against torch's t.cpu() and t.copy_(torch.from_numpy(a))
into an existing CUDA tensor (target: ours >= 0.8x torch). The references
come from benchmarks/launch_references.py, in this interpreter or, with
--references-python, in another.

With --arch vulkan: us per launch of the same three kernels on Vulkan
(LAUNCHES launches, one qd.sync() after them, best of 5), against our CUDA
backend's figures for the same kernels measured in this run where CUDA is
available (target: Vulkan <= 3x CUDA), else against the CPU backend's; the
Vulkan device and driver are printed as the backend reports them.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import quadrants as qd

# `python -I` leaves the script's folder off sys.path; the sibling module is there.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch_references  # pylint: disable=wrong-import-position

LAUNCHES = 2000
COPY_BYTES = 256 << 20
REPEATS = 5


def per_call(fn, *args, repeats=5, calls=20000):
    """Best-of-`repeats` seconds per call."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def cpu_main():
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


def launch_us(fn, *args):
    """Best-of-REPEATS us per launch over loops of LAUNCHES launches, each
    loop ending in one qd.sync()."""
    def loop():
        for _ in range(LAUNCHES):
            fn(*args)
        qd.sync()
    return launch_references.best_seconds(loop, REPEATS) / LAUNCHES * 1e6


def copy_gbps(fn, *args):
    def once():
        fn(*args)
        qd.sync()
    return COPY_BYTES / launch_references.best_seconds(once, REPEATS) / 1e9


def references(python):
    """launch_references.measure() here, or under `python` when given."""
    if python is None:
        return launch_references.measure(LAUNCHES, COPY_BYTES, REPEATS)
    # The other interpreter runs in its own environment, not this one's paths.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONHOME", "PYTHONPATH", "LD_LIBRARY_PATH", "PYTHONNOUSERSITE")}
    run = subprocess.run([python, launch_references.__file__, "--launches", str(LAUNCHES),
                          "--bytes", str(COPY_BYTES), "--repeats", str(REPEATS)],
                         capture_output=True, text=True, env=env, check=False)
    if run.returncode != 0:
        reason = f"missing: {python} failed: {run.stderr.strip()[-300:]}"
        return {k: reason for k in ("device", "cupy_launch_us", "torch_add_us",
                                    "torch_to_host_gbps", "torch_to_device_gbps")}
    return json.loads(run.stdout)


def ratio(ours, reference):
    return f"{ours / reference:9.2f}" if isinstance(reference, float) else f"{'-':>9s}"


def shown(value, spec):
    """A reference's number, or why it is missing."""
    return format(value, spec) if isinstance(value, float) else f"{'-':>9s}  {value}"


def gpu_cases(arch):
    """[(case, us per launch)] of the empty, field and ndarray kernels on
    `arch`, in a fresh runtime, checking that every launch took effect."""
    qd.init(arch=arch, offline_cache=False)
    try:
        n = launch_references.ELEMENTS
        x = qd.field(qd.f32, shape=n)
        arr = qd.ndarray(qd.f32, n)

        @qd.kernel
        def empty_kernel():
            pass

        @qd.kernel
        def bump_field():
            for i in x:
                x[i] += 1.0

        @qd.kernel
        def bump_ndarray(a: qd.types.ndarray(qd.f32, 1)):
            for i in range(a.shape[0]):
                a[i] += 1.0

        cases = [("empty kernel", launch_us(empty_kernel)),
                 (f"field f32[{n}]: x[i] += 1.0", launch_us(bump_field)),
                 (f"ndarray f32[{n}] argument: a[i] += 1.0", launch_us(bump_ndarray, arr))]
        runs = (1 + REPEATS) * LAUNCHES
        assert x[n - 1] == runs and arr[n - 1] == runs, (x[n - 1], arr[n - 1], runs)
        return cases, qd.lang.runtime.program().device_description
    finally:
        qd.reset()


def vulkan_main():
    reason = qd.lang.runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        sys.exit(f"launch_overhead --arch vulkan: Vulkan is not available here: {reason}")
    reference = qd.cuda if qd.lang.runtime.arch_unavailable_reason(qd.cuda) is None else qd.cpu
    ours, device = gpu_cases(qd.vulkan)
    theirs, _ = gpu_cases(reference)
    print(f"vulkan device: {device}")
    print(f"us per launch: {LAUNCHES} launches then one sync, best of {REPEATS}; "
          f"reference: our {reference.name} backend in this run")
    print(f"{'case':40s} {'vulkan us':>10s} {reference.name + ' us':>10s} {'ratio':>7s}")
    for (name, us), (_, ref) in zip(ours, theirs):
        print(f"{name:40s} {us:10.3f} {ref:10.3f} {us / ref:7.2f}")
    worst = max(us / ref for (_, us), (_, ref) in zip(ours, theirs))
    if reference == qd.cuda:
        print(f"worst vulkan/cuda ratio {worst:.2f}: {'meets' if worst <= 3 else 'misses'} "
              f"the <= 3x target")


def cuda_main(args):
    reason = qd.lang.runtime.arch_unavailable_reason(qd.cuda)
    if reason is not None:
        sys.exit(f"launch_overhead --arch cuda: CUDA is not available here: {reason}")
    n = launch_references.ELEMENTS
    ours, _ = gpu_cases(qd.cuda)
    qd.init(arch=qd.cuda)
    big = qd.field(qd.f32, shape=COPY_BYTES // 4)
    big_arr = qd.ndarray(qd.f32, COPY_BYTES // 4)
    host = np.arange(COPY_BYTES // 4, dtype=np.float32)
    copies = [("field.to_numpy()", copy_gbps(big.to_numpy), "torch_to_host_gbps"),
              ("field.from_numpy(a)", copy_gbps(big.from_numpy, host), "torch_to_device_gbps"),
              ("ndarray.to_numpy()", copy_gbps(big_arr.to_numpy), "torch_to_host_gbps"),
              ("ndarray.from_numpy(a)", copy_gbps(big_arr.from_numpy, host),
               "torch_to_device_gbps")]
    step = 1 << 20  # one element per 4 MiB: the copies moved the data
    assert np.array_equal(big.to_numpy()[::step], host[::step])
    assert np.array_equal(big_arr.to_numpy()[::step], host[::step])

    refs = references(args.references_python)
    cupy_us, torch_us = refs["cupy_launch_us"], refs["torch_add_us"]
    print(f"device: {refs['device']}")
    print(f"us per launch: {LAUNCHES} launches then one sync, best of {REPEATS}")
    print(f"{'case':40s} {'us':>9s} {'ours/CuPy':>9s} {'ours/torch':>10s}")
    for name, us in ours:
        print(f"{name:40s} {us:9.3f} {ratio(us, cupy_us)} {ratio(us, torch_us):>10s}")
    for name, value in ((f"CuPy RawKernel x[i] += 1.0f ({n})", cupy_us),
                        (f"torch add_ ({n}, CUDA)", torch_us)):
        print(f"{name:40s} {shown(value, '9.3f')}")
    print("target: ours <= 1.5x CuPy")
    print()
    print(f"GB/s copying {COPY_BYTES >> 20} MiB of f32 (pageable numpy memory), best of "
          f"{REPEATS}; torch: t.cpu() to the host, t.copy_(torch.from_numpy(a)) into an "
          f"existing CUDA tensor to the device")
    print(f"{'case':40s} {'GB/s':>9s} {'torch':>9s} {'ours/torch':>10s}")
    for name, gbps, key in copies:
        print(f"{name:40s} {gbps:9.2f} {shown(refs[key], '9.2f')} {ratio(gbps, refs[key]):>10s}")
    print("target: ours >= 0.8x torch")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", choices=["cpu", "cuda", "vulkan"], default="cpu")
    parser.add_argument("--references-python", default=None,
                        help="interpreter with CuPy and PyTorch for the CUDA references "
                             "(default: this one)")
    args = parser.parse_args()
    if args.arch == "cuda":
        return cuda_main(args)
    if args.arch == "vulkan":
        return vulkan_main()
    return cpu_main()


if __name__ == "__main__":
    main()
