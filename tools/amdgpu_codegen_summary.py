#!/usr/bin/env python3
"""Sums the AMDGPU codegen-only counts of a `bazel test --config=amdgpu` run.

Each Python test target writes amdgpu_codegen_counts.json to its undeclared
outputs (see tests/python/pytest_runner.py); this adds them up per target
and exits non-zero when a kernel failed, a test target wrote no counts, or
there are none at all.

    bazel test --config=amdgpu //tests/python/... && tools/amdgpu_codegen_summary.py
"""
import argparse
import collections
import json
import os
import sys
import zipfile

NAME = "amdgpu_codegen_counts.json"


def _read(target_dir):
    """The counts one test target wrote, or None."""
    outputs = os.path.join(target_dir, "test.outputs")
    plain = os.path.join(outputs, NAME)
    if os.path.exists(plain):
        with open(plain, encoding="utf-8") as f:
            return json.load(f)
    archive = os.path.join(outputs, "outputs.zip")
    if os.path.exists(archive):
        with zipfile.ZipFile(archive) as z:
            if NAME in z.namelist():
                return json.loads(z.read(NAME))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("testlogs", nargs="?", default="bazel-testlogs/tests/python")
    args = parser.parse_args()
    compiled = collections.Counter()
    failed = collections.Counter()
    missing = []
    targets = 0
    for name in sorted(os.listdir(args.testlogs)):
        target_dir = os.path.join(args.testlogs, name)
        if not os.path.exists(os.path.join(target_dir, "test.log")):
            continue
        counts = _read(target_dir)
        if counts is None:
            missing.append(name)
            continue
        targets += 1
        for target, ok, bad in counts:
            compiled[target] += ok
            failed[target] += bad
    for target in compiled:
        print(f"{target}: {compiled[target]} code objects checked, {failed[target]} failed")
    print(f"over {targets} test targets")
    if missing:
        print("no counts from: " + ", ".join(missing))
    if not compiled or missing or any(failed.values()):
        print("FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
