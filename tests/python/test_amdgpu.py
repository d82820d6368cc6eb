"""The amdgpu arch without an AMD GPU: the unavailability error, and
codegen-only mode (QD_AMDGPU_CODEGEN_ONLY), where kernels compile to checked
code objects and launches are skipped. Each case runs in a subprocess with
its own environment, since the mode is read when a Program starts."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import quadrants as qd

# A forward kernel with math, and a reverse-mode kernel whose inner loop
# bound is dynamic, so its gradient uses the adstack.
_SCRIPT = textwrap.dedent("""
    import json, sys
    import quadrants as qd
    from quadrants._core import core
    arch, cache = sys.argv[1], sys.argv[2]
    options = dict(ad_stack_experimental_enabled=True)
    if cache:
        options.update(offline_cache=True, offline_cache_file_path=cache)
    else:
        options.update(offline_cache=False)
    qd.init(arch=getattr(qd, arch), **options)
    x = qd.field(qd.f32, shape=8, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def fill(a: qd.f32):
        for i in x:
            x[i] = qd.sin(a * i) + qd.exp(0.1 * i) + qd.f32(qd.pow(qd.f64(i), 0.5))

    @qd.kernel
    def reduce(n: qd.i32):
        for i in x:
            v = x[i]
            for _ in range(n):
                v = qd.sin(v)
            loss[None] += v

    error = None
    try:
        fill(0.5)
        reduce(3)
        loss.grad[None] = 1.0
        reduce.grad(3)
    except qd.QuadrantsError as e:
        error = f"{type(e).__name__}: {e}"
    print(json.dumps({
        "x": [float(v) for v in x.to_numpy()],
        "grad": [float(v) for v in x.grad.to_numpy()],
        "counts": core.amdgpu_codegen_only_counts(),
        "cache": qd.lang.runtime.offline_cache_stats(),
        "error": error,
    }))
""")


def _run(tmp_path, arch, codegen_only=None, cache="", extra_env=None):
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(qd.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_root] + [p for p in sys.path if p])
    env.pop("QD_AMDGPU_CODEGEN_ONLY", None)
    if codegen_only is not None:
        env["QD_AMDGPU_CODEGEN_ONLY"] = codegen_only
    env.update(extra_env or {})
    script = tmp_path / "amdgpu_session.py"  # kernels need their source in a file
    script.write_text(_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), arch, str(cache)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    return proc


def _result(proc):
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_unavailable_amdgpu_error_reads_like_cuda(tmp_path):
    proc = _run(tmp_path, "amdgpu", codegen_only="")
    if proc.returncode == 0:
        pytest.skip("an AMD GPU is available here")
    last = proc.stderr.strip().splitlines()[-1]
    # "CUDA not available: <reason>" has the same shape.
    assert last.startswith("quadrants.lang.exception.QuadrantsRuntimeError: "), last
    assert "AMDGPU not available: " in last, last


@pytest.fixture(scope="module")
def codegen_toolchain(tmp_path_factory):
    """Skips when ld.lld or the ROCm device library is missing here (a GPU
    bundle carries neither): codegen-only mode then fails by design."""
    proc = _run(tmp_path_factory.mktemp("probe"), "cpu", codegen_only="gfx942")
    lines = proc.stderr.splitlines()
    if proc.returncode == 0:
        lines.append(json.loads(proc.stdout.strip().splitlines()[-1])["error"] or "")
    missing = [line.strip() for line in lines if "was not found; looked at" in line]
    if missing:
        pytest.skip(f"AMDGPU code objects cannot be linked here: {missing[-1]}")


@pytest.mark.usefixtures("codegen_toolchain")
def test_codegen_only_amdgpu_compiles_every_kernel_and_skips_launches(tmp_path):
    result = _result(_run(tmp_path, "amdgpu", codegen_only="gfx942"))
    assert result["error"] is None, result["error"]
    # fill, reduce and reduce's gradient, each a checked code object.
    assert result["counts"] == [["gfx942", 3, 0]]
    # Nothing ran: the fields are as allocated.
    assert result["x"] == [0.0] * 8 and result["grad"] == [0.0] * 8


@pytest.mark.usefixtures("codegen_toolchain")
def test_codegen_only_checks_kernels_of_another_arch_on_the_side(tmp_path):
    on_side = _result(_run(tmp_path, "cpu", codegen_only="gfx90a, gfx942,gfx1100"))
    plain = _result(_run(tmp_path, "cpu"))
    assert on_side["error"] is None, on_side["error"]
    assert on_side["counts"] == [["gfx90a", 3, 0], ["gfx942", 3, 0], ["gfx1100", 3, 0]]
    assert plain["counts"] == []
    # The CPU still runs the kernels: results are checked as usual.
    assert on_side["x"] == plain["x"] and on_side["grad"] == plain["grad"]
    assert any(g != 0.0 for g in on_side["grad"])


@pytest.mark.usefixtures("codegen_toolchain")
def test_codegen_only_failure_names_the_kernel_and_target_and_is_counted(tmp_path):
    # A linker that fails makes every code object fail.
    proc = _run(tmp_path, "cpu", codegen_only="gfx90a", extra_env={"QD_LLD": "/bin/false"})
    result = _result(proc)
    assert result["error"] is not None
    assert result["error"].startswith("QuadrantsCompilationError: ")
    assert "kernel 'fill'" in result["error"] and "gfx90a" in result["error"]
    assert result["counts"] == [["gfx90a", 0, 1]]


def test_codegen_only_unknown_target_is_a_clear_error(tmp_path):
    proc = _run(tmp_path, "amdgpu", codegen_only="gfx9999")
    assert proc.returncode != 0
    assert "QD_AMDGPU_CODEGEN_ONLY=gfx9999" in proc.stderr, proc.stderr
    assert "AMDGPU not available" in proc.stderr, proc.stderr


@pytest.mark.usefixtures("codegen_toolchain")
def test_code_objects_are_cached_per_target(tmp_path):
    first = _result(_run(tmp_path, "amdgpu", codegen_only="gfx90a", cache=tmp_path / "cache"))
    assert first["cache"]["misses"] == 3 and first["cache"]["hits"] == 0
    again = _result(_run(tmp_path, "amdgpu", codegen_only="gfx90a", cache=tmp_path / "cache"))
    assert again["cache"]["hits"] == 3 and again["cache"]["misses"] == 0
    # The target is part of the key: another target compiles afresh.
    other = _result(_run(tmp_path, "amdgpu", codegen_only="gfx1100", cache=tmp_path / "cache"))
    assert other["cache"]["misses"] == 3 and other["cache"]["hits"] == 0
