"""Every SPIR-V module the Python suite generates, audited (SPEC section 4:
vulkan validated, metal as MSL). tests/python/pytest_runner.py runs this
file after each test file of the suite whenever vulkan is wanted: the Vulkan
backend then writes each module the file's tests compile (QD_DUMP_SPIRV) and
the MSL SPIRV-Cross makes of it (QD_DUMP_MSL), and this test checks them:
every module goes through spirv-val for Vulkan 1.2, failing on the first
invalid one, and every module must have its MSL, with no cross-compilation
failure. Under --config=metal the suite runs on vulkan for this audit
(Metal itself runs on macOS only; this checks what would be handed to it).
"""
import glob
import os
import subprocess

import pytest

import quadrants as qd
from quadrants.lang import runtime

SPIRV_VAL = "/usr/bin/spirv-val"


def _dump_dirs():
    """The directories pytest_runner.py set up, or None outside it."""
    if os.environ.get("QD_DUMP_SPIRV") != "1" or os.environ.get("QD_DUMP_MSL") != "1":
        return None
    spv, msl = os.environ.get("QD_DUMP_SPIRV_DIR"), os.environ.get("QD_DUMP_MSL_DIR")
    return (spv, msl) if spv and msl else None


def _compile_probe():
    """One kernel compiled on vulkan, so the audit also sees that the dumps
    are on in this process (a file whose tests compile nothing on vulkan
    would otherwise pass with nothing written)."""
    qd.init(arch=qd.vulkan)
    try:
        x = qd.field(qd.f32, shape=8)

        @qd.kernel
        def spirv_msl_audit_probe():
            for i in x:
                x[i] = i * 0.5

        spirv_msl_audit_probe()
        qd.sync()
    finally:
        qd.reset()


@pytest.mark.parametrize("arch", ["vulkan"])
def test_every_module_of_the_run_validates_and_cross_compiles(arch, capsys):
    dirs = _dump_dirs()
    if dirs is None:
        pytest.skip("the audit reads the modules of a run through tests/python/pytest_runner.py "
                    "--spirv-msl-audit=...")
    reason = runtime.arch_unavailable_reason(getattr(runtime, arch))
    if reason is not None:
        pytest.skip(f"arch {arch} unavailable: {reason}")
    assert os.path.exists(SPIRV_VAL), "spirv-val (Debian package spirv-tools) is missing"
    spv_dir, msl_dir = dirs
    _compile_probe()

    modules = sorted(glob.glob(os.path.join(spv_dir, "*.spv")))
    probes = [p for p in modules if "spirv_msl_audit_probe" in os.path.basename(p)]
    assert probes, f"the probe kernel's module is not in {spv_dir}: the dump is off"
    for path in modules:
        check = subprocess.run([SPIRV_VAL, "--target-env", "vulkan1.2", path],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, f"{path} is invalid: {check.stdout}{check.stderr}"
    report = [f"spirv-val: {len(modules)} modules valid ({len(probes)} of the probe)"]

    failures = sorted(glob.glob(os.path.join(msl_dir, "*.msl_error")))
    assert not failures, "SPIRV-Cross failed on " + ", ".join(
        f"{os.path.basename(p)}: {open(p, encoding='utf-8').read().strip()}"
        for p in failures[:5])
    stems = {os.path.splitext(os.path.basename(p))[0] for p in modules}
    metal = sorted(glob.glob(os.path.join(msl_dir, "*.metal")))
    msl = {os.path.splitext(os.path.basename(p))[0] for p in metal}
    assert stems == msl, f"modules without MSL: {sorted(stems - msl)[:5]}"
    for path in metal:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert "#include <metal_stdlib>" in text and "kernel void" in text, path
    report.append(f"MSL: {len(msl)} kernels cross-compiled, 0 failures")
    # The counts go to the test log whether or not pytest captures output.
    with capsys.disabled():
        print("\n" + "\n".join(report))
