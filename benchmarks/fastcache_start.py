"""Time to first result of a program of many kernels: cold, warm through the
offline cache, and warm through the fastcache.

A generated module of --kernels kernels (each a particle-style update
calling three qd.funcs) runs in fresh processes; each process reports the
milliseconds from its start (before `import quadrants`) to the end of the
first launch of every kernel, and a checksum of the results:
  - cold: an empty offline cache;
  - warm, offline cache: the kernels without fastcache=True, on a cache a
    first process filled (the front end and every pass run; code
    generation is skipped);
  - warm, fastcache: the kernels with fastcache=True on a filled cache (the
    compiled code is loaded by the fastcache key).
Processes run with bytecode caching on, as an installed package does.
Target: the fastcache warm start reaches its first results >= 5x faster
than the cold start, with identical results. Printed: each the best of
--repeats processes, and the ratios.

usage: python benchmarks/fastcache_start.py [--arch cpu] [--kernels 24] [--repeats 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

START = time.perf_counter()

_KERNEL = '''
@qd.func
def force_{k}(x, v):
    return -{c1} * x - 0.1 * v + qd.sin(x * {c2})


@qd.func
def clamp_{k}(x):
    return qd.max(-10.0, qd.min(10.0, x))


@qd.func
def step_{k}(x, v, dt):
    v_new = v + dt * force_{k}(x, v)
    return clamp_{k}(x + dt * v_new), v_new


@qd.kernel(fastcache={fastcache})
def update_{k}(x: qd.types.NDArray[qd.f32, 1], v: qd.types.NDArray[qd.f32, 1],
               dt: qd.f32, steps: qd.i32):
    for i in range(x.shape[0]):
        xi, vi = x[i], v[i]
        for _ in range(steps):
            xi, vi = step_{k}(xi, vi, dt)
        x[i], v[i] = xi, vi
'''


def write_module(folder, kernels, fastcache):
    name = f"fastcache_program_{int(fastcache)}"
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write("import quadrants as qd\n")
        for k in range(kernels):
            f.write(_KERNEL.format(k=k, c1=1.0 + 0.01 * k, c2=0.5 + 0.01 * k,
                                   fastcache=fastcache))
    return name


def child(args):
    import numpy as np  # pylint: disable=import-outside-toplevel
    import quadrants as qd  # pylint: disable=import-outside-toplevel
    imported = time.perf_counter()
    sys.path.insert(0, args.folder)
    qd.init(arch=getattr(qd, args.arch), offline_cache_file_path=args.cache)
    initialized = time.perf_counter()
    module = __import__(args.module)
    x = qd.ndarray(qd.f32, (4096,))
    v = qd.ndarray(qd.f32, (4096,))
    x.from_numpy(np.linspace(0.0, 1.0, 4096, dtype=np.float32))
    v.from_numpy(np.zeros(4096, dtype=np.float32))
    for k in range(args.kernels):
        getattr(module, f"update_{k}")(x, v, 0.01, 4)
    checksum = float(np.float64(x.to_numpy()).sum() + np.float64(v.to_numpy()).sum())
    ms = 1e3 * (time.perf_counter() - START)
    loaded = sum(getattr(module, f"update_{k}").src_ll_cache_observations.cache_loaded
                 for k in range(args.kernels))
    print(json.dumps({"ms": ms, "checksum": checksum, "loaded": loaded,
                      "import_ms": 1e3 * (imported - START),
                      "init_ms": 1e3 * (initialized - imported)}))


def run_child(args, folder, cache, module):
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    # As an installed package is: compiled to bytecode once, not at every start.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                           "--folder", folder, "--cache", cache, "--module", module,
                           "--arch", args.arch, "--kernels", str(args.kernels)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--kernels", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--folder")
    parser.add_argument("--cache")
    parser.add_argument("--module")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    cold, offline, fast = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        plain = write_module(folder, args.kernels, False)
        marked = write_module(folder, args.kernels, True)
        run_child(args, folder, os.path.join(folder, "bytecode"), marked)  # writes the .pyc
        for r in range(args.repeats):
            cache = os.path.join(folder, f"cache{r}")
            cold.append(run_child(args, folder, cache, marked))
            fast.append(run_child(args, folder, cache, marked))
            offline_cache = os.path.join(folder, f"offline{r}")
            run_child(args, folder, offline_cache, plain)
            offline.append(run_child(args, folder, offline_cache, plain))
    checksums = {round(r["checksum"], 6) for r in cold + fast + offline}
    assert len(checksums) == 1, f"results differ: {checksums}"
    assert all(r["loaded"] == args.kernels for r in fast), "a kernel was not loaded"
    best = {name: min(r["ms"] for r in runs)
            for name, runs in (("cold", cold), ("offline", offline), ("fast", fast))}
    print(f"{args.kernels} kernels on {args.arch}, start of the process to the first results, "
          f"best of {args.repeats} processes:")
    print(f"  cold (empty cache)      {best['cold']:8.0f} ms")
    print(f"  warm, offline cache     {best['offline']:8.0f} ms")
    print(f"  warm, fastcache         {best['fast']:8.0f} ms")
    fastest = min(fast, key=lambda r: r["ms"])
    print(f"    of which import quadrants {fastest['import_ms']:.0f} ms, qd.init "
          f"{fastest['init_ms']:.0f} ms, the kernels' first launches "
          f"{fastest['ms'] - fastest['import_ms'] - fastest['init_ms']:.0f} ms")
    print(f"  cold / fastcache        {best['cold'] / best['fast']:8.1f}x (target >= 5)")
    print(f"  offline / fastcache     {best['offline'] / best['fast']:8.1f}x")
    print(f"  identical results: checksum {checksums.pop():.6f}")


if __name__ == "__main__":
    main()
