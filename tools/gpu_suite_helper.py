"""Runs inside the bundled Python 3.11 for tools/gpu_suite.sh.

    gpu_suite_helper.py check UNPACKED          assert the interpreter is isolated
    gpu_suite_helper.py pytest RESULTS [args]   pytest, recording each outcome
    gpu_suite_helper.py summary RESULTS RC      print `N passed, N failed`

Outcomes go to RESULTS line by line as tests finish, so a crash of the
process still leaves the counts (a test that started and never finished
counts as failed).
"""
import os
import re
import sys
import time

# Shared libraries any glibc system has (the bundle leaves them out on
# purpose); any other file mapped from outside the bundle is a leak.
SYSTEM_LIB = re.compile(
    r"/(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl"
    r"|libstdc\+\+|libgcc_s)\.so[.0-9]*$")


def mapped_files():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith("/"):
                paths.add(fields[5].strip().removesuffix(" (deleted)"))
    return sorted(paths)


def outside(paths, top):
    return [p for p in paths
            if not p.startswith(top + os.sep) and not SYSTEM_LIB.search(p)
            and not re.match(r"/dev/|/usr/lib/locale/|(/usr)?/lib/x86_64-linux-gnu/gconv/", p)]


def check(top):
    top = os.path.realpath(top)
    import numpy  # pylint: disable=import-outside-toplevel
    import pytest  # pylint: disable=import-outside-toplevel,unused-import
    import quadrants  # pylint: disable=import-outside-toplevel
    from quadrants._core import core  # pylint: disable=import-outside-toplevel
    print(f"gpu_suite check: python {sys.version.split()[0]} at {sys.executable}")
    print(f"gpu_suite check: sys.prefix {sys.prefix}")
    print(f"gpu_suite check: sys.path {sys.path}")
    print(f"gpu_suite check: numpy {numpy.__version__} from {numpy.__file__}")
    print(f"gpu_suite check: quadrants from {quadrants.__file__}, core {core.__file__}")
    problems = []
    for entry in sys.path:
        if entry and not os.path.realpath(entry).startswith(top + os.sep):
            problems.append(f"sys.path entry outside the bundle: {entry}")
    for name, module in sorted(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name != "__main__" and path and not os.path.realpath(path).startswith(top + os.sep):
            problems.append(f"module {name} from outside the bundle: {path}")
    maps = mapped_files()
    problems += [f"mapped from outside the bundle: {p}" for p in outside(maps, top)]
    system = sorted(p for p in maps if SYSTEM_LIB.search(p))
    print(f"gpu_suite check: {len(maps)} files mapped; from the system: {system}")
    if problems:
        print("\n".join("gpu_suite check: FAILED: " + p for p in problems))
        sys.exit(1)
    print("gpu_suite check: ok (interpreter, stdlib, numpy, pytest, quadrants and "
          "their libraries all come from the bundle)")


class Recorder:
    """Appends `<outcome>\\t<nodeid>` lines as tests start and finish, and
    prints a progress line to stderr at most every PROGRESS_S seconds, since
    a whole suite runs for minutes under a quiet `-q`."""

    PROGRESS_S = 30

    def __init__(self, path):
        self.out = open(path, "a", buffering=1)  # pylint: disable=consider-using-with
        self.total = 0
        self.done = 0
        self.failed = 0
        self.begin = self.last = time.monotonic()

    def pytest_collection_finish(self, session):
        self.total = len(session.items)

    def _progress(self):
        now = time.monotonic()
        if now - self.last >= self.PROGRESS_S:
            self.last = now
            print(f"\ngpu_suite: {self.done}/{self.total} tests done, {self.failed} failed, "
                  f"{now - self.begin:.0f} s", file=sys.stderr, flush=True)

    def _write(self, outcome, nodeid):
        self.out.write(f"{outcome}\t{nodeid}\n")

    def pytest_runtest_logstart(self, nodeid, location):  # pylint: disable=unused-argument
        self._write("started", nodeid)

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown":
            self.done += 1
            self._progress()
        if report.failed:
            self.failed += 1
            self._write("failed", report.nodeid)
        elif report.skipped:
            self._write("skipped", report.nodeid)
        elif report.when == "call":
            self._write("passed", report.nodeid)

    def pytest_unconfigure(self, config):  # pylint: disable=unused-argument
        self.out.close()

    def pytest_collectreport(self, report):
        if report.failed:
            self._write("failed", "collect:" + report.nodeid)


def run_pytest(results, args):
    import pytest  # pylint: disable=import-outside-toplevel
    return int(pytest.main(args, plugins=[Recorder(results)]))


def summary(results, rc):
    seen = {}  # nodeid -> outcomes of its phases
    try:
        with open(results) as f:
            for line in f:
                outcome, _, nodeid = line.rstrip("\n").partition("\t")
                seen.setdefault(nodeid, set()).add(outcome)
    except FileNotFoundError:
        pass
    state = {}
    for nodeid, outcomes in seen.items():
        for outcome in ("failed", "passed", "skipped"):
            if outcome in outcomes:
                state[nodeid] = outcome
                break
        else:
            state[nodeid] = "crashed"
    counts = {k: sum(1 for v in state.values() if v == k)
              for k in ("passed", "failed", "skipped", "crashed")}
    for nodeid, outcome in state.items():
        if outcome == "crashed":
            print(f"gpu_suite: {nodeid} started and never finished (the process died)")
    failed = counts["failed"] + counts["crashed"]
    if rc not in (0, 1) and failed == 0:
        failed = 1  # pytest itself failed (usage error, internal error, nothing ran)
        print(f"gpu_suite: pytest exited with status {rc}; counted as one failure")
    print(f"gpu_suite: {counts['skipped']} skipped (reasons in pytest's short summary above)")
    print(f"{counts['passed']} passed, {failed} failed")
    return 1 if failed or rc else 0


def main(argv):
    command = argv[1] if len(argv) > 1 else ""
    if command == "check" and len(argv) == 3:
        check(argv[2])
        return 0
    if command == "pytest" and len(argv) >= 3:
        return run_pytest(argv[2], argv[3:])
    if command == "summary" and len(argv) == 4:
        return summary(argv[2], int(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
