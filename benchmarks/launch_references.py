"""CuPy and PyTorch references for benchmarks/launch_overhead.py --arch cuda.

launch_overhead.py imports this module, or runs it under another interpreter
(--references-python) where its own lacks CuPy or PyTorch; run so, it prints
one JSON object:

    python3 benchmarks/launch_references.py --launches 2000 --bytes 268435456

Each value is a number, or a string saying why the reference is missing.
"""
import argparse
import json
import time

import numpy as np

ELEMENTS = 1024

_BUMP = r"""
extern "C" __global__ void bump(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""


def best_seconds(fn, repeats):
    fn()  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cupy_launch_us(launches, repeats):
    """us per cupy.RawKernel launch of x[i] += 1.0f over ELEMENTS floats."""
    import cupy  # pylint: disable=import-outside-toplevel
    kernel = cupy.RawKernel(_BUMP, "bump")
    x = cupy.zeros(ELEMENTS, dtype=cupy.float32)
    n = np.int32(ELEMENTS)

    def loop():
        for _ in range(launches):
            kernel((ELEMENTS // 256,), (256,), (x, n))
        cupy.cuda.Device().synchronize()
    return best_seconds(loop, repeats) / launches * 1e6


def torch_add_us(launches, repeats):
    """us per torch.Tensor.add_ on an ELEMENTS-float CUDA tensor."""
    import torch  # pylint: disable=import-outside-toplevel
    t = torch.zeros(ELEMENTS, dtype=torch.float32, device="cuda")

    def loop():
        for _ in range(launches):
            t.add_(1.0)
        torch.cuda.synchronize()
    return best_seconds(loop, repeats) / launches * 1e6


def torch_copy_gbps(nbytes, repeats):
    """GB/s of t.cpu() (device to host, into a new pageable tensor) and of
    t.copy_(torch.from_numpy(a)) (host to an existing CUDA tensor)."""
    import torch  # pylint: disable=import-outside-toplevel
    a = np.arange(nbytes // 4, dtype=np.float32)
    t = torch.from_numpy(a).cuda()

    def to_host():
        t.cpu()
        torch.cuda.synchronize()

    def to_device():
        t.copy_(torch.from_numpy(a))
        torch.cuda.synchronize()
    return (nbytes / best_seconds(to_host, repeats) / 1e9,
            nbytes / best_seconds(to_device, repeats) / 1e9)


def device_name():
    try:
        import torch  # pylint: disable=import-outside-toplevel
        return f"{torch.cuda.get_device_name()} (torch)"
    except Exception:  # pylint: disable=broad-except
        pass
    import cupy  # pylint: disable=import-outside-toplevel
    name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    return f"{name.decode() if isinstance(name, bytes) else name} (cupy)"


def _missing(error):
    if isinstance(error, ImportError):
        return f"missing: {error.name or error} is not importable"
    return f"missing: {type(error).__name__}: {error}"


def measure(launches, nbytes, repeats):
    """Every reference, each a number or why it is missing."""
    out = {}
    for key, fn, args in (("device", device_name, ()),
                          ("cupy_launch_us", cupy_launch_us, (launches, repeats)),
                          ("torch_add_us", torch_add_us, (launches, repeats)),
                          ("torch_copy_gbps", torch_copy_gbps, (nbytes, repeats))):
        try:
            out[key] = fn(*args)
        except Exception as error:  # pylint: disable=broad-except
            out[key] = _missing(error)
    copies = out.pop("torch_copy_gbps")
    for i, key in enumerate(("torch_to_host_gbps", "torch_to_device_gbps")):
        out[key] = copies[i] if isinstance(copies, tuple) else copies
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=2000)
    parser.add_argument("--bytes", type=int, default=256 << 20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(measure(args.launches, args.bytes, args.repeats)))


if __name__ == "__main__":
    main()
