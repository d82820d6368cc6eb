"""The Vulkan (SPIR-V) backend beyond what the arch-parametrized suite covers:
gradients against the CPU backend op by op, the device paths a test forces
(staging copies, spin-locked 64-bit atomics, compare-exchange float atomics,
a device without f64), the offline cache, the errors for a missing driver
and for kernels that need the adstack, and qd.gpu's choice.

Tolerances: f32 kernels are compared with the CPU at rel 2e-5 (a few ulp of
the values and of the f64-routed math), f64 kernels at rel 1e-12 (the f64
routines reach ~1 ulp; gradients add a few roundings).
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

_VULKAN_REASON = runtime.arch_unavailable_reason(qd.vulkan)
needs_vulkan = pytest.mark.skipif(
    _VULKAN_REASON is not None or "vulkan" not in os.environ.get("QD_WANTED_ARCHS", "vulkan"),
    reason=f"arch vulkan unavailable: {_VULKAN_REASON}" if _VULKAN_REASON
    else "vulkan not in QD_WANTED_ARCHS")

_UNARY = ["sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "rsqrt", "asin", "acos", "abs"]
_BINARY = ["pow", "atan2", "mul", "div", "min", "max", "mod"]


def _unary_kernel(op):
    fn = {"abs": abs}.get(op) or getattr(qd, op)

    def build(x, y):
        @qd.kernel
        def run():
            for i in x:
                y[i] = fn(x[i]) * (1.0 + x[i])
        return run
    return build


def _binary_kernel(op):
    ops = {
        "pow": lambda a, b: a ** b,
        "atan2": qd.atan2,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b,
        "min": qd.min,
        "max": qd.max,
        "mod": lambda a, b: a % b,
    }
    fn = ops[op]

    def build(x, y):
        @qd.kernel
        def run():
            for i in x:
                y[i] = fn(x[i], 0.3 + x[(i + 1) % 8])
        return run
    return build


def _forward_and_grad(arch, dtype, build, values):
    qd.init(arch=arch, default_fp=dtype, offline_cache=False)
    try:
        x = qd.field(dtype, shape=8, needs_grad=True)
        y = qd.field(dtype, shape=8, needs_grad=True)
        run = build(x, y)
        x.from_numpy(values)
        run()
        y.grad.from_numpy(np.linspace(0.5, 1.5, 8))
        run.grad()
        return y.to_numpy(), x.grad.to_numpy()
    finally:
        qd.reset()


@needs_vulkan
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", _UNARY + _BINARY)
def test_gradient_matches_cpu(op, dtype):
    dt = getattr(qd, dtype)
    build = _unary_kernel(op) if op in _UNARY else _binary_kernel(op)
    # Inside every op's domain (asin/acos need |x| < 1, log and pow x > 0).
    values = np.linspace(0.05, 0.9, 8)
    cpu = _forward_and_grad(qd.cpu, dt, build, values)
    vulkan = _forward_and_grad(qd.vulkan, dt, build, values)
    rel = 2e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(vulkan[0], cpu[0], rtol=rel, atol=rel)
    np.testing.assert_allclose(vulkan[1], cpu[1], rtol=rel, atol=rel)


def _with_env(monkeypatch, **variables):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


@needs_vulkan
def test_forced_staging_copies_fields_ndarrays_and_numpy_arrays(monkeypatch):
    _with_env(monkeypatch, QD_VULKAN_FORCE_STAGING="1")
    qd.init(arch=qd.vulkan, offline_cache=False)
    try:
        x = qd.field(qd.f32, shape=64)
        a = qd.ndarray(qd.i32, shape=(64,))
        host = np.arange(64, dtype=np.float32)

        @qd.kernel
        def step(a: qd.types.ndarray(), h: qd.types.ndarray()):
            for i in x:
                x[i] = x[i] * 2.0 + h[i]
                a[i] += i
                h[i] = -h[i]

        x.from_numpy(np.ones(64, dtype=np.float32))
        step(a, host)
        step(a, host)
        # x: (1*2 + h)*2 - h; h flips sign twice; a gets i twice.
        np.testing.assert_allclose(x.to_numpy(), (2 + np.arange(64)) * 2 - np.arange(64))
        np.testing.assert_array_equal(a.to_numpy(), 2 * np.arange(64))
        np.testing.assert_array_equal(host, np.arange(64))
        x[3] = 7.0  # a host write between launches reaches the device
        step(a, host)
        assert x[3] == pytest.approx(7.0 * 2 + 3)  # h is back to +i
    finally:
        qd.reset()


@needs_vulkan
@pytest.mark.parametrize("variable", ["QD_VULKAN_NO_INT64_ATOMICS", "QD_VULKAN_NO_FLOAT_ATOMICS",
                                      "none"])
def test_contended_atomics_on_every_path(monkeypatch, variable):
    if variable != "none":
        _with_env(monkeypatch, **{variable: "1"})
    qd.init(arch=qd.vulkan, offline_cache=False)
    try:
        n = 1 << 14
        total_i64 = qd.field(qd.i64, shape=())
        bits = qd.field(qd.u64, shape=())
        total_f32 = qd.field(qd.f32, shape=())
        small = qd.field(qd.i16, shape=4)
        # Spread over 64 slots: without 64-bit atomics these take a spin
        # lock, and lavapipe ends a loop that spins 65535 times.
        total_f64 = qd.field(qd.f64, shape=64)
        low = qd.field(qd.i64, shape=64)

        @qd.kernel
        def accumulate():
            for i in range(n):
                total_i64[None] += (1 << 33) + i
                total_i64[None] -= 1
                bits[None] |= qd.u64(1) << qd.u64(i % 64)
                total_f32[None] += 1.0
                small[i % 4] += 1
                total_f64[i % 64] += 0.5
                qd.atomic_min(low[i % 64], -i)

        accumulate()
        assert total_i64[None] == n * (1 << 33) + n * (n - 1) // 2 - n
        assert bits[None] == 2**64 - 1
        assert total_f32[None] == float(n)
        np.testing.assert_array_equal(small.to_numpy(), [n // 4] * 4)
        np.testing.assert_array_equal(total_f64.to_numpy(), [0.5 * n / 64] * 64)
        np.testing.assert_array_equal(low.to_numpy(), -(n - 64 + np.arange(64)))
    finally:
        qd.reset()


def _spirv_opcodes(directory):
    """The opcodes of every instruction in the SPIR-V modules under
    `directory` (the 5-word header skipped)."""
    ops = set()
    for path in directory.glob("*.spv"):
        words = np.frombuffer(path.read_bytes(), dtype=np.uint32)
        at = 5
        while at < len(words):
            ops.add(int(words[at] & 0xFFFF))
            at += max(int(words[at] >> 16), 1)
    return ops


_OP_GROUP_NON_UNIFORM_FADD = 350


@needs_vulkan
@pytest.mark.parametrize("variable", ["none", "QD_VULKAN_NO_SUBGROUP_OPS",
                                      "QD_VULKAN_NO_FLOAT_ATOMICS"])
def test_scalar_loss_adds_once_per_subgroup(monkeypatch, tmp_path, variable):
    # A float add to one address every invocation shares is summed over the
    # subgroup's active invocations first (also under a branch only some
    # take); elsewhere, and where asked, each invocation adds its own value.
    if variable != "none":
        _with_env(monkeypatch, **{variable: "1"})
    # Both dumps move here, so a run's audit (which pairs every module with
    # its MSL) sees neither.
    _with_env(monkeypatch, QD_DUMP_SPIRV="1", QD_DUMP_SPIRV_DIR=str(tmp_path),
              QD_DUMP_MSL_DIR=str(tmp_path / "msl"))
    qd.init(arch=qd.vulkan, offline_cache=False)
    try:
        n = 100003
        x = qd.field(qd.f32, shape=n)
        loss = qd.field(qd.f32, shape=())
        loss64 = qd.field(qd.f64, shape=())
        some = qd.field(qd.f32, shape=())
        per_element = qd.field(qd.f32, shape=4)

        @qd.kernel
        def sums():
            for i in x:
                loss[None] += x[i]
                loss64[None] -= 2.0 * x[i]
                if i % 3 == 0:
                    some[None] += x[i]
                per_element[i % 4] += x[i]  # not one address: one atomic each

        # Multiples of 1/4 below 2^22: every partial sum is exact in f32, in
        # whatever order the subgroups add them.
        values = (np.arange(n) % 17 * 0.25).astype(np.float32)
        x.from_numpy(values)
        sums()
        v = values.astype(np.float64)
        assert loss[None] == v.sum()
        assert loss64[None] == -2.0 * v.sum()
        assert some[None] == v[::3].sum()
        np.testing.assert_array_equal(per_element.to_numpy(),
                                      [v[k::4].sum() for k in range(4)])
    finally:
        qd.reset()
    aggregated = _OP_GROUP_NON_UNIFORM_FADD in _spirv_opcodes(tmp_path)
    assert aggregated == (variable != "QD_VULKAN_NO_SUBGROUP_OPS")


@needs_vulkan
def test_f64_on_a_device_without_it_names_the_type(monkeypatch, capsys):
    _with_env(monkeypatch, QD_VULKAN_NO_FLOAT64="1")
    qd.init(arch=qd.vulkan, offline_cache=False)
    try:
        x = qd.field(qd.f64, shape=4)

        @qd.kernel
        def fill():
            for i in x:
                x[i] = 1.5

        with pytest.raises(qd.QuadrantsTypeError) as info:
            fill()
        message = str(info.value)
        assert "f64" in message and "shaderFloat64" in message and "fill" in message
        # f32 kernels still run, their math without f64 routines.
        y = qd.field(qd.f32, shape=4)

        @qd.kernel
        def trig():
            for i in y:
                y[i] = qd.sin(0.5 * i) + qd.pow(-2.0, 3.0)

        trig()
        np.testing.assert_allclose(y.to_numpy(), np.sin(0.5 * np.arange(4)) - 8, rtol=1e-5)

        # print() of f32 values: the host reads f64 bits, widened by hand.
        @qd.kernel
        def show():
            for i in range(1):
                print(y[1], -0.25, 3e10)

        show()
        qd.sync()
        expected = [y[1], -0.25, float(np.float32(3e10))]
        assert capsys.readouterr().out.split() == ["%f" % v for v in expected]
    finally:
        qd.reset()


@needs_vulkan
def test_offline_cache_hit_matches_a_fresh_compile_and_corrupt_entries_recompile(tmp_path):
    def run():
        qd.init(arch=qd.vulkan, offline_cache=True, offline_cache_file_path=str(tmp_path),
                check_out_of_bound=True)
        try:
            x = qd.field(qd.f32, shape=16, needs_grad=True)
            loss = qd.field(qd.f32, shape=(), needs_grad=True)

            @qd.kernel
            def compute(k: qd.i32):
                for i in range(k):
                    loss[None] += qd.sin(x[i]) * x[i]

            x.from_numpy(np.linspace(0, 1, 16).astype(np.float32))
            compute(16)
            loss.grad[None] = 1.0
            compute.grad(16)
            out = (loss[None], x.grad.to_numpy())
            compute(17)  # out of bounds: the error site survives a hit
            with pytest.raises(qd.QuadrantsAssertionError,
                               match=r"Out of bound access to field .* index 16 is outside"):
                qd.sync()
            return out, runtime.offline_cache_stats()
        finally:
            qd.reset()

    fresh, stats = run()
    assert stats["misses"] >= 2 and stats["hits"] == 0
    cached, stats = run()
    assert stats["hits"] >= 2 and stats["misses"] == 0
    assert cached[0] == fresh[0]
    np.testing.assert_array_equal(cached[1], fresh[1])
    entry_dir = tmp_path / "kernel_compilation_manager"
    entries = [p for p in os.listdir(entry_dir) if p.endswith(".qdc")]
    for name in entries:
        path = entry_dir / name
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2])  # truncated
    again, stats = run()
    assert stats["rejected"] >= 2 and stats["hits"] == 0
    assert again[0] == fresh[0]
    np.testing.assert_array_equal(again[1], fresh[1])


@needs_vulkan
def test_gpu_picks_vulkan_when_cuda_is_unavailable():
    if runtime.is_arch_available(qd.cuda):
        pytest.skip("CUDA is available here, so qd.gpu picks it")
    qd.init(arch=qd.gpu)
    try:
        assert runtime.state.arch == qd.vulkan
    finally:
        qd.reset()


def test_no_vulkan_driver_is_a_clear_error(tmp_path):
    # The loader with no driver (ICD) to load, in a fresh process.
    script = tmp_path / "no_driver.py"
    script.write_text(textwrap.dedent("""
        import quadrants as qd
        try:
            qd.init(arch=qd.vulkan)
        except qd.QuadrantsError as error:
            print("error:", error)
        else:
            print("initialized")
    """))
    env = dict(os.environ, VK_ICD_FILENAMES=str(tmp_path / "none.json"),
               VK_DRIVER_FILES=str(tmp_path / "none.json"),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "error:" in out and "vulkan" in out.lower(), out
    assert "not available" in out, out
    if "no Vulkan loader" in out:
        # Without libvulkan at all (a GPU bundle), the error names the loader.
        assert "libvulkan.so.1" in out, out
    else:
        assert "driver" in out or "device" in out, out


@test_utils.test(arch=qd.vulkan)
def test_long_serial_loops_with_continue_and_break_run_to_the_end():
    # Lavapipe ends an invocation's loops after 65535 back edges in total;
    # unrolled copies (with `continue` through a flag) keep these under it.
    totals = qd.field(qd.i64, shape=2)

    @qd.kernel
    def count(n: qd.i32):
        for _ in range(1):
            s = qd.i64(0)
            for j in range(n):
                if j % 3 == 0:
                    continue
                if j == n - 2:
                    break
                s += j
            totals[0] = s
            k = 0
            w = qd.i64(0)
            while k < n:
                k += 1
                if k % 5 == 0:
                    continue
                w += k
            totals[1] = w

    n = 300_000
    count(n)
    assert totals[0] == sum(j for j in range(n - 2) if j % 3)
    assert totals[1] == sum(k for k in range(1, n + 1) if k % 5)
