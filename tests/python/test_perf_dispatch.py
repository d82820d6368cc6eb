"""@qd.perf_dispatch: registered implementations are timed per input
geometry and the fastest serves later calls until a re-evaluation trigger
fires. Python implementations that sleep make the timing differences large
(tens of milliseconds) against noise of well under one."""
import time

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import _perf_dispatch
from tests import test_utils


def _sleeper(name, seconds, log, result=None):
    def impl(a, scale):
        log.append(name)
        time.sleep(seconds(a) if callable(seconds) else seconds)
        return result
    impl.__name__ = name
    return impl


@test_utils.test()
def test_kernels_are_timed_and_the_fastest_serves_later_calls():
    F32 = qd.types.ndarray(qd.f32, 1)

    @qd.perf_dispatch(get_geometry_hash=lambda a, out, sink, work: hash(a.shape),
                      first_warmup=1, warmup=1, active=1, repeat_after_seconds=0)
    def scale(a: F32, out: qd.types.ndarray(qd.i32, 1), sink: F32, work: qd.i32): ...

    @scale.register
    @qd.kernel
    def scale_slow(a: F32, out: qd.types.ndarray(qd.i32, 1), sink: F32, work: qd.i32):
        for i in a:
            x = a[i] + i
            for _ in range(work * 200):
                x = x * 0.999 + 0.001
            sink[i] = x  # kept, so no compiler drops the loop
            a[i] = a[i] * 2.0
            out[0] = 1

    @scale.register
    @qd.kernel
    def scale_fast(a: F32, out: qd.types.ndarray(qd.i32, 1), sink: F32, work: qd.i32):
        for i in a:
            sink[i] = 0.0
            a[i] = a[i] * 2.0
            out[1] = 1

    @scale.register(is_compatible=lambda a, out, sink, work: a.shape[0] < 2)
    def scale_tiny(a, out, sink, work):
        raise AssertionError("incompatible with these shapes, never called")

    a = qd.ndarray(qd.f32, (512,))
    sink = qd.ndarray(qd.f32, (512,))
    out = qd.ndarray(qd.i32, (2,))
    used = []
    for _ in range(8):
        a.fill(1.0)
        out.fill(0)
        scale(a, out, sink, work=2000)
        np.testing.assert_array_equal(a.to_numpy(), 2.0)
        used.append(tuple(out.to_numpy()))
    # Two trials each (one warm-up, one timed), then the fast one only.
    assert sorted(used[:4]) == [(0, 1), (0, 1), (1, 0), (1, 0)]
    assert used[4:] == [(0, 1)] * 4


def test_trial_order_first_warmup_warmup_and_repeat_after_count():
    log = []

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0, first_warmup=2, warmup=0,
                      repeat_after_count=5, repeat_after_seconds=0)
    def op(a, scale): ...

    op.register(_sleeper("slow", 0.03, log))
    op.register(_sleeper("fast", 0.0, log))
    for _ in range(6):
        op(None, 1)
    # 2 untimed and 1 timed trial each decide the first choice.
    assert sorted(log) == ["fast"] * 3 + ["slow"] * 3
    log.clear()
    for _ in range(4):
        op(None, 1)
    assert log == ["fast"] * 4
    # The fifth winner call starts a re-evaluation, now without warm-up.
    log.clear()
    for _ in range(2):
        op(None, 1)
    assert sorted(log) == ["fast", "slow"]
    log.clear()
    op(None, 1)
    assert log == ["fast"]


def test_each_geometry_gets_its_own_winner():
    log = []

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: a, warmup=0, first_warmup=0,
                      repeat_after_seconds=0)
    def op(a, scale): ...

    op.register(_sleeper("small", lambda a: 0.0 if a == "small" else 0.03, log))
    op.register(_sleeper("large", lambda a: 0.0 if a == "large" else 0.03, log))
    for _ in range(2):
        op("small", 1)
        op("large", 1)
    log.clear()
    op("small", 1)
    op("large", 1)
    assert log == ["small", "large"]


def test_repeat_after_seconds_re_evaluates():
    log = []

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0, first_warmup=0,
                      repeat_after_seconds=0.2)
    def op(a, scale): ...

    assert op.repeat_after_count is None and op.repeat_after_seconds == 0.2
    op.register(_sleeper("slow", 0.02, log))
    op.register(_sleeper("fast", 0.0, log))
    op(None, 1)
    op(None, 1)
    log.clear()
    op(None, 1)
    assert log == ["fast"]
    time.sleep(0.25)
    log.clear()
    op(None, 1)
    op(None, 1)
    assert sorted(log) == ["fast", "slow"]


def test_defaults_and_return_values():
    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0)
    def op(a, scale): ...

    assert (op.first_warmup, op.warmup, op.active) == (1, 0, 1)
    assert op.repeat_after_count == _perf_dispatch.DEFAULT_REPEAT_AFTER_COUNT == 300
    assert op.repeat_after_seconds is None
    op.register(lambda a, scale: a * scale)
    assert op(3, 4) == 12  # one compatible implementation: no timing

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0, repeat_after_count=50)
    def counted(a, scale): ...
    assert (counted.repeat_after_count, counted.repeat_after_seconds) == (50, None)


def test_compatibility_filter_and_no_compatible_implementation():
    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0)
    def op(a, scale): ...

    op.register(lambda a, scale: "neg", is_compatible=lambda a, scale: a < 0)
    op.register(lambda a, scale: "big", is_compatible=lambda a, scale: a > 100)
    assert op(-1, 0) == "neg" and op(500, 0) == "big"
    with pytest.raises(qd.QuadrantsRuntimeError, match="No suitable functions were found"):
        op(5, 0)


def test_registration_checks_names_count_and_decorator_order():
    @qd.perf_dispatch(get_geometry_hash=lambda a, b: 0)
    def op(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1)): ...

    code = "PERFDISPATCH_ANNOTATION_SEQUENCE_MISMATCH"
    with pytest.raises(qd.QuadrantsSyntaxError, match=f"parameter c of function.*{code}"):
        op.register(lambda a, c: None)
    with pytest.raises(qd.QuadrantsSyntaxError, match=f"Number of function parameters 1.*{code}"):
        op.register(lambda a: None)
    with pytest.raises(qd.QuadrantsSyntaxError, match="KERNEL_ANNOTATION_ORDER"):
        @qd.kernel
        @op.register
        def wrong_order(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1)):
            pass


def test_forcing_an_implementation_by_name(monkeypatch, capsys):
    log = []
    monkeypatch.setattr(_perf_dispatch, "_FORCE_MAP", {"op": "slow", "other": "missing"})
    monkeypatch.setattr(_perf_dispatch, "_ANY_FORCE_ACTIVE", True)

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0)
    def op(a, scale): ...

    op.register(_sleeper("slow", 0.0, log))
    op.register(_sleeper("fast", 0.0, log))
    for _ in range(5):
        op(None, 1)
    assert log == ["slow"] * 5
    assert "perf_dispatch 'op': available implementations: ['slow', 'fast']" in \
        capsys.readouterr().out

    @qd.perf_dispatch(get_geometry_hash=lambda a, scale: 0)
    def other(a, scale): ...

    other.register(_sleeper("x", 0.0, log))
    other.register(_sleeper("y", 0.0, log))
    other(None, 1)
    assert "Falling back to normal benchmarking" in capsys.readouterr().out


def test_force_map_parsing():
    parse = _perf_dispatch._parse_force_map  # pylint: disable=protected-access
    assert parse("") == {} and parse(None) == {}
    assert parse(" a : x , ,b:y ") == {"a": "x", "b": "y"}
    with pytest.raises(ValueError, match="Malformed QD_PERFDISPATCH_FORCE entry 'oops'"):
        parse("a:x,oops")
