"""The offline cache (SPEC section 5): compiled kernels stored on disk, keyed
by IR + config + compiler, reused by later qd.init() sessions and processes.

A hit must behave exactly like a fresh compile: the kernel here is a
reverse-mode adstack recurrence whose trip counts come from a field, so a hit
has to restore the object code, the task list, the serialized SizeExprs (the
launch-time capacities are compared) and the error sites. Gradients are
compared bit for bit between the fresh and the cached run, and against f64
central differences (h = 1e-6; rel 1e-6 covers round-off ~1e-10/h and
truncation ~h^2). A corrupt or truncated entry must be detected, deleted and
recompiled, never crash.
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

N = 6


def _cache_archs():
    """The LLVM archs with an offline cache that can run here (and are wanted)."""
    archs = test_utils._wanted([qd.cpu, qd.cuda])  # pylint: disable=protected-access
    return [pytest.param(a, id=a.name, marks=pytest.mark.skipif(
        runtime.arch_unavailable_reason(a) is not None,
        reason=f"arch {a.name} unavailable: {runtime.arch_unavailable_reason(a)}"))
            for a in archs]


def _run_recurrence(cache_dir, arch=qd.cpu, **options):
    """Inits with the cache at `cache_dir`, runs forward + grad of the
    recurrence and returns (loss, x.grad, adstack capacities, cache stats)."""
    qd.init(arch=arch, ad_stack_experimental_enabled=True, default_fp=qd.f64,
            offline_cache=True, offline_cache_file_path=str(cache_dir), **options)
    x = qd.field(qd.f64, shape=N, needs_grad=True)
    trips = qd.field(qd.i32, shape=N)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def recurrence():
        for i in x:
            v = x[i]
            for _ in range(trips[i]):
                v = qd.sin(v) * 0.7 + 0.2
            loss[None] += v

    x.from_numpy(np.linspace(0.1, 1.1, N))
    trips.from_numpy(np.arange(1, N + 1, dtype=np.int32) * 3)
    loss[None] = 0.0
    recurrence()
    loss.grad[None] = 1.0
    recurrence.grad()
    result = (loss[None], x.grad.to_numpy(),
              [list(c) for c in runtime.adstack_stats()["capacities"]],
              runtime.offline_cache_stats())
    qd.reset()
    return result


def _reference_gradient():
    def f(x0, k):
        v = x0
        for _ in range(k):
            v = np.sin(v) * 0.7 + 0.2
        return v
    xs = np.linspace(0.1, 1.1, N)
    h = 1e-6
    return np.array([(f(xs[i] + h, 3 * (i + 1)) - f(xs[i] - h, 3 * (i + 1))) / (2 * h)
                     for i in range(N)])


def _entry_dir(cache_dir):
    """Where the entries of offline_cache_file_path=cache_dir are."""
    return os.path.join(cache_dir, "kernel_compilation_manager")


def _entries(cache_dir):
    return sorted(p for p in os.listdir(_entry_dir(cache_dir)) if p.endswith(".qdc"))


@pytest.mark.parametrize("arch", _cache_archs())
def test_second_session_hits_and_matches_a_fresh_compile(tmp_path, arch):
    loss0, grad0, caps0, stats0 = _run_recurrence(tmp_path, arch)
    assert stats0["directory"] == _entry_dir(tmp_path)
    assert stats0["misses"] >= 2 and stats0["hits"] == 0  # forward and grad
    assert len(_entries(tmp_path)) == stats0["misses"]
    np.testing.assert_allclose(grad0, _reference_gradient(), rtol=1e-6, atol=1e-9)

    loss1, grad1, caps1, stats1 = _run_recurrence(tmp_path, arch)
    assert stats1["hits"] == stats0["misses"] and stats1["misses"] == 0
    assert loss1 == loss0
    np.testing.assert_array_equal(grad1, grad0)
    # The SizeExpr came back from disk: the largest trip count is 3 * N, and
    # the capacity is exactly trips + 2.
    assert caps1 == caps0 and max(max(c) for c in caps1 if c) == 3 * N + 2


def test_another_process_hits(tmp_path):
    _run_recurrence(tmp_path)
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = {sys.path!r}
        from tests.python.test_offline_cache import _run_recurrence
        loss, grad, caps, stats = _run_recurrence({str(tmp_path)!r})
        print(stats["hits"], stats["misses"], repr(loss))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    hits, misses, _ = out.stdout.split()
    assert int(hits) >= 2 and int(misses) == 0


@pytest.mark.parametrize("arch", _cache_archs())
@pytest.mark.parametrize("damage", ["truncate_half", "truncate_to_zero", "flip_byte",
                                    "garbage", "append"])
def test_corrupt_entries_are_recompiled(tmp_path, damage, arch):
    _, grad0, caps0, stats0 = _run_recurrence(tmp_path, arch)
    for name in _entries(tmp_path):
        path = os.path.join(_entry_dir(tmp_path), name)
        data = bytearray(open(path, "rb").read())
        if damage == "truncate_half":
            data = data[:len(data) // 2]
        elif damage == "truncate_to_zero":
            data = b""
        elif damage == "flip_byte":
            data[len(data) * 2 // 3] ^= 0x40
        elif damage == "garbage":
            data = os.urandom(len(data))
        else:
            data += b"\x00trailing"
        open(path, "wb").write(bytes(data))

    _, grad1, caps1, stats1 = _run_recurrence(tmp_path, arch)
    assert stats1["hits"] == 0
    assert stats1["rejected"] == stats0["misses"] == stats1["misses"]
    np.testing.assert_array_equal(grad1, grad0)
    assert caps1 == caps0
    # The entries were rewritten, so the next session hits again.
    assert _run_recurrence(tmp_path, arch)[3]["hits"] == stats0["misses"]


def test_codegen_options_key_the_cache(tmp_path):
    stats0 = _run_recurrence(tmp_path)[3]
    stats1 = _run_recurrence(tmp_path, debug=True)[3]
    assert stats1["hits"] == 0 and stats1["misses"] == stats0["misses"]
    assert len(_entries(tmp_path)) == 2 * stats0["misses"]


def test_source_locations_survive_a_hit(tmp_path):
    def run():
        qd.init(arch=qd.cpu, check_out_of_bound=True, offline_cache_file_path=str(tmp_path))

        @qd.kernel
        def out_of_bounds(a: qd.types.ndarray(qd.f32, 1)):
            for i in range(a.shape[0] + 1):
                a[i] = 1.0

        with pytest.raises(qd.QuadrantsError) as info:
            out_of_bounds(np.zeros(4, dtype=np.float32))
            qd.sync()
        stats = runtime.offline_cache_stats()
        qd.reset()
        return str(info.value), stats

    message0, stats0 = run()
    message1, stats1 = run()
    assert stats0["misses"] == 1 and stats1["hits"] == 1
    assert message1 == message0
    assert "out_of_bounds" in message1 and "test_offline_cache.py:" in message1


def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    qd.init(arch=qd.cpu, offline_cache=False, offline_cache_file_path=str(tmp_path))

    @qd.kernel
    def fill(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            a[i] = 2.0

    fill(np.zeros(3, dtype=np.float32))
    assert runtime.offline_cache_stats() == dict(directory="", hits=0, misses=0, rejected=0,
                                                 store_failures=0, last_store_error="")
    qd.reset()
    monkeypatch.setenv("QD_OFFLINE_CACHE", "0")
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path))
    fill(np.zeros(3, dtype=np.float32))
    assert runtime.offline_cache_stats()["directory"] == ""
    qd.reset()
    assert os.listdir(tmp_path) == []


def test_unwritable_directory_only_costs_a_recompile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    qd.init(arch=qd.cpu, offline_cache_file_path=str(blocker / "cache"))

    @qd.kernel
    def fill(a: qd.types.ndarray(qd.f32, 1)):
        for i in range(a.shape[0]):
            a[i] = 2.0

    a = np.zeros(3, dtype=np.float32)
    with pytest.warns(UserWarning, match=r"fill.*offline cache cannot store.*cache"):
        fill(a)
    assert (a == 2.0).all()
    stats = runtime.offline_cache_stats()
    assert stats["misses"] == 1 and stats["store_failures"] == 1
    assert "cache" in stats["last_store_error"]
    qd.reset()


def test_cache_path_accepts_path_objects_and_rejects_other_types(tmp_path):
    qd.init(arch=qd.cpu, offline_cache_file_path=tmp_path / "sub")
    assert runtime.offline_cache_stats()["directory"] == _entry_dir(tmp_path / "sub")
    qd.reset()
    with pytest.raises(TypeError, match="offline_cache_file_path"):
        qd.init(arch=qd.cpu, offline_cache_file_path=3)


def test_a_kernel_without_tasks_hits(tmp_path):
    for expected_hits in (0, 1):
        qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path))

        @qd.kernel
        def empty():
            pass

        empty()
        stats = runtime.offline_cache_stats()
        assert (stats["hits"], stats["rejected"]) == (expected_hits, 0)
        qd.reset()


def _kernels_in_order(count):
    """Runs `count` distinct kernels, one after another."""
    out = qd.field(qd.i32, shape=count)
    for k in range(count):
        @qd.kernel
        def put(value: qd.i32):
            out[qd.static(k)] = value * qd.static(k + 1)
        put(3)
    return out.to_numpy()


@pytest.mark.parametrize("policy,factor,kept", [
    ("lru", 0.5, [2, 3]), ("fifo", 0.75, [3]), ("lru", 0.0, [0, 1, 2, 3]),
    ("never", 1.0, [0, 1, 2, 3]), ("version", 1.0, [0, 1, 2, 3]), ("fifo", 1.0, [])])
def test_a_session_over_the_size_limit_evicts_as_the_policy_says(tmp_path, policy, factor,
                                                                  kept):
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path))
    np.testing.assert_array_equal(_kernels_in_order(4), [3, 6, 9, 12])
    qd.reset()
    written = _entries(tmp_path)
    assert len(written) == 4
    entry_dir = tmp_path / "kernel_compilation_manager"
    # Kernel k's entry, by the order the entries were written in.
    by_age = sorted(written, key=lambda n: os.stat(entry_dir / n).st_mtime_ns)
    # A session over the limit evicts at its end, however little it ran.
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path),
            offline_cache_cleaning_policy=policy, offline_cache_max_size_of_files=1,
            offline_cache_cleaning_factor=factor)
    qd.reset()
    assert _entries(tmp_path) == sorted(by_age[k] for k in kept)
    assert os.path.exists(entry_dir / "qdcache.qdb") == bool(kept)
    # Within the limit nothing goes.
    qd.init(arch=qd.cpu, offline_cache_file_path=str(tmp_path),
            offline_cache_max_size_of_files=1 << 30, offline_cache_cleaning_factor=1.0)
    qd.reset()
    assert _entries(tmp_path) == sorted(by_age[k] for k in kept)


def test_cleaning_options_are_checked(tmp_path):
    with pytest.raises(ValueError, match=r"offline_cache_cleaning_factor must be in \[0, 1\]"):
        qd.init(arch=qd.cpu, offline_cache_cleaning_factor=1.5)
    with pytest.raises(Exception, match="offline_cache_cleaning_policy"):
        qd.init(arch=qd.cpu, offline_cache_cleaning_policy="random")
