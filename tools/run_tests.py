#!/usr/bin/python3
"""Runs the Bazel tests and prints one summary line `N passed, N failed`.

usage: run_tests.py [-v] [bazel test args, e.g. --config=cpu] [targets]

Counts individual test cases (GoogleTest and pytest write JUnit XML; the
shards of a sharded target add up); a test target without case-level
results counts as one. Skipped cases are reported as one line per (backend,
reason) with a count, so nothing is skipped silently; `-v` (or
QD_TEST_VERBOSE=1) lists every skipped case instead. With the whole suite on
the CPU it also builds and runs examples/bazel_consumer from a clean output
base, counted as one case (QD_TEST_CONSUMER=0 skips it), and builds the
user guide website (tools/build_docs.py, one case) and runs tests/docs
against it in headless Chromium (their cases), and builds the CPython 3.11
wheel (one case) and runs tests/wheel against it in a fresh virtual
environment (their cases; QD_TEST_WHEEL_BUILD=0 skips both).
Exits non-zero when anything failed or the build broke.
"""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


VERBOSE_FLAGS = ("-v", "--verbose")
BACKENDS = ("cpu", "cuda", "vulkan", "amdgpu", "metal")


def split_args(argv):
    argv = [a for a in argv if a not in VERBOSE_FLAGS]
    targets = [a for a in argv if a.startswith("//") or a.startswith(":")]
    flags = [a for a in argv if a not in targets]
    return flags, targets or ["//..."]


def read_events(path):
    events = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                events.append(json.loads(line))
    return events


def test_summaries(events):
    """label -> overall status, from the BEP testSummary events."""
    summaries = {}
    for event in events:
        summary_id = event.get("id", {}).get("testSummary")
        if summary_id:
            status = event.get("testSummary", {}).get("overallStatus", "NO_STATUS")
            summaries[summary_id["label"]] = status
    return summaries


def target_backends(events):
    """label -> the backend tag a test target carries (cpu, vulkan, ...)."""
    backends = {}
    for event in events:
        label = event.get("id", {}).get("targetConfigured", {}).get("label")
        tags = event.get("configured", {}).get("tag", [])
        backend = next((t for t in tags if t in BACKENDS), None)
        if label and backend:
            backends[label] = backend
    return backends


def xml_files(events):
    """label -> the test.xml of each of its shards (and runs), from the BEP
    testResult events; the last attempt of a retried shard counts."""
    latest = {}
    for event in events:
        result_id = event.get("id", {}).get("testResult")
        if not result_id:
            continue
        key = (result_id.get("label"), result_id.get("run", 0), result_id.get("shard", 0))
        attempt = result_id.get("attempt", 0)
        for output in event.get("testResult", {}).get("testActionOutput", []):
            uri = output.get("uri", "")
            if output.get("name") == "test.xml" and uri.startswith("file://"):
                if key not in latest or attempt >= latest[key][0]:
                    latest[key] = (attempt, urllib.parse.unquote(uri[len("file://"):]))
    files = collections.defaultdict(list)
    for (label, _, _), (_, path) in sorted(latest.items()):
        files[label].append(path)
    return dict(files)


def longest_tests(events, count=5):
    """The `count` longest test runs (a shard each) as text, from the BEP
    testResult events."""
    runs = []
    for event in events:
        result_id = event.get("id", {}).get("testResult")
        millis = event.get("testResult", {}).get("testAttemptDurationMillis")
        if result_id and millis is not None:
            runs.append((int(millis) / 1000, result_id.get("label", "?"),
                         result_id.get("shard", 0)))
    shards = collections.Counter(label for _, label, _ in runs)
    return ", ".join(f"{label}{f' shard {shard}' if shards[label] > 1 else ''} {seconds:.0f} s"
                     for seconds, label, shard in sorted(runs, reverse=True)[:count])


def xml_paths(label):
    """The test.xml files under bazel-testlogs: the target's own, else one
    per shard (shard_K_of_N/)."""
    package, name = label.lstrip("/").split(":")
    target = os.path.join(ROOT, "bazel-testlogs", package, name)
    whole = os.path.join(target, "test.xml")
    if os.path.exists(whole):
        return [whole]
    return sorted(glob.glob(os.path.join(target, "shard_*_of_*", "test.xml")))


def count_cases(paths):
    """(passed, failed, skipped [(case, reason)]) from JUnit XML files (a
    target's shards add up); passed and failed are lists of case names.
    None when no file has a case."""
    if isinstance(paths, str):
        paths = [paths]
    passed, failed, skipped = [], [], []
    for path in paths:
        _count_file(path, passed, failed, skipped)
    if len(passed) + len(failed) + len(skipped) == 0:
        return None
    return passed, failed, skipped


def _count_file(path, passed, failed, skipped):
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError):
        return
    for case in tree.iter("testcase"):
        name = case.get("classname", "") + "." + case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif (case.find("skipped") is not None
              or case.get("result") == "skipped"
              or case.get("status") == "notrun"):
            node = case.find("skipped")
            reason = node.get("message", "") if node is not None else ""
            reason = " ".join(reason.split())
            skipped.append((name, reason or "no reason given"))
        else:
            passed.append(name)


def backend_of(case_name, default="any"):
    """The backend a parametrized case runs on (`test_x[vulkan-f32]`)."""
    match = re.search(r"\[([^\]]*)\]", case_name)
    params = re.split(r"[-,]", match.group(1)) if match else []
    return next((p for p in params if p in BACKENDS), default)


def report_skipped(skipped, verbose, tags=None):
    """Prints the skipped cases, grouped unless verbose; `tags` maps a target
    to its backend tag, for cases that name no backend."""
    tags = tags or {}
    if verbose:
        for label, name, reason in skipped:
            print(f"SKIPPED {label} {name}: {reason}")
    else:
        groups = collections.Counter(
            (backend_of(name, tags.get(label, "any")), reason)
            for label, name, reason in skipped)
        for (backend, reason), count in sorted(groups.items()):
            print(f"SKIPPED {count:5d} on {backend}: {reason}")
    if skipped:
        more = "" if verbose else "; -v or QD_TEST_VERBOSE=1 lists every case"
        print(f"{len(skipped)} skipped (reasons above{more})")


def report_backends(outcomes):
    """Prints `backend NAME N passed, N failed, N skipped` per backend."""
    backends = sorted({backend for backend, _ in outcomes})
    for backend in backends:
        counts = [outcomes[(backend, kind)] for kind in ("passed", "failed", "skipped")]
        print(f"backend {backend:7s} {counts[0]} passed, {counts[1]} failed, "
              f"{counts[2]} skipped")


CONSUMER_LABEL = "examples/bazel_consumer (outside workspace, clean output base)"

# QD_TEST_CONSUMER, QD_TEST_VERBOSE and QD_DOCS_* are declared in
# quadrants/common/options.def; this script runs before the package is
# built, so it reads them itself.


def wants_consumer(flags, targets):
    """The outside-workspace check runs with the whole suite on the CPU: no
    explicit targets, no other backend's config, not turned off by
    QD_TEST_CONSUMER=0."""
    if os.environ.get("QD_TEST_CONSUMER", "") == "0" or targets != ["//..."]:
        return False
    configs = [f.split("=", 1)[1] for f in flags if f.startswith("--config=")]
    return all(c == "cpu" for c in configs)


def run_consumer():
    """Builds and runs examples/bazel_consumer from a fresh output base; True
    when its program printed PASS and exited 0."""
    command = [os.path.join(ROOT, "examples", "bazel_consumer", "run.sh")]
    print("+ " + command[0], flush=True)
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = result.stdout.splitlines()
    ok = result.returncode == 0 and any(l.startswith("PASS") for l in lines)
    if ok:
        print(f"PASSED {CONSUMER_LABEL}")
    else:
        print("\n".join(lines[-40:]))
        print(f"FAILED {CONSUMER_LABEL}: exit code {result.returncode}")
    return ok


DOCS_LABEL = "docs: ./qd docs builds the site with zero warnings"
# Sphinx, MyST, Selenium, numpy and matplotlib are Debian's packages: the
# site is built with Debian's interpreter, whichever runs this script.
DEBIAN_PYTHON = "/usr/bin/python3"


def wants_docs(flags, targets):
    """The website is built and tested with the whole suite on the CPU."""
    configs = [f.split("=", 1)[1] for f in flags if f.startswith("--config=")]
    return targets == ["//..."] and all(c == "cpu" for c in configs)


def run_docs(tmp):
    """Builds the user guide website (tools/build_docs.py, as ./qd docs
    does, into `tmp`), then runs tests/docs against it in headless
    Chromium. Returns (passed, failed) case names; screenshots go to
    docs/_build/screenshots."""
    site = os.path.join(tmp, "html")
    command = [DEBIAN_PYTHON, os.path.join(ROOT, "tools", "build_docs.py"), "--out", site]
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print("\n".join(result.stdout.splitlines()[-60:]))
        print(f"FAILED {DOCS_LABEL}: exit code {result.returncode}")
        return [], [DOCS_LABEL]
    print(f"PASSED {DOCS_LABEL}")
    env = dict(os.environ, QD_DOCS_SITE=site,
               QD_DOCS_SCREENSHOTS=os.path.join(ROOT, "docs", "_build", "screenshots"))
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "quadrants", "python"), ROOT])
    # A skipped docs test would hide a missing site or browser: it fails.
    return run_pytest_stage(DOCS_LABEL, [os.path.join(ROOT, "tests", "docs")], env, ROOT,
                            tmp)


def run_pytest_stage(label, paths, env, cwd, tmp, options=()):
    """Runs pytest on `paths` with Debian's Python; returns (passed, failed)
    case names, `label` (the stage before it, which passed) first. Skipped
    cases count as failed: each stage runs only where it can run in full."""
    junit = os.path.join(tmp, "stage_tests.xml")
    command = [DEBIAN_PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               *options, "--junitxml=" + junit, *paths]
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    cases = count_cases(junit)
    if cases is None:
        print("\n".join(result.stdout.splitlines()[-60:]))
        return [label], [f"{' '.join(paths)}: no results"]
    passed, failed, skipped = cases
    if failed or skipped:
        print("\n".join(result.stdout.splitlines()[-80:]))
    return [label] + passed, failed + [name for name, _ in skipped]


WHEEL_LABEL = "wheel: ./qd wheel --fast builds the CPython 3.11 wheel"


def wants_wheel(flags, targets):
    """The wheel is built and tested with the whole suite on the CPU, unless
    QD_TEST_WHEEL_BUILD=0."""
    return (os.environ.get("QD_TEST_WHEEL_BUILD", "") != "0"
            and wants_docs(flags, targets))


def run_wheel(tmp):
    """Builds the CPython 3.11 wheel as `./qd wheel --fast` does (the test
    build's objects, LLVM linked in) and runs tests/wheel against it in a
    fresh virtual environment. Returns (passed, failed) case names."""
    command = ["bazel", "build", "--config=wheel_fast", "//quadrants/python:wheel_cp311"]
    print("+ " + " ".join(command), flush=True)
    if subprocess.call(command, cwd=ROOT) != 0:
        print(f"FAILED {WHEEL_LABEL}")
        return [], [WHEEL_LABEL]
    out = subprocess.run(["bazel", "info", "--config=wheel_fast", "bazel-bin"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    built = os.path.join(out, "quadrants", "python", "wheel", "quadrants-cp311.whl")
    with open(built + ".name") as f:
        wheel = os.path.join(tmp, f.read().strip())
    with open(built, "rb") as src, open(wheel, "wb") as dst:
        dst.write(src.read())
    print(f"PASSED {WHEEL_LABEL} ({os.path.basename(wheel)}, "
          f"{os.path.getsize(wheel) / 2**20:.1f} MiB)")
    # No PYTHONPATH and no conftest: nothing of the checkout reaches the test.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["QD_TEST_WHEEL"] = wheel
    return run_pytest_stage(WHEEL_LABEL, [os.path.join(ROOT, "tests", "wheel", "test_wheel.py")],
                            env, tmp, tmp, options=["--noconftest"])


def main(argv):
    verbose = (any(a in VERBOSE_FLAGS for a in argv)
               or os.environ.get("QD_TEST_VERBOSE", "") not in ("", "0"))
    flags, targets = split_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        bep = os.path.join(tmp, "bep.json")
        command = ["bazel", "test", "--keep_going",
                   "--build_event_json_file=" + bep] + flags + targets
        print("+ " + " ".join(command), flush=True)
        begin = time.time()
        code = subprocess.call(command, cwd=ROOT)
        times = [f"bazel test {time.time() - begin:.0f} s"]
        events = read_events(bep) if os.path.exists(bep) else []

    passed = failed = 0
    skipped = []
    # (backend, passed|failed|skipped) -> cases: a parametrized case counts
    # for the backend it names, any other for its target's backend tag.
    outcomes = collections.Counter()
    tags = target_backends(events)
    xml = xml_files(events)
    for label, status in sorted(test_summaries(events).items()):
        tag = tags.get(label, "any")
        cases = (count_cases(xml.get(label) or xml_paths(label))
                 if status != "FAILED_TO_BUILD" else None)
        if cases is None:
            ok = status == "PASSED"
            passed, failed = passed + ok, failed + (not ok)
            outcomes[(tag, "passed" if ok else "failed")] += 1
            if not ok:
                print(f"FAILED {label}: {status}")
            continue
        case_passed, case_failed, case_skipped = cases
        if status != "PASSED" and not case_failed:
            case_failed = [label]  # crashed or timed out after its cases reported
            print(f"FAILED {label}: {status}")
        passed += len(case_passed)
        failed += len(case_failed)
        skipped += [(label, name, reason) for name, reason in case_skipped]
        for kind, names in (("passed", case_passed), ("failed", case_failed),
                            ("skipped", [n for n, _ in case_skipped])):
            for name in names:
                outcomes[(backend_of(name, tag), kind)] += 1

    # 0: all passed; 3: some tests failed; 4: no tests matched. Anything else
    # means the build itself broke.
    if code not in (0, 3, 4) and failed == 0:
        print(f"FAILED build: bazel exited with code {code}")
        failed += 1
    if wants_consumer(flags, targets):
        begin = time.time()
        ok = run_consumer()
        times.append(f"consumer {time.time() - begin:.0f} s")
        passed, failed = passed + ok, failed + (not ok)
        outcomes[("cpu", "passed" if ok else "failed")] += 1
    for stage, wanted, run in (("docs", wants_docs, run_docs), ("wheel", wants_wheel, run_wheel)):
        if not wanted(flags, targets):
            continue
        begin = time.time()
        with tempfile.TemporaryDirectory() as tmp:
            stage_passed, stage_failed = run(tmp)
        times.append(f"{stage} {time.time() - begin:.0f} s")
        for name in stage_failed:
            print(f"FAILED {name}")
        passed, failed = passed + len(stage_passed), failed + len(stage_failed)
        outcomes[("cpu", "passed")] += len(stage_passed)
        outcomes[("cpu", "failed")] += len(stage_failed)
    report_skipped(skipped, verbose, tags)
    # Where a run's time goes, for keeping CI within its budget.
    print("time: " + ", ".join(times))
    longest = longest_tests(events)
    if longest:
        print("longest tests: " + longest)
    report_backends(outcomes)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
