"""The benchmark record: runs the benchmarks that print ratios (or times)
measured against references in the same run, and compares each number with
benchmarks/baseline.json for this kind of machine, flagging any more than
10% worse. A speed we had and lost shows up here as a flagged line.

usage: bazel run //benchmarks:record [-- --kind cpu] [--only NAME] [--update]
  --kind     the baseline's machine kind: "cpu" (the CI machine, 2 cores)
             or "nvidia-h200" (the GPU machine); default: nvidia-h200 when
             nvidia-smi names an H200, else cpu
  --update   writes this run's numbers as the baseline of --kind
It prints one table: benchmark, measure, baseline, now, the change (positive:
better) and FLAG
where the change is worse than 10%; then the number of flags. It exits 1
when something is flagged.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "baseline.json")
TOLERANCE = 0.10

# name -> (script, arguments, {measure: (regex with one number group,
# "lower" or "higher" is better)}) per machine kind.
BENCHMARKS = {
    "cpu": {
        "adstack_recurrence": ("adstack_recurrence.py", [], {
            "fwd+rev ms (lanes)": (r"SIMD lanes fwd\+rev\s+([\d.]+) ms", "lower"),
            "reverse/forward": (r"reverse/forward = ([\d.]+)", "lower"),
            "ours / best AVX-512 tape": (r"best AVX-512 tape = ([\d.]+)", "lower"),
            "speedup of lanes over scalar": (r"speedup of lanes = ([\d.]+)x", "higher"),
            "PyTorch autograd / ours": (r"Quadrants is ([\d.]+)x faster", "higher"),
        }),
        "host_copies": ("host_copies.py", ["--mib", "256", "--repeats", "5"], {
            "worst copy / numpy.copy": (r"worst ratio to numpy.copy: ([\d.]+)x", "higher"),
        }),
        "compile_time": ("compile_time.py", ["--repeats", "3"], {
            "adstack gradient compile ms (lanes)":
                (r"SIMD lanes: forward\s+[\d.]+ ms \(target <= 30\)\s+gradient\s+([\d.]+) ms",
                 "lower"),
            "adstack forward compile ms (lanes)": (r"SIMD lanes: forward\s+([\d.]+) ms", "lower"),
            "diff_mpm first loss ms, cold": (r"cold (\d+) ms", "lower"),
            "diff_mpm first loss ms, warm cache": (r"warm cache (\d+) ms", "lower"),
        }),
        "launch_overhead": ("launch_overhead.py", [], {
            "worst kernel launch us": (r"worst kernel launch ([\d.]+) us", "lower"),
        }),
    },
    "nvidia-h200": {
        # Under tools/gpu_suite.sh system-python (PyTorch, JAX, CuPy there).
        "adstack_recurrence": ("adstack_recurrence.py", ["--arch", "cuda"], {
            "reverse / hand-written coalesced, 2^16":
                (r"^65536 threads.*?\(reverse\) / handwritten_coalesced = ([\d.]+)", "lower"),
            "reverse / hand-written coalesced, 2^20":
                (r"^1048576 threads.*?\(reverse\) / handwritten_coalesced = ([\d.]+)",
                 "lower"),
            "fwd+rev / hand-written coalesced, 2^16":
                (r"^65536 threads.*?fwd\+rev / handwritten_coalesced = ([\d.]+)", "lower"),
            "fwd+rev / hand-written coalesced, 2^20":
                (r"^1048576 threads.*?fwd\+rev / handwritten_coalesced = ([\d.]+)", "lower"),
        }),
        "adstack_checkpoint": ("adstack_checkpoint.py", ["--arch", "cuda"], {
            "checkpointed reverse / unbudgeted reverse":
                (r"reverse budgeted / unbudgeted = ([\d.]+)", "lower"),
            "2^20 particles x 65536 steps, reverse s":
                (r"steps of a 3-D particle.*?reverse ([\d.]+) s", "lower"),
        }),
    },
}


def machine_kind():
    smi = shutil.which("nvidia-smi")
    if smi:
        names = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, check=False).stdout
        if "H200" in names:
            return "nvidia-h200"
    return "cpu"


def run(script, arguments):
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, os.path.join(HERE, script), *arguments],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def measure(kind, only):
    numbers = {}
    for name, (script, arguments, measures) in BENCHMARKS[kind].items():
        if only and name != only:
            continue
        print(f"running {script} {' '.join(arguments)}", file=sys.stderr, flush=True)
        out = run(script, arguments)
        for label, (pattern, _) in measures.items():
            found = re.search(pattern, out, re.S | re.M)
            if found is None:
                raise RuntimeError(f"{script}: no '{label}' in its output:\n{out}")
            numbers[f"{name}: {label}"] = float(found.group(1))
    return numbers


def direction(kind, key):
    name, label = key.split(": ", 1)
    return BENCHMARKS[kind][name][2][label][1]


def compare(kind, numbers, baseline):
    """(rows, flags): each row is (key, baseline, now, change, flag)."""
    rows, flags = [], 0
    for key, now in numbers.items():
        before = baseline.get(key)
        if before is None:
            rows.append((key, None, now, None, "new"))
            continue
        # Positive change = worse.
        change = (now - before) / before if direction(kind, key) == "lower" else \
            (before - now) / before
        flag = "FLAG" if change > TOLERANCE else ""
        flags += bool(flag)
        rows.append((key, before, now, change, flag))
    return rows, flags


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=sorted(BENCHMARKS))
    parser.add_argument("--only", choices=sorted({n for k in BENCHMARKS.values() for n in k}))
    parser.add_argument("--update", action="store_true")
    args = parser.parse_args()
    kind = args.kind or machine_kind()
    numbers = measure(kind, args.only)
    try:
        with open(BASELINE) as f:
            recorded = json.load(f)
    except FileNotFoundError:
        recorded = {}
    rows, flags = compare(kind, numbers, recorded.get(kind, {}))
    print(f"benchmark record on {kind} (worse by more than {TOLERANCE:.0%} is flagged)")
    for key, before, now, change, flag in rows:
        before_text = "-" if before is None else f"{before:g}"
        change_text = "-" if change is None else f"{-change:+.1%}"
        print(f"  {key:<58} baseline {before_text:>9}  now {now:>9g}  {change_text:>8} {flag}")
    print(f"{flags} flagged")
    if args.update:
        recorded.setdefault(kind, {}).update(numbers)
        # Under `bazel run` the source tree's file, not the runfiles copy.
        workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
        path = os.path.join(workspace, "benchmarks", "baseline.json") if workspace \
            else BASELINE
        with open(path, "w") as f:
            json.dump(recorded, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"baseline of {kind} written to {path}")
    sys.exit(1 if flags else 0)


if __name__ == "__main__":
    main()
