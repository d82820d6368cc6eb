"""The CPython 3.11 wheel, installed by pip into a fresh virtual environment,
runs with nothing of this checkout: no PYTHONPATH, no LD_LIBRARY_PATH, an
empty working directory. tools/run_tests.py builds the wheel
(`./qd wheel --fast`) and runs this file with QD_TEST_WHEEL set to it; the
checks are those a user's first session makes: import, a kernel, a
gradient, a loop through the adstack, the offline cache across processes,
Vulkan (lavapipe here), and that every binary in the wheel loads only the
wheel's own libraries and glibc, libstdc++ and libgcc_s."""
import os
import re
import subprocess
import sys
import textwrap
import zipfile

import pytest

WHEEL = os.environ.get("QD_TEST_WHEEL", "")
# What a manylinux wheel may take from the system.
SYSTEM = re.compile(r"^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|librt|libpthread|"
                    r"libstdc\+\+|libgcc_s)\.so")

pytestmark = pytest.mark.skipif(not os.path.isfile(WHEEL),
                                reason="QD_TEST_WHEEL names no wheel (tools/run_tests.py "
                                       "builds one)")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    env_dir = root / "venv"
    # Debian's numpy comes from the system's site packages; the wheel is the
    # only quadrants there.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)],
                   check=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet",
                    WHEEL], check=True)
    work = root / "work"
    work.mkdir()
    return python, work


def run(venv, body, name="script.py", extra_env=None):
    """Runs `body` in the venv's Python from an empty directory, with only
    PATH (and `extra_env`) in the environment; returns its stdout."""
    python, work = venv
    script = work / name
    script.write_text(textwrap.dedent(body))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work)}
    env.update(extra_env or {})
    result = subprocess.run([python, str(script)], cwd=work, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_imports_from_the_venv_and_runs_a_kernel(venv):
    out = run(venv, """
        import numpy as np
        import quadrants as qd
        qd.init(arch=qd.cpu)

        @qd.kernel
        def scale(x: qd.types.ndarray(qd.f32, 1), s: qd.f32):
            for i in range(x.shape[0]):
                x[i] *= s

        a = np.arange(8, dtype=np.float32)
        scale(a, 3.0)
        assert a.tolist() == [3.0 * i for i in range(8)], a
        print(qd.__file__)
    """)
    assert os.path.join("venv", "lib") in out, out


def test_gradient_and_adstack_loop(venv):
    # d/dx of sum_i x_i^3 is 3 x_i^2 (exact in f64); the loop
    # v <- 0.5 v + x, n times from v = x, has dv/dx = 2 - 0.5^n.
    run(venv, """
        import numpy as np
        import quadrants as qd
        qd.init(arch=qd.cpu, default_fp=qd.f64, ad_stack_experimental_enabled=True)
        n = 5
        x = qd.field(qd.f64, shape=n, needs_grad=True)
        steps = qd.field(qd.i32, shape=n)
        loss = qd.field(qd.f64, shape=(), needs_grad=True)
        x.from_numpy(np.linspace(0.5, 2.0, n))
        steps.from_numpy(np.arange(1, n + 1, dtype=np.int32))

        @qd.kernel
        def cube():
            for i in x:
                loss[None] += x[i] ** 3

        with qd.ad.Tape(loss=loss):
            cube()
        xs = x.to_numpy()
        np.testing.assert_allclose(x.grad.to_numpy(), 3 * xs ** 2, rtol=1e-14)

        @qd.kernel
        def loop():
            for i in x:
                v = x[i]
                for _ in range(steps[i]):
                    v = 0.5 * v + x[i]
                loss[None] += v

        x.grad.fill(0)
        with qd.ad.Tape(loss=loss):
            loop()
        want = 2.0 - 0.5 ** np.arange(1, n + 1)
        np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-14)
    """)


def test_offline_cache_serves_a_second_process(venv):
    body = """
        import sys
        import quadrants as qd
        qd.init(arch=qd.cpu, offline_cache=True, offline_cache_file_path=sys.argv[0] + ".cache")
        f = qd.field(qd.i32, shape=4)

        @qd.kernel
        def fill():
            for i in f:
                f[i] = i * 7

        fill()
        assert f.to_numpy().tolist() == [0, 7, 14, 21]
        stats = qd.lang.runtime.offline_cache_stats()
        print("hits", stats["hits"], "misses", stats["misses"])
    """
    first = run(venv, body, name="cached.py")
    second = run(venv, body, name="cached.py")
    assert "hits 0" in first and "misses 0" not in first, first
    assert "misses 0" in second and "hits 0" not in second, second


def test_vulkan_runs_a_kernel(venv):
    out = run(venv, """
        import quadrants as qd
        reason = qd.lang.runtime.arch_unavailable_reason(qd.vulkan)
        if reason is not None:
            print("VULKAN UNAVAILABLE", reason)
            raise SystemExit(0)
        qd.init(arch=qd.vulkan)
        b = qd.field(qd.f32, shape=4)

        @qd.kernel
        def fill():
            for i in b:
                b[i] = i * 2.0

        fill()
        assert b.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
        print("vulkan ok")
    """)
    # The CI machine has lavapipe (Debian's mesa-vulkan-drivers).
    assert "vulkan ok" in out, out


def test_every_binary_loads_only_the_wheel_and_the_base_system(tmp_path):
    with zipfile.ZipFile(WHEEL) as z:
        z.extractall(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    elves = [p for p in tmp_path.rglob("*") if p.is_file() and
             p.read_bytes()[:4] == b"\x7fELF"]
    assert any(p.name.startswith("_quadrants_core.cpython-311") for p in elves), elves
    assert any(p.parent.name == "_libs" for p in elves), elves
    for elf in elves:
        out = subprocess.run(["ldd", str(elf)], env=env, capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            assert "not found" not in line, (elf, line)
            if len(parts) >= 3 and parts[1] == "=>":
                inside = os.path.realpath(parts[2]).startswith(str(tmp_path))
                assert inside or SYSTEM.match(parts[0]), (elf.name, line)
