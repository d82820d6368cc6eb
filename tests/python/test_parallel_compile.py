"""A CPU kernel's tasks compile on several threads (num_compile_threads):
each group of tasks becomes an object of its own, and the kernel runs the
same as when one thread compiles it whole. The offline cache stores the
objects together; an entry written by either compiles loads in the other,
and a truncated one is compiled again."""
import os

import numpy as np
import pytest

import quadrants as qd

N = 1024
FRAME = b"QDOBJS1"  # how the CPU artifact frames several objects
ENTRIES = "kernel_compilation_manager"  # the entries' folder in the cache directory

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                reason="one hardware thread: no parallel compile")


def _run(threads, cache=None):
    qd.init(arch=qd.cpu, num_compile_threads=threads, offline_cache=cache is not None,
            offline_cache_file_path=str(cache) if cache else "",
            ad_stack_experimental_enabled=True, default_fp=qd.f64)
    a = qd.field(qd.f64, shape=N, needs_grad=True)
    b = qd.field(qd.f64, shape=N, needs_grad=True)
    c = qd.field(qd.i32, shape=N)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)
    a.from_numpy(np.linspace(0.1, 0.9, N))

    @qd.kernel
    def tasks(steps: qd.i32):
        for i in a:  # a recurrence (an adstack loop in the gradient)
            v = a[i]
            for _ in range(steps):
                v = qd.sin(v) * 0.9 + qd.exp(-v * v) * 0.1
            b[i] = v
        for i in c:  # integers: floor division and modulo
            c[i] = (i * 7 - 300) // 13 + (i * 11) % 17
        for i in a:
            loss[None] += b[i] * b[i] + qd.tanh(a[i])

    loss.grad[None] = 1.0
    with qd.ad.Tape(loss=loss):
        tasks(25)
    out = (a.grad.to_numpy(), b.to_numpy(), c.to_numpy(), loss[None])
    qd.reset()
    return out


def _same(x, y):
    *arrays, loss = x
    *want, want_loss = y
    for p, q in zip(arrays, want):
        np.testing.assert_array_equal(p, q)
    # Threads add into the loss atomically in any order: f64 sums of N terms
    # of this size agree to a few ulp.
    assert abs(loss - want_loss) <= 1e-14 * abs(want_loss)


def test_parallel_compile_matches_the_serial_one(tmp_path):
    serial = _run(1)
    parallel = _run(4)
    _same(parallel, serial)
    # And it was parallel: the cached kernels hold several objects.
    _run(4, tmp_path)
    entries = [p.read_bytes() for p in (tmp_path / ENTRIES).glob("*.qdc")]
    assert entries and any(FRAME in e for e in entries)
    serial_dir = tmp_path / "serial"
    _run(1, serial_dir)
    assert not any(FRAME in p.read_bytes() for p in (serial_dir / ENTRIES).glob("*.qdc"))


def test_entries_of_either_compile_load_in_the_other(tmp_path):
    want = _run(1)
    _run(4, tmp_path)
    _same(_run(1, tmp_path), want)  # framed entries, one compile thread
    serial_dir = tmp_path / "serial"
    _run(1, serial_dir)
    _same(_run(4, serial_dir), want)


def test_a_truncated_multi_object_entry_is_compiled_again(tmp_path):
    want = _run(4, tmp_path)
    framed = [p for p in (tmp_path / ENTRIES).glob("*.qdc") if FRAME in p.read_bytes()]
    assert framed
    for path in framed:
        data = path.read_bytes()
        path.write_bytes(data[:data.index(FRAME) + len(FRAME) + 40])
    _same(_run(4, tmp_path), want)
