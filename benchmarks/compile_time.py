"""Time to first result on the CPU: compile times and start-up.

Printed, each the best of --repeats fresh processes (so nothing is cached in
memory), with the offline cache off unless said:
  - the small adstack kernel (for i in x: v = x[i]; for _ in range(steps[i]):
    v = qd.sin(v) * 0.9 + 0.1; loss[None] += v): cold compile ms of its
    forward kernel and of its gradient, with SIMD lanes (the default) and
    with cpu_simd=False (targets: gradient <= 50 ms with lanes, forward <=
    30 ms);
  - a kernel of four math-heavy tasks: cold compile ms with one compile
    thread and with num_compile_threads=4 (its tasks compiled on several
    threads, at most the hardware's);
  - examples/diff_mpm.py (2-D MLS-MPM, its kernels and their gradients): ms
    from the process's start to the first loss and gradient, cold (an empty
    offline cache) and warm (a second process on that cache) (targets:
    <= 2000 ms cold, <= 500 ms warm).

usage: bazel run //benchmarks:compile_time [-- --repeats 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

START = time.perf_counter()

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def small_kernel(simd):
    import quadrants as qd  # pylint: disable=import-outside-toplevel
    qd.init(arch=qd.cpu, offline_cache=False, ad_stack_experimental_enabled=True,
            cpu_simd=bool(simd))
    n = 1024
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    steps = qd.field(qd.i32, shape=n)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def recurrence():
        for i in x:
            v = x[i]
            for _ in range(steps[i]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v

    steps.fill(3)
    qd.sync()
    start = time.perf_counter()
    recurrence()
    qd.sync()
    forward = time.perf_counter() - start
    start = time.perf_counter()
    recurrence.grad()
    qd.sync()
    gradient = time.perf_counter() - start
    return {"forward_ms": 1e3 * forward, "gradient_ms": 1e3 * gradient}


def four_tasks(threads):
    import quadrants as qd  # pylint: disable=import-outside-toplevel
    qd.init(arch=qd.cpu, offline_cache=False, num_compile_threads=threads)
    n = 4096
    a, b, c, d = (qd.field(qd.f32, shape=n) for _ in range(4))

    @qd.kernel
    def tasks():
        for i in a:
            v = a[i]
            for _ in range(8):
                v = qd.sin(v) * qd.cos(v * 0.5) + qd.exp(-v * v) + qd.tanh(v)
            b[i] = v
        for i in a:
            w = a[i] * 2.0
            for _ in range(8):
                w = qd.sqrt(w * w + 1.0) - qd.log(w + 2.0) + qd.atan2(w, 1.5)
            c[i] = w
        for i in a:
            u = a[i]
            for _ in range(5):
                u = qd.pow(u + 1.0, 0.7) + qd.asin(qd.min(u, 0.9))
            d[i] = u
        for i in range(n):
            b[i] += c[i] * d[i] + qd.tan(a[i] * 0.1)

    qd.sync()
    start = time.perf_counter()
    tasks()
    qd.sync()
    return {"compile_ms": 1e3 * (time.perf_counter() - start),
            "checksum": float(b.to_numpy().sum())}


def diff_mpm(cache_dir):
    sys.path.insert(0, EXAMPLES)
    import diff_mpm as example  # pylint: disable=import-outside-toplevel,import-error
    import quadrants as qd  # pylint: disable=import-outside-toplevel
    qd.init(arch=qd.cpu, default_fp=qd.f64, offline_cache=cache_dir is not None,
            offline_cache_file_path=cache_dir or "")
    sim = example.build(55, 128)
    sim["init_v"][None] = [0.0, 0.0]
    value, _ = example.gradient(sim)
    return {"first_loss_ms": 1e3 * (time.perf_counter() - START),
            "particles": sim["n_particles"], "loss": value}


def child(args):
    if args.child == "small":
        result = small_kernel(args.simd)
    elif args.child == "tasks":
        result = four_tasks(args.threads)
    else:
        result = diff_mpm(args.cache_dir)
    print(json.dumps(result))


def run_child(*extra):
    # The child finds the package where this process found it.
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *extra],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(results, key):
    return min(r[key] for r in results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=["small", "tasks", "mpm"])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--simd", type=int, default=1)
    parser.add_argument("--cache-dir")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"compile times on the CPU, best of {args.repeats} fresh processes")
    for simd in (1, 0):
        runs = [run_child("small", "--simd", str(simd)) for _ in range(args.repeats)]
        label = "SIMD lanes" if simd else "scalar    "
        print(f"small adstack kernel, {label}: forward {best(runs, 'forward_ms'):7.1f} ms "
              f"(target <= 30)   gradient {best(runs, 'gradient_ms'):7.1f} ms "
              f"(target <= 50)")
    serial = [run_child("tasks", "--threads", "1") for _ in range(args.repeats)]
    parallel = [run_child("tasks", "--threads", "4") for _ in range(args.repeats)]
    assert serial[0]["checksum"] == parallel[0]["checksum"]
    print(f"four-task kernel: one compile thread {best(serial, 'compile_ms'):.1f} ms, "
          f"num_compile_threads=4 {best(parallel, 'compile_ms'):.1f} ms "
          f"({os.cpu_count()} hardware threads)")
    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run_child("mpm", "--cache-dir", cache))
            warm.append(run_child("mpm", "--cache-dir", cache))
    uncached = [run_child("mpm") for _ in range(args.repeats)]
    print(f"diff_mpm ({cold[0]['particles']} particles, 128 steps), start to first loss: "
          f"cold {best(cold, 'first_loss_ms'):.0f} ms (target <= 2000), "
          f"warm cache {best(warm, 'first_loss_ms'):.0f} ms (target <= 500), "
          f"cache off {best(uncached, 'first_loss_ms'):.0f} ms")
    assert abs(cold[0]["loss"] - warm[0]["loss"]) <= 1e-12 * abs(cold[0]["loss"])


if __name__ == "__main__":
    main()
