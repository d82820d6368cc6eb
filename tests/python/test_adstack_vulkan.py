"""The adstack on Vulkan (SPIR-V): gradients through dynamic loops agree
with the CPU backend, capacities are exact (read back through
adstack_stats()), heaps are reused, and an overflow raises once at sync and
then clears, however many invocations overflowed together.

The general adstack suite (test_adstack*.py) runs on vulkan too; the tests
here check what is specific to the SPIR-V lowering: f32 without f64,
mixed float/int/bool stacks in one kernel, the heap layout's invocation
cap, and the overflow word shared by every invocation.
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils

VULKAN = dict(arch=qd.vulkan, ad_stack_experimental_enabled=True)


def _recurrence(x, loss, n):
    @qd.kernel
    def recur():
        for i in x:
            v = x[i]
            for _ in range(n[None]):
                v = qd.sin(v) * 0.9 + 0.1
            loss[None] += v
    return recur


def _grads_on(arch, trips, dtype, xv, **options):
    """loss and x.grad of the recurrence on `arch` (a fresh runtime)."""
    qd.init(arch=arch, ad_stack_experimental_enabled=True, offline_cache=False, **options)
    try:
        x = qd.field(dtype, shape=len(xv), needs_grad=True)
        loss = qd.field(dtype, shape=(), needs_grad=True)
        n = qd.field(qd.i32, shape=())
        x.from_numpy(xv)
        n[None] = trips
        kernel = _recurrence(x, loss, n)
        with qd.ad.Tape(loss=loss):
            kernel()
        qd.sync()
        return loss[None], x.grad.to_numpy(), runtime.adstack_stats()
    finally:
        qd.reset()


def _needs_vulkan():
    reason = runtime.arch_unavailable_reason(qd.vulkan)
    if reason is not None:
        pytest.skip(f"arch vulkan unavailable: {reason}")


@pytest.mark.parametrize("trips", [1, 20, 50, 1000])
def test_f32_gradients_and_capacities_match_cpu(trips):
    _needs_vulkan()
    xv = np.linspace(-0.7, 0.9, 300).astype(np.float32)
    options = dict(default_ad_stack_size=2, debug=True)
    cpu = _grads_on(qd.cpu, trips, qd.f32, xv, **options)
    vk = _grads_on(qd.vulkan, trips, qd.f32, xv, **options)
    # Both run the same f32 operations in the same order per element, but
    # sin differs by an ulp or two between libm and the shader: over
    # `trips` contracting steps (factor <= 0.9) the error stays a few ulp
    # of the O(1) values.
    assert vk[0] == pytest.approx(cpu[0], rel=1e-5)
    assert vk[1] == pytest.approx(cpu[1], rel=1e-4, abs=1e-6)
    # Exact capacity: K trips need K + 2 slots (default_ad_stack_size=2
    # would overflow under debug=True otherwise).
    flat = [c for task in vk[2]["capacities"] for c in task]
    assert flat == [trips + 2], vk[2]
    assert vk[2]["capacities"] == cpu[2]["capacities"]


@test_utils.test(**VULKAN, default_ad_stack_size=2, debug=True)
def test_mixed_float_int_bool_stacks_in_one_kernel():
    n = 64
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    trips = qd.field(qd.i32, shape=())
    xv = np.linspace(-1.0, 1.0, n).astype(np.float32)
    x.from_numpy(xv)
    trips[None] = 12

    @qd.kernel
    def mixed():
        for i in x:
            v = x[i]
            k = i % 3          # an int carried across iterations
            flip = i % 2 == 0  # a bool carried across iterations
            for _ in range(trips[None]):
                if flip:
                    v = qd.sin(v) * 0.8 + 0.01 * k
                else:
                    v = v * v * 0.5 + 0.2
                k = (k + 1) % 3
                flip = not flip
            loss[None] += v

    with qd.ad.Tape(loss=loss):
        mixed()
    qd.sync()
    got = x.grad.to_numpy()

    # Reference in f64: forward-mode derivative of the same recurrence.
    ref = np.zeros(n)
    for i in range(n):
        v, d, k, flip = float(xv[i]), 1.0, i % 3, i % 2 == 0
        for _ in range(12):
            if flip:
                v, d = np.sin(v) * 0.8 + 0.01 * k, 0.8 * np.cos(v) * d
            else:
                v, d = v * v * 0.5 + 0.2, v * d
            k, flip = (k + 1) % 3, not flip
        ref[i] = d
    # f32 through 12 steps: a few ulp of O(1) values.
    assert got == pytest.approx(ref, rel=1e-4, abs=1e-6)
    caps = runtime.adstack_stats()["capacities"]
    assert all(c == 12 + 2 for task in caps for c in task), caps


@test_utils.test(**VULKAN, default_ad_stack_size=2)
def test_heaps_are_reused_across_launches():
    n = 256
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    trips = qd.field(qd.i32, shape=())
    x.from_numpy(np.linspace(0.0, 1.0, n).astype(np.float32))
    kernel = _recurrence(x, loss, trips)
    trips[None] = 40
    with qd.ad.Tape(loss=loss):
        kernel()
    grows = runtime.adstack_stats()["heap_grows"]
    for t in (40, 10, 40):  # no larger need: the heaps stay
        trips[None] = t
        with qd.ad.Tape(loss=loss):
            kernel()
        assert runtime.adstack_stats()["heap_grows"] == grows
    trips[None] = 400  # ten times the slots: the heaps grow
    with qd.ad.Tape(loss=loss):
        kernel()
    assert runtime.adstack_stats()["heap_grows"] > grows


@test_utils.test(**VULKAN, debug=True, ad_stack_size=32)
def test_overflow_in_65536_invocations_raises_once_then_clears():
    n = 1 << 16
    x = qd.field(qd.f32, shape=n, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    trips = qd.field(qd.i32, shape=())
    x.from_numpy(np.linspace(-1.0, 1.0, n).astype(np.float32))
    kernel = _recurrence(x, loss, trips)
    trips[None] = 100  # every invocation pushes past 32 slots
    loss[None] = 0
    kernel()
    loss.grad[None] = 1
    with pytest.raises(qd.QuadrantsError, match="Adstack overflow") as info:
        kernel.grad()
        qd.sync()
    message = str(info.value)
    assert "recur" in message and "task" in message, message
    qd.sync()  # raised once: the word was cleared
    x.grad.to_numpy()

    # Within capacity the same kernel runs clean with the right gradient.
    trips[None] = 20
    x.grad.fill(0)
    loss[None] = 0
    kernel()
    loss.grad[None] = 1
    kernel.grad()
    qd.sync()
    xv = np.linspace(-1.0, 1.0, n)
    d = np.ones(n)
    v = xv.copy()
    for _ in range(20):
        v, d = np.sin(v) * 0.9 + 0.1, 0.9 * np.cos(v) * d
    assert x.grad.to_numpy() == pytest.approx(d, rel=1e-4, abs=1e-6)


def _many_stacks_reverse_code(tmp_path, monkeypatch, stacks):
    """The MSL (from the unoptimized module, as QD_DUMP_MSL writes it) and
    the optimized SPIR-V of the reverse task of a kernel carrying a
    `stacks`-component vector through one dynamic loop: one adstack per
    component, each pushed once per iteration."""
    msl_dir, spv_dir = tmp_path / f"msl{stacks}", tmp_path / f"spv{stacks}"
    monkeypatch.setenv("QD_DUMP_MSL", "1")
    monkeypatch.setenv("QD_DUMP_MSL_DIR", str(msl_dir))
    monkeypatch.setenv("QD_DUMP_SPIRV", "1")
    monkeypatch.setenv("QD_DUMP_SPIRV_DIR", str(spv_dir))
    p0 = qd.Vector.field(stacks, qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)
    n = qd.field(qd.i32, shape=())

    @qd.kernel
    def many_stacks():
        for i in p0:
            p = p0[i]
            for _ in range(n[None]):
                p = p * p * 0.5 + 0.25
            loss[None] += p.sum()

    n[None] = 3
    with qd.ad.Tape(loss=loss):
        many_stacks()
    caps = [c for task in runtime.adstack_stats()["capacities"] for c in task]
    assert caps == [3 + 2] * stacks, caps
    # The reverse task (the forward kernel's name, dumped second) is the
    # largest module of the kernels compiled here.
    metal = max(msl_dir.glob("*.metal"), key=lambda p: p.stat().st_size)
    spv = max(spv_dir.glob("*.spv"), key=lambda p: p.stat().st_size)
    assert metal.stem.endswith("_1") and spv.stem.endswith("_1"), (metal, spv)
    assert not list(msl_dir.glob("*.msl_error"))
    return metal.read_text(), spv


def _push_sites(msl):
    """Lines of each push in `msl`: from the read of the stack's counter to
    its increment (the slot store and, for stacks with adjoints, the
    adjoint's zeroing lie between)."""
    import re  # pylint: disable=import-outside-toplevel
    counters = re.search(r"spvUnsafeArray<uint, \d+> (\w+);", msl).group(1)
    lines = [line.strip() for line in msl.splitlines() if line.strip()]
    read_at = {}
    sites = []
    for k, line in enumerate(lines):
        read = re.fullmatch(rf"uint (\w+) = {counters}\[([^\]]+)\];", line)
        if read:
            read_at[(read.group(1), read.group(2))] = k
        bump = re.fullmatch(rf"{counters}\[([^\]]+)\] = (\w+) \+ 1u;", line)
        if bump and (bump.group(2), bump.group(1)) in read_at:
            sites.append(k - read_at[(bump.group(2), bump.group(1))] + 1)
    return sites


# Enough stacks that per-stack code would dominate the counts below, few
# enough that compiling the kernel stays quick.
_FEW_STACKS = 40


def _msl_tools_missing():
    """Why the MSL and SPIR-V text of a kernel cannot be read here (None
    when they can): QD_DUMP_MSL loads SPIRV-Cross's C library, and the
    optimized module is read with spirv-dis (Debian's libspirv-cross-c-shared0
    and spirv-tools; ./qd setup installs them, the GPU machine has neither)."""
    import ctypes  # pylint: disable=import-outside-toplevel
    import shutil  # pylint: disable=import-outside-toplevel
    for name in ("libspirv-cross-c-shared.so.0", "libspirv-cross-c-shared.so"):
        try:
            ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return "SPIRV-Cross (libspirv-cross-c-shared.so.0) is not installed"
    if shutil.which("spirv-dis") is None:
        return "spirv-dis (spirv-tools) is not installed"
    return None


@test_utils.test(**VULKAN)
def test_msl_lines_per_push_and_no_per_stack_phis(tmp_path, monkeypatch):
    import subprocess  # pylint: disable=import-outside-toplevel
    missing = _msl_tools_missing()
    if missing is not None:
        pytest.skip(missing)
    msl_few, spv_few = _many_stacks_reverse_code(tmp_path, monkeypatch, _FEW_STACKS)
    msl_many, _ = _many_stacks_reverse_code(tmp_path, monkeypatch, 2 * _FEW_STACKS)
    sites = _push_sites(msl_many)
    # Every component's stack is pushed at least once per iteration.
    assert len(sites) >= 2 * _FEW_STACKS, len(sites)
    per_push = sum(sites) / len(sites)
    print(f"MSL: {len(sites)} pushes with {2 * _FEW_STACKS} stacks, {per_push:.2f} lines per push "
          f"(longest {max(sites)})")
    assert per_push <= 5 and max(sites) <= 5, sites
    # A push is no structured branch: the number of `if` does not grow
    # with the stacks.
    assert msl_many.count("if (") <= msl_few.count("if ("), (
        msl_few.count("if ("), msl_many.count("if ("))
    # The counters are one array indexed by stack id (each component has a
    # stack of its iterations and one of its checkpoints, should the launch
    # segment the loop), in the MSL and after SPIRV-Tools' optimizer (no phi
    # per stack at the loop headers).
    counters = 2 * _FEW_STACKS
    assert f"{counters}>" in msl_few or f"[{counters}]" in msl_few
    text = subprocess.run(["spirv-dis", str(spv_few)], capture_output=True, text=True,
                          check=True).stdout
    phis = sum(1 for line in text.splitlines() if "OpPhi %uint" in line)
    print(f"optimized reverse task with {_FEW_STACKS} stacks: {phis} u32 OpPhi")
    # The float phis are the carried components and their adjoints, which
    # the kernel itself carries; counters would add u32 phis per stack.
    assert phis < 10, phis
