#!/usr/bin/python3
"""Runs the Bazel tests and prints one summary line `N passed, N failed`.

usage: run_tests.py [bazel test args, e.g. --config=cpu] [targets]

Counts individual test cases (GoogleTest and pytest write JUnit XML); a test
target without case-level results counts as one. Every skipped case is listed
with its reason, so nothing is skipped silently. Exits non-zero when anything
failed or the build broke.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def split_args(argv):
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


def xml_path(label):
    package, name = label.lstrip("/").split(":")
    return os.path.join(ROOT, "bazel-testlogs", package, name, "test.xml")


def count_cases(path):
    """(passed, failed, skipped [(case, reason)]) from one JUnit XML file."""
    passed, failed, skipped = 0, 0, []
    try:
        tree = ElementTree.parse(path)
    except (OSError, ElementTree.ParseError):
        return None
    for case in tree.iter("testcase"):
        name = case.get("classname", "") + "." + case.get("name", "")
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif (case.find("skipped") is not None
              or case.get("result") == "skipped"
              or case.get("status") == "notrun"):
            node = case.find("skipped")
            reason = node.get("message", "") if node is not None else ""
            reason = " ".join(reason.split())
            skipped.append((name, reason or "no reason given"))
        else:
            passed += 1
    if passed + failed + len(skipped) == 0:
        return None
    return passed, failed, skipped


def main(argv):
    flags, targets = split_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        bep = os.path.join(tmp, "bep.json")
        command = ["bazel", "test", "--keep_going",
                   "--build_event_json_file=" + bep] + flags + targets
        print("+ " + " ".join(command), flush=True)
        code = subprocess.call(command, cwd=ROOT)
        events = read_events(bep) if os.path.exists(bep) else []

    passed = failed = 0
    skipped = []
    for label, status in sorted(test_summaries(events).items()):
        cases = count_cases(xml_path(label)) if status != "FAILED_TO_BUILD" else None
        if cases is None:
            ok = status == "PASSED"
            passed, failed = passed + ok, failed + (not ok)
            if not ok:
                print(f"FAILED {label}: {status}")
            continue
        case_passed, case_failed, case_skipped = cases
        if status != "PASSED" and case_failed == 0:
            case_failed = 1  # crashed or timed out after its cases reported
            print(f"FAILED {label}: {status}")
        passed += case_passed
        failed += case_failed
        skipped += [(label, name, reason) for name, reason in case_skipped]

    # 0: all passed; 3: some tests failed; 4: no tests matched. Anything else
    # means the build itself broke.
    if code not in (0, 3, 4) and failed == 0:
        print(f"FAILED build: bazel exited with code {code}")
        failed += 1
    for label, name, reason in skipped:
        print(f"SKIPPED {label} {name}: {reason}")
    if skipped:
        print(f"{len(skipped)} skipped (reasons above)")
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
