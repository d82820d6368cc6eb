"""qd.init(cpu_simd=...): the CPU backend runs parallel iterations in SIMD
lanes (the default), or keeps every task scalar with cpu_simd=False
(also the default under QD_CPU_SIMD=0). Results must not depend on it: integer kernels
match exactly, float kernels to the rounding a reassociated sum allows, and
adstack gradients to f64 round-off. The option keys the offline cache, so
code compiled one way is never loaded for the other.
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime

N = 4099  # not a multiple of any vector width: the remainder loop runs too


def run_kernels(simd):
    qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=False, default_fp=qd.f64,
            ad_stack_experimental_enabled=True)
    x = qd.field(qd.f64, shape=N, needs_grad=True)
    y = qd.field(qd.f64, shape=N)
    k = qd.field(qd.i32, shape=N)
    total = qd.field(qd.f64, shape=(), needs_grad=True)
    count = qd.field(qd.i64, shape=())

    @qd.kernel
    def saxpy(a: qd.f64):
        for i in x:
            y[i] = a * x[i] + qd.sin(x[i])
            k[i] = (i * 7) % 13 - 6

    @qd.kernel
    def reduce():
        for i in x:
            total[None] += y[i]
            count[None] += k[i]

    @qd.kernel
    def recurrence():
        for i in x:
            v = x[i]
            for _ in range(k[i] + 6):
                v = qd.sin(v) + 0.5 * v
            total[None] += v

    x.from_numpy(np.linspace(-2.0, 2.0, N))
    saxpy(1.5)
    reduce()
    total[None] = 0.0
    with qd.ad.Tape(loss=total):
        recurrence()
    return (y.to_numpy(), k.to_numpy(), count[None], total[None], x.grad.to_numpy(),
            runtime.state.options["cpu_simd"])


def test_results_do_not_depend_on_simd():
    y1, k1, c1, t1, g1, on = run_kernels(True)
    y0, k0, c0, t0, g0, off = run_kernels(False)
    assert on is True and off is False
    np.testing.assert_array_equal(k1, k0)
    assert c1 == c0
    # Each lane calls the same C library sin: equal up to how LLVM fuses
    # a * sin + ... (1 ulp, 2^-52 relative).
    np.testing.assert_allclose(y1, y0, rtol=2.0**-52, atol=1e-300)
    # The sum's order differs (threads, lanes): f64 summation error is at
    # most N * eps * sum|v| ~ 4099 * 2.2e-16 * 8200 ~ 7e-9 for |v| < 2.
    assert t1 == pytest.approx(t0, abs=1e-8)
    np.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-15)
    assert np.abs(g1).max() > 0.1


def test_simd_is_the_default_and_readable(monkeypatch):
    monkeypatch.delenv("QD_CPU_SIMD", raising=False)
    qd.init(arch=qd.cpu)
    assert qd.lang.impl.current_cfg().cpu_simd is True
    monkeypatch.setenv("QD_CPU_SIMD", "0")  # the scalar suite's default
    qd.init(arch=qd.cpu)
    assert qd.lang.impl.current_cfg().cpu_simd is False
    qd.init(arch=qd.cpu, cpu_simd=True)  # an explicit argument wins
    assert qd.lang.impl.current_cfg().cpu_simd is True
    qd.init(arch=qd.cpu, cpu_simd=False)
    assert qd.lang.impl.current_cfg().cpu_simd is False


def test_the_environment_switch_takes_only_0_or_1(monkeypatch):
    monkeypatch.setenv("QD_CPU_SIMD", "1")
    qd.init(arch=qd.cpu)
    assert qd.lang.impl.current_cfg().cpu_simd is True
    monkeypatch.setenv("QD_CPU_SIMD", "off")
    with pytest.raises(ValueError, match="QD_CPU_SIMD must be 0 .* or 1 .* got 'off'"):
        qd.init(arch=qd.cpu)


def test_a_non_bool_is_rejected():
    with pytest.raises(qd.QuadrantsTypeError, match="cpu_simd must be bool"):
        qd.init(arch=qd.cpu, cpu_simd="yes")


def test_the_option_keys_the_offline_cache(tmp_path):
    def session(simd):
        qd.init(arch=qd.cpu, cpu_simd=simd, offline_cache=True,
                offline_cache_file_path=str(tmp_path))
        f = qd.field(qd.f32, shape=64)

        @qd.kernel
        def fill():
            for i in f:
                f[i] = i * 0.5

        fill()
        assert f[63] == 31.5
        stats = runtime.offline_cache_stats()
        return stats["hits"], stats["misses"]

    assert session(True) == (0, 1)
    assert session(False) == (0, 1)   # compiled scalar, not loaded
    assert session(False) == (1, 0)
    assert session(True) == (1, 0)
