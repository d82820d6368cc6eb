"""Runs kernels through the oracle in worker processes and summarizes.

Workers are subprocesses (`python -m tools.gradfuzz.runner --worker ...`)
printing one JSON line per kernel, so a compiler crash kills only its
worker: the parent records the seed it was on as a crash, writes its repro
and restarts the worker after it.
"""
import argparse
import collections
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CHECKS = ("fd", "tape", "fwd", "f32")


def _checks(checkpoint):
    # The checkpoint mode compares segmented against unsegmented gradients;
    # the default checks validate the unsegmented ones.
    return ("budget",) if checkpoint else DEFAULT_CHECKS
FINDINGS = ("mismatch", "crash", "hang", "compile_error", "error")


# ---- one kernel, in a worker ------------------------------------------------------

class ModuleLoader:
    """Writes generated sources to files and imports them (the front end reads
    kernel source through inspect, so the code must live in a real file)."""

    def __init__(self, directory):
        self.directory, self.count = directory, 0

    def load(self, source, stem):
        self.count += 1
        path = os.path.join(self.directory, f"{stem}_{self.count}.py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location(f"gradfuzz_{stem}_{self.count}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def repro_source(spec, arch, status, details, checks=None):
    """A self-contained script: the kernel, the embedded oracle and a main."""
    checks = checks or DEFAULT_CHECKS
    with open(os.path.join(HERE, "oracle.py")) as f:
        oracle = f.read()
    summary = "\n".join("# " + line for line in str(details).splitlines()[:20])
    return (f"# gradfuzz repro: seed {spec.seed}, arch {arch}, {status}\n{summary}\n"
            f"# Run: python3 this_file.py   (exit status 1 while the failure persists)\n"
            + spec.source()
            + "\n\n# ---- the gradfuzz oracle (tools/gradfuzz/oracle.py), embedded ----\n"
            + oracle
            + _REPRO_MAIN.format(seed=spec.seed, arch=arch, checks=tuple(checks)))


_REPRO_MAIN = '''

if __name__ == "__main__":
    import sys
    status, details = check_module(sys.modules[__name__], seed={seed}, arch="{arch}",
                                   checks={checks!r})
    print(status)
    for line in (details if isinstance(details, list) else [details]):
        print(line)
    sys.exit(0 if status in ("ok", "flaky") else 1)
'''


def fuzz_one(seed, arch, threads, loader, out_dir, do_shrink=True, checks=None):
    from tools.gradfuzz import generator, oracle, shrink
    checks = tuple(checks or DEFAULT_CHECKS)
    spec = generator.generate(seed)
    module = loader.load(spec.source(), f"k{seed}")
    stats = {}
    status, details = oracle.check_module(module, seed, arch, threads, checks=checks,
                                          stats=stats)
    result = dict(seed=seed, status=status, features=sorted(spec.features()),
                  details=str(details)[:2000], grad_max=stats.get("grad_max", 0.0),
                  segmented=stats.get("segmented", False))
    if status in FINDINGS:
        key = oracle.failure_key(status, details)

        def still_fails(candidate):
            mod = loader.load(candidate.source(), f"k{seed}_shrink")
            return oracle.failure_key(
                *oracle.check_module(mod, seed, arch, threads, checks=checks)) == key

        small = shrink.shrink(spec, still_fails) if do_shrink else spec
        result["repro"] = write_repro(out_dir, small, arch, status, details, checks=checks)
    return result


def write_repro(out_dir, spec, arch, status, details, suffix="", checks=None):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"gradfuzz_seed{spec.seed}{suffix}.py")
    with open(path, "w") as f:
        f.write(repro_source(spec, arch, status, details, checks))
    return path


def worker_main(args):
    with tempfile.TemporaryDirectory(prefix="gradfuzz_") as tmp:
        loader = ModuleLoader(tmp)
        seed = args.first
        for _ in range(args.count):
            print(json.dumps(dict(start=seed)), flush=True)
            result = fuzz_one(seed, args.arch, args.threads, loader, args.out,
                              not args.no_shrink, checks=_checks(args.checkpoint))
            print(json.dumps(result), flush=True)
            seed += args.stride


# ---- the parent: workers, crashes, summary ---------------------------------------------

class Worker:
    def __init__(self, seeds, options):
        self.seeds, self.options = list(seeds), options
        self.proc, self.buffer, self.current, self.since = None, b"", None, time.time()
        self.start()

    def start(self):
        if not self.seeds:
            self.proc = None
            return
        o = self.options
        stride = self.seeds[1] - self.seeds[0] if len(self.seeds) > 1 else 1
        cmd = [sys.executable, "-m", "tools.gradfuzz.runner", "--worker",
               "--first", str(self.seeds[0]), "--count", str(len(self.seeds)),
               "--stride", str(stride), "--arch", o.arch, "--threads", str(o.threads),
               "--out", o.out] + (["--no-shrink"] if o.no_shrink else [])
        cmd += ["--checkpoint"] if o.checkpoint else []
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env,
                                     cwd=os.path.dirname(os.path.dirname(HERE)))
        self.since = time.time()


def _restart_after(worker, seed):
    worker.seeds = [s for s in worker.seeds if s > seed]
    worker.buffer, worker.current = b"", None
    worker.start()


def run(seeds, arch="cpu", workers=2, threads=2, out="gradfuzz_out", no_shrink=False,
        hang_s=300, log=print, progress_every=0, checkpoint=False):
    """Fuzzes `seeds`; returns (results, summary text). With `progress_every`
    > 0, a running count is logged every that many kernels, so a run cut short
    (e.g. by a time limit) still says how far it got and what it found."""
    options = argparse.Namespace(arch=arch, threads=threads, out=os.path.abspath(out),
                                 no_shrink=no_shrink, checkpoint=checkpoint)
    seeds = list(seeds)
    pool = [Worker(seeds[k::workers], options) for k in range(workers) if seeds[k::workers]]
    results, begin = [], time.time()
    while any(w.proc for w in pool):
        live = [w for w in pool if w.proc]
        ready, _, _ = select.select([w.proc.stdout for w in live], [], [], 5)
        for w in live:
            if w.proc.stdout in ready:
                before = len(results)
                _read(w, results, options, log)
                if progress_every and len(results) // progress_every > before // progress_every:
                    log(_progress(results, time.time() - begin))
            elif time.time() - w.since > hang_s and w.current is not None:
                w.proc.kill()
                w.proc.wait()
                results.append(_lost(w.current, "hang", options, f"no result in {hang_s} s"))
                log(f"gradfuzz: seed {w.current}: hang")
                _restart_after(w, w.current)
    return results, summarize(results, arch, time.time() - begin)


def _read(w, results, options, log):
    chunk = os.read(w.proc.stdout.fileno(), 1 << 16)
    if not chunk:
        code = w.proc.wait()
        if w.current is not None:
            results.append(_lost(w.current, "crash", options, f"worker exit status {code}"))
            log(f"gradfuzz: seed {w.current}: crash (exit status {code})")
            _restart_after(w, w.current)
        else:
            w.proc = None
        return
    w.buffer += chunk
    *lines, w.buffer = w.buffer.split(b"\n")
    for line in lines:
        record = json.loads(line)
        w.since = time.time()
        if "start" in record:
            w.current = record["start"]
            continue
        w.current = None
        results.append(record)
        if record["status"] in FINDINGS:
            log(f"gradfuzz: seed {record['seed']}: {record['status']}: "
                f"{record['details'][:300]} -> {record.get('repro')}")


def _progress(results, seconds):
    counts = collections.Counter(r["status"] for r in results)
    findings = sum(counts[f] for f in FINDINGS)
    return (f"gradfuzz: {len(results)} kernels so far in {seconds:.0f} s, "
            f"{counts['ok']} ok, {counts['flaky']} flaky, {findings} findings "
            f"(highest seed done {max(r['seed'] for r in results)})")


def _lost(seed, status, options, details):
    """A result for a kernel whose worker died: the unshrunk kernel's repro."""
    from tools.gradfuzz import generator
    spec = generator.generate(seed)
    path = write_repro(options.out, spec, options.arch, status, details,
                       checks=_checks(options.checkpoint))
    return dict(seed=seed, status=status, features=sorted(spec.features()),
                details=details, repro=path)


def summarize(results, arch, seconds):
    counts = collections.Counter(r["status"] for r in results)
    head = (f"gradfuzz: {len(results)} kernels on {arch} in {seconds:.1f} s: "
            f"{counts['ok']} ok, {counts['flaky']} flaky (1 of 3 draws), "
            f"{counts['mismatch']} mismatches, {counts['crash']} crashes, "
            f"{counts['hang']} hangs, {counts['compile_error']} compile errors, "
            f"{counts['error']} errors")
    nonzero = sum(1 for r in results if r.get("grad_max", 0) > 0)
    head += f"\n{nonzero} of {len(results)} kernels have a nonzero gradient"
    segmented = sum(1 for r in results if r.get("segmented"))
    if segmented:
        head += f"\n{segmented} of {len(results)} kernels ran checkpointed (in segments)"
    features = collections.Counter(f for r in results for f in r["features"])
    groups = collections.defaultdict(list)
    for name, n in sorted(features.items()):
        groups[name.split(":")[0] if ":" in name else "stmt"].append(f"{name.split(':')[-1]}={n}")
    lines = [head, "features (kernels containing each):"]
    lines += [f"  {group}: " + " ".join(items) for group, items in sorted(groups.items())]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m tools.gradfuzz",
                                     description="Random-kernel gradient fuzzer.")
    parser.add_argument("--quick", action="store_true",
                        help="the CI mode: seeds 0..299 (overrides --count/--start)")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--arch", default="cpu", help="cpu, cuda, vulkan, ... (qd.init arch)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--threads", type=int, default=2, help="cpu_max_num_threads")
    parser.add_argument("--out", default="gradfuzz_out", help="directory for repro files")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--checkpoint", action="store_true",
                        help="check each gradient with its loops run checkpointed, in "
                             "segments of 1-4 iterations, against the unsegmented one (the "
                             "oracle's budget check, instead of the default checks)")
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="print a running count every N kernels (flushed)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--stride", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)
    reason = arch_unavailable(args.arch)
    if reason:
        print(f"gradfuzz: cannot run on arch {args.arch!r}: {reason}", file=sys.stderr)
        return 2
    out = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", ""), args.out)  # bazel run
    first, count = (0, 300) if args.quick else (args.start, args.count)
    def log(line):
        print(line, flush=True)
    _, summary = run(range(first, first + count), args.arch, args.workers, args.threads,
                     out, args.no_shrink, log=log, progress_every=args.progress,
                     checkpoint=args.checkpoint)
    print(summary)
    return 0


def arch_unavailable(arch):
    """Why qd.init(arch=...) cannot run here (its own message), else None."""
    import quadrants as qd
    try:
        qd.init(arch=getattr(qd, arch, arch))
    except Exception as err:  # pylint: disable=broad-except
        return f"{type(err).__name__}: {err}"
    finally:
        qd.reset()
    return None


if __name__ == "__main__":
    sys.exit(main())
