"""Runs one pytest file under Bazel, writing JUnit XML where Bazel asks.

usage: pytest_runner.py [--spirv-msl-audit=AUDIT_FILE] TEST_FILE [pytest args]

With --spirv-msl-audit and vulkan among the wanted archs (QD_WANTED_ARCHS
empty or naming it), every SPIR-V module the file's tests compile and the MSL
made of each are written to this run's temporary directory, and AUDIT_FILE
(test_spirv_msl_audit.py) runs after the file's tests to audit them, so
each module is audited by the run that compiles it.
Under Bazel's shard_count, each shard runs its share of the cases.
"""
import json
import os
import sys
import tempfile

import pytest

AUDIT_FLAG = "--spirv-msl-audit="


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


class BazelShard:
    """Bazel's test sharding (shard_count): shard i of n runs the collected
    cases i, i + n, i + 2n, ... of those left after -k and other selection,
    so each case runs in exactly one shard and the shards' JUnit files add
    up to the whole target. The cases of `every_shard` (the audit, which
    checks what its own shard compiled) run in each shard."""

    def __init__(self, index, total, every_shard=()):
        self.index, self.total = index, total
        self.every_shard = {os.path.abspath(p) for p in every_shard}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        always = [i for i in items if os.path.abspath(str(i.path)) in self.every_shard]
        shared = [i for i in items if os.path.abspath(str(i.path)) not in self.every_shard]
        mine = shared[self.index::self.total]
        others = [i for k, i in enumerate(shared) if k % self.total != self.index]
        if others:
            config.hook.pytest_deselected(items=others)
        items[:] = mine + always


def bazel_shard(every_shard):
    """The BazelShard plugin when Bazel runs this target in shards, else None.
    Touching the status file tells Bazel that the runner shards."""
    total = int(os.environ.get("TEST_TOTAL_SHARDS", "0") or 0)
    if total <= 1:
        return None
    status = os.environ.get("TEST_SHARD_STATUS_FILE")
    if status:
        with open(status, "a", encoding="utf-8"):
            pass
    return BazelShard(int(os.environ["TEST_SHARD_INDEX"]), total, every_shard)


def vulkan_wanted():
    wanted = os.environ.get("QD_WANTED_ARCHS", "").strip()
    return not wanted or "vulkan" in {w.strip() for w in wanted.split(",")}


def start_audit():
    """Points the Vulkan backend's module and MSL dumps (QD_DUMP_SPIRV,
    QD_DUMP_MSL; subprocesses of the tests inherit them) at fresh
    directories that test_spirv_msl_audit.py then reads."""
    root = tempfile.mkdtemp(prefix="spirv_msl_audit_", dir=os.environ.get("TEST_TMPDIR"))
    os.environ.update(QD_DUMP_SPIRV="1", QD_DUMP_SPIRV_DIR=os.path.join(root, "spirv"),
                      QD_DUMP_MSL="1", QD_DUMP_MSL_DIR=os.path.join(root, "msl"))


def main(argv):
    audit = [a[len(AUDIT_FLAG):] for a in argv if a.startswith(AUDIT_FLAG)]
    argv = [a for a in argv if not a.startswith(AUDIT_FLAG)]
    files = argv[:1]
    audit = audit[:1] if audit and vulkan_wanted() else []
    if audit:
        start_audit()
        files += audit
    args = files + ["-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]
    if os.environ.get("XML_OUTPUT_FILE"):
        args.append("--junitxml=" + os.environ["XML_OUTPUT_FILE"])
    args.extend(argv[1:])
    plugins = [AmdgpuCodegenReport()] if os.environ.get("QD_AMDGPU_CODEGEN_ONLY") else []
    shard = bazel_shard(audit)
    if shard:
        plugins.append(shard)
    return pytest.main(args, plugins=plugins)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
