"""The gradient fuzzer's quick mode (tools/gradfuzz), run in CI: kernels
from the fixed seeds 0..149 on cpu and 0..29 on vulkan (lavapipe), each
checked against central differences, qd.ad.Tape, forward mode and f32
(tools/gradfuzz/oracle.py). Any mismatch, crash, hang or compile error fails the test
and leaves a shrunk, runnable repro file in the test's output directory.
Each case fuzzes one block of consecutive seeds on one arch. Each Bazel
target selects one arch with `-k` and runs its blocks in shards side by side
(shard_count in BUILD.bazel); a third target runs cpu with scalar tasks
(QD_CPU_SIMD=0)."""
import os
import time

import pytest

from quadrants.lang import runtime
from tools.gradfuzz import runner

QUICK_SEEDS = range(150)
# Lavapipe compiles every pipeline with LLVM on the CPU (seconds per reverse
# kernel on one core), so vulkan runs the first 30 of the same seeds to keep
# CI on two cores within its time budget; long runs cover more
# (`--arch vulkan`, docs/architecture.md).
SEEDS = {"cpu": QUICK_SEEDS, "vulkan": QUICK_SEEDS[:30]}
# Seeds per case, a minute or two of one core per block on cpu, two to
# three on vulkan: short enough that no shard holds up the end of a CI run.
BLOCK = {"cpu": 50, "vulkan": 15}
BLOCKS = [(arch, seeds[k:k + BLOCK[arch]]) for arch, seeds in SEEDS.items()
          for k in range(0, len(seeds), BLOCK[arch])]


def _wanted(arch):
    wanted = os.environ.get("QD_WANTED_ARCHS", "").strip()
    return not wanted or arch in {w.strip() for w in wanted.split(",")}


def _workers():
    """Bazel runs the shards of a target side by side, one core each; run
    alone, a case fuzzes its block in a worker process per four cores, at
    least two."""
    if int(os.environ.get("TEST_TOTAL_SHARDS", "0") or 0) > 1:
        return 1
    return max(2, (os.cpu_count() or 2) // 4)


@pytest.mark.parametrize("arch,seeds", BLOCKS,
                         ids=[f"{arch}-seeds{s[0]}to{s[-1]}" for arch, s in BLOCKS])
def test_gradfuzz_quick_mode_finds_nothing(arch, seeds, tmp_path):
    if not _wanted(arch):
        pytest.skip(f"arch {arch} is not in QD_WANTED_ARCHS")
    reason = runtime.arch_unavailable_reason(getattr(runtime, arch))
    if reason is not None:
        pytest.skip(f"arch {arch} unavailable: {reason}")
    out = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR") or str(tmp_path)
    begin = time.time()
    results, summary = runner.run(seeds, arch=arch, workers=_workers(), threads=2,
                                  out=os.path.join(out, f"gradfuzz-{arch}"), progress_every=50)
    print(summary)
    simd = "scalar tasks" if os.environ.get("QD_CPU_SIMD", "").strip() == "0" else "SIMD lanes"
    print(f"quick mode: {len(results)} kernels on {arch} ({simd} on cpu) in "
          f"{time.time() - begin:.1f} s")
    findings = [r for r in results if r["status"] in runner.FINDINGS]
    assert not findings, "\n".join(
        f"seed {r['seed']}: {r['status']}: {r['details'][:500]} (repro: {r.get('repro')})"
        for r in findings)
    assert sorted(r["seed"] for r in results) == list(seeds)
    # The oracle compares something: most kernels have a nonzero gradient
    # (about four in five over many seeds; a block of 15 may hold fewer).
    assert sum(r["grad_max"] > 0 for r in results) > 0.7 * len(results)
