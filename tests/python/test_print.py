"""print(...) inside kernels: run-time values formatted on the host and shown
on sys.stdout at the next sync, in the order they were appended."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils


@test_utils.test()
def test_mixed_arguments(capsys):
    x = qd.field(qd.f32, shape=3)
    y = qd.field(qd.f64, shape=())

    @qd.kernel
    def show(n: qd.i32):
        x[1] = 2.5
        y[None] = 0.125
        print("x =", x[1], n, y[None], n > 2, 7, 1.5, "end")

    show(3)
    qd.sync()
    assert capsys.readouterr().out == "x = 2.500000 3 0.125000 True 7 1.500000 end\n"


@test_utils.test()
def test_output_appears_at_sync_not_before(capsys):
    x = qd.field(qd.i32, shape=2)

    @qd.kernel
    def show():
        x[0] = 5
        print("value", x[0])

    show()
    show()
    assert capsys.readouterr().out == ""  # nothing until a sync
    qd.sync()
    assert capsys.readouterr().out == "value 5\nvalue 5\n"
    show()
    assert x[1] == 0  # a host read syncs
    assert capsys.readouterr().out == "value 5\n"


@test_utils.test()
def test_sep_and_end(capsys):
    @qd.kernel
    def show(k: qd.i32):
        print("hello", k, "world!")
        print("a", k, "b", end="")
        print("c", k, "d")
        print("p", k, "q", sep="")
        print(k, k, sep=", ", end=".\n")
        print()

    show(42)
    qd.sync()
    assert capsys.readouterr().out == (
        "hello 42 world!\na 42 bc 42 d\np42q\n42, 42.\n\n")


@test_utils.test()
def test_fstrings_and_format_with_runtime_values(capsys):
    a = qd.field(qd.f32, shape=2)

    @qd.kernel
    def show(k: qd.f32, n: qd.i32):
        a[0] = 1.0
        print(f"a[0] = {a[0]}")
        print(f"{a[0] = :.1f}")
        print(f"a[0] = {a[0]:.1}, n = {n:5d}|{n:-4}|{n:#x}")
        print(f"{k:.2e} {k:g} {qd.static(3):03d}")
        print("{} abc {name:.3f} {0}".format(n, name=k))
        print("{1} {0:.2f}".format(k, n))

    show(233.25, 17)
    qd.sync()
    assert capsys.readouterr().out == (
        "a[0] = 1.000000\n"
        "a[0] = 1.0\n"
        "a[0] = 1.0, n =    17|17  |0x11\n"
        "2.33e+02 233.25 003\n"
        "17 abc 233.250 17\n"
        "17 233.25\n")


@test_utils.test()
def test_format_arguments_must_match_the_fields(capsys):
    @qd.kernel
    def precise(k: qd.f32):
        # A float spec without a conversion is printf's %f, for constants too.
        print("{2:.1} {:.2} {1:.3} {k:.4e}".format(3.0, 2.0, 1.0, k=k))

    precise(233.3)
    qd.sync()
    assert capsys.readouterr().out == "1.0 3.00 2.000 2.3330e+02\n"

    @qd.kernel
    def more_args():
        print("{0} {1}".format(1, 2, 3))

    @qd.kernel
    def fewer_args(n: qd.i32):
        print("{0} {1} {2}".format(n, 2))

    @qd.kernel
    def missing_keyword():
        print("{k}".format())

    @qd.kernel
    def unused_keyword(k: qd.f32):
        print("x".format(k=k))

    for kernel, args, message in [
            (more_args, (), r"Expected 2 positional argument\(s\), but received 3 instead"),
            (fewer_args, (1,), r"Expected 3 positional argument\(s\), but received 2 instead"),
            (missing_keyword, (), r"Keyword 'k' not found"),
            (unused_keyword, (1.0,), r"Keyword 'k' not used")]:
        with pytest.raises(qd.QuadrantsSyntaxError, match=message):
            kernel(*args)


@test_utils.test()
def test_integer_extremes_and_small_types(capsys):
    @qd.kernel
    def show(a: qd.u64, b: qd.i64, c: qd.u8, d: qd.i8, e: qd.u32, f: qd.f16):
        print(a, b, c, d, e, f)
        print(f"{d:x} {e:X} {c:o}")

    show(2**64 - 1, -2**63, 255, -1, 2**32 - 1, 0.5)
    qd.sync()
    assert capsys.readouterr().out == (
        f"{2**64 - 1} {-2**63} 255 -1 {2**32 - 1} 0.500000\nff FFFFFFFF 377\n")


@test_utils.test()
def test_lists_and_compile_time_values(capsys):
    @qd.kernel
    def show(k: qd.i32):
        print([k, 2, (k, "t")], None, "%d %s")

    show(4)
    qd.sync()
    assert capsys.readouterr().out == "[4, 2, [4, t]] None %d %s\n"


@test_utils.test()
def test_serial_order_is_preserved(capsys):
    @qd.kernel
    def show(n: qd.i32):
        print("start")
        for _ in range(1):
            for j in range(n):
                print(j)
        print("done")

    show(300)
    qd.sync()
    expected = "start\n" + "".join(f"{j}\n" for j in range(300)) + "done\n"
    assert capsys.readouterr().out == expected


@test_utils.test(cpu_max_num_threads=4)
def test_parallel_prints_come_out_whole(capsys):
    x = qd.field(qd.f32, shape=1000)

    @qd.kernel
    def show(k: qd.f32):
        for i in x:
            x[i] = i * k
            print("x[", i, "]=", x[i])

    show(0.5)
    qd.sync()
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted(f"x[ {i} ]= {i * 0.5:f}" for i in range(1000))


@test_utils.test()
def test_print_in_func(capsys):
    @qd.func
    def report(v, tag: qd.template()):
        print(tag, v * 2)

    @qd.kernel
    def show(n: qd.i32):
        report(n, "twice:")

    show(21)
    qd.sync()
    assert capsys.readouterr().out == "twice: 42\n"


@test_utils.test()
def test_spec_mismatch_is_a_type_error():
    @qd.kernel
    def float_as_int(k: qd.f32):
        print(f"{k:d}")

    @qd.kernel
    def signed_as_unsigned(n: qd.i32):
        print("{:u}".format(n))

    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"(?s)test_print.py:\d+: in kernel 'float_as_int'.*"
                             r"'d' doesn't match 'f32'"):
        float_as_int(1.0)
    with pytest.raises(qd.QuadrantsTypeError, match=r"'u' doesn't match 'i32'"):
        signed_as_unsigned(1)


@test_utils.test()
def test_unsupported_uses_are_errors():
    @qd.kernel
    def to_file(n: qd.i32):
        print(n, file=None)

    @qd.kernel
    def keep_text(n: qd.i32):
        s = f"{n}"
        qd.atomic_add(n, s)

    @qd.kernel
    def huge_width(n: qd.i32):
        print(f"{n:100d}")

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"(?s)in kernel 'to_file'.*'file'"):
        to_file(1)
    with pytest.raises(qd.QuadrantsError, match=r"in kernel 'keep_text'"):
        keep_text(1)
    with pytest.raises(qd.QuadrantsTypeError, match=r"at most 99"):
        huge_width(1)


@test_utils.test()
def test_full_buffer_drops_with_a_note_then_grows(capsys):
    # Each print(j) record takes 16 bytes; the first buffer holds 1 MiB.
    fits = (1 << 20) // 16
    n = fits + 1000

    @qd.kernel
    def flood(n: qd.i32):
        for _ in range(1):
            for j in range(n):
                print(j)

    flood(n)
    qd.sync()
    lines = capsys.readouterr().out.splitlines()
    assert lines[:fits] == [str(j) for j in range(fits)]
    assert len(lines) == fits + 1
    assert "print buffer was full: 1000 print(s) of kernel 'flood' were dropped" in lines[-1]
    flood(n)  # the buffer grew to what the first launch asked for
    qd.sync()
    assert capsys.readouterr().out.splitlines() == [str(j) for j in range(n)]


@test_utils.test()
def test_gradient_kernel_does_not_print(capsys):
    x = qd.field(qd.f32, shape=4, needs_grad=True)
    loss = qd.field(qd.f32, shape=(), needs_grad=True)

    @qd.kernel
    def compute():
        for i in x:
            print("forward", i)
            loss[None] += x[i] * x[i]

    x.from_numpy(np.arange(4, dtype=np.float32))
    compute()
    qd.sync()
    assert sorted(capsys.readouterr().out.splitlines()) == [f"forward {i}" for i in range(4)]
    loss.grad[None] = 1.0
    compute.grad()
    qd.sync()
    assert capsys.readouterr().out == ""
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * np.arange(4))


@test_utils.test(debug=True)
def test_output_comes_before_the_error_it_precedes(capsys):
    @qd.kernel
    def check(n: qd.i32):
        print("checking", n)
        assert n < 0, "n must be negative"

    with pytest.raises(qd.QuadrantsAssertionError, match="n must be negative"):
        check(3)  # debug mode reports at the call
    assert capsys.readouterr().out == "checking 3\n"


@test_utils.test()
def test_reset_shows_pending_output(capsys):
    @qd.kernel
    def show():
        print("pending")

    show()
    qd.reset()
    assert capsys.readouterr().out == "pending\n"
    qd.init(arch=qd.cpu)


@test_utils.test()
def test_kernels_differing_only_in_text_do_not_share_code(capsys):
    @qd.kernel
    def alpha(n: qd.i32):
        print("alpha", n)

    @qd.kernel
    def beta(n: qd.i32):
        print("beta", n)

    alpha(1)
    beta(1)
    qd.sync()
    assert capsys.readouterr().out == "alpha 1\nbeta 1\n"


def _printing_session(cache_dir, text):
    qd.init(arch=qd.cpu, offline_cache=True, offline_cache_file_path=str(cache_dir))
    x = qd.field(qd.f64, shape=3)

    @qd.kernel
    def show(n: qd.i32):
        for i in range(1):
            x[0] = 0.25
            print(text, n, f"{x[0]:.3e}", x[0] > 0, end=";\n")

    show(5)
    qd.sync()
    stats = runtime.offline_cache_stats()
    qd.reset()
    return stats


def test_offline_cache_hit_prints_the_same(tmp_path, capsys):
    first = _printing_session(tmp_path, "value")
    out_first = capsys.readouterr().out
    second = _printing_session(tmp_path, "value")
    out_second = capsys.readouterr().out
    assert first["misses"] >= 1 and first["hits"] == 0
    assert second["hits"] >= 1 and second["misses"] == 0
    assert out_first == out_second == "value 5 2.500e-01 True;\n"
    # Another text is another entry, not a hit on this one.
    third = _printing_session(tmp_path, "other")
    assert third["misses"] >= 1
    assert capsys.readouterr().out == "other 5 2.500e-01 True;\n"


@test_utils.test()
def test_printf_style_specs_on_compile_time_values(capsys):
    @qd.kernel
    def show(k: qd.f32):
        print("{:i} {:.1} {:.10d}".format(1, 2, 3))
        print("{:.2} {name:i} {value:d}".format(k, name=999, value=123))
        print(f"{7:i}|{4:.3d}|{'s':>3}")
        print("{2} {} {1} {k} {0}".format(3, 2, 1, k=k))

    show(233.25)
    qd.sync()
    assert capsys.readouterr().out == (
        "1 2 0000000003\n233.25 999 123\n7|004|  s\n1 3 2 233.250000 3\n")
