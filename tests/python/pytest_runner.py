"""Runs one pytest file under Bazel, writing JUnit XML where Bazel asks."""
import json
import os
import sys

import pytest


class AmdgpuCodegenReport:
    """Under QD_AMDGPU_CODEGEN_ONLY (see docs/architecture.md), every kernel
    the file's tests compile is also compiled to an AMDGPU code object per
    target and checked. At the end this prints the counts, writes them to
    Bazel's undeclared outputs (tools/amdgpu_codegen_summary.py sums them
    over a run) and fails the run when any kernel failed or the targets
    disagree on how many kernels they saw."""

    def pytest_sessionfinish(self, session, exitstatus):
        from quadrants._core import core  # pylint: disable=import-outside-toplevel
        counts = [tuple(c) for c in core.amdgpu_codegen_only_counts()]
        for target, compiled, failed in counts:
            print(f"\nAMDGPU codegen-only {target}: {compiled} code objects checked, "
                  f"{failed} failed")
        outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
        if outputs:
            with open(os.path.join(outputs, "amdgpu_codegen_counts.json"), "w",
                      encoding="utf-8") as f:
                json.dump([list(c) for c in counts], f)
        totals = {compiled + failed for _, compiled, failed in counts}
        if any(failed for _, _, failed in counts) or len(totals) > 1:
            print("AMDGPU codegen-only: FAILED")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


if __name__ == "__main__":
    path = sys.argv[1]
    args = [path, "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + os.environ["XML_OUTPUT_FILE"])
    args.extend(sys.argv[2:])
    plugins = [AmdgpuCodegenReport()] if os.environ.get("QD_AMDGPU_CODEGEN_ONLY") else []
    sys.exit(pytest.main(args, plugins=plugins))
