"""Every SPIR-V module the Python suite generates, audited (SPEC section 4:
vulkan validated, metal as MSL): the suite runs on vulkan in a subprocess
that writes each module it compiles (QD_DUMP_SPIRV) and the MSL SPIRV-Cross
makes of it (QD_DUMP_MSL). Then every module goes through spirv-val for
Vulkan 1.2, failing on the first invalid one, and every module must have its
MSL, with no cross-compilation failure. Runs under --config=metal (Metal
itself runs on macOS only; this checks what would be handed to it).
"""
import glob
import os
import subprocess
import sys

import pytest

from quadrants.lang import runtime

HERE = os.path.dirname(os.path.abspath(__file__))
# Files whose tests do not compile kernels on vulkan, or that need data
# outside this package (examples, the README), or this file itself.
# (the gradient fuzzer's own tests run on the CPU).
_EXCLUDED = {"test_spirv_msl_audit.py", "test_demo.py", "test_mass_spring_example.py",
             "test_diff_mpm_example.py", "test_gradfuzz.py", "test_gradfuzz_quick.py",
             "test_readme.py", "test_utils.py"}


def test_every_module_of_the_suite_validates_and_cross_compiles(tmp_path):
    reason = runtime.arch_unavailable_reason(runtime.vulkan)
    if reason is not None:
        pytest.skip(f"arch vulkan unavailable: {reason}")
    spirv_val = "/usr/bin/spirv-val"
    assert os.path.exists(spirv_val), "spirv-val (Debian package spirv-tools) is missing"
    files = sorted(f for f in glob.glob(os.path.join(HERE, "test_*.py"))
                   if os.path.basename(f) not in _EXCLUDED)
    spv_dir, msl_dir = tmp_path / "spirv", tmp_path / "msl"
    # A fresh offline cache: hits dump their modules too, but the suite's
    # own cache tests expect to start empty.
    env = dict(os.environ, QD_WANTED_ARCHS="vulkan", XDG_CACHE_HOME=str(tmp_path / "cache"),
               QD_DUMP_SPIRV="1", QD_DUMP_SPIRV_DIR=str(spv_dir),
               QD_DUMP_MSL="1", QD_DUMP_MSL_DIR=str(msl_dir),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("XML_OUTPUT_FILE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
         "-W", "ignore::DeprecationWarning", "--basetemp", str(tmp_path / "suite")] + files,
        env=env, capture_output=True, text=True, timeout=1500, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    print("vulkan suite:", summary)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    modules = sorted(glob.glob(str(spv_dir / "*.spv")))
    assert len(modules) > 100, f"only {len(modules)} modules were written"
    for path in modules:
        check = subprocess.run([spirv_val, "--target-env", "vulkan1.2", path],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, f"{path} is invalid: {check.stdout}{check.stderr}"
    print(f"spirv-val: {len(modules)} modules valid")

    failures = sorted(glob.glob(str(msl_dir / "*.msl_error")))
    assert not failures, "SPIRV-Cross failed on " + ", ".join(
        f"{os.path.basename(p)}: {open(p).read().strip()}" for p in failures[:5])
    stems = {os.path.splitext(os.path.basename(p))[0] for p in modules}
    msl = {os.path.splitext(os.path.basename(p))[0]
           for p in glob.glob(str(msl_dir / "*.metal"))}
    assert stems == msl, f"modules without MSL: {sorted(stems - msl)[:5]}"
    for path in glob.glob(str(msl_dir / "*.metal"))[:50]:
        text = open(path).read()
        assert "#include <metal_stdlib>" in text and "kernel void" in text, path
    print(f"MSL: {len(msl)} kernels cross-compiled, 0 failures")
