"""qd.volatile_load(x): the value of a field or ndarray element, read from
memory every time (the code generators emit volatile loads; the C++ test
volatile_load_test checks the LLVM form). Values on every backend, the
mark in the printed IR, and the refusals."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_values_of_scalar_and_vector_elements():
    flags = qd.field(qd.i32, shape=8)
    vec = qd.Vector.field(3, qd.f32, shape=())
    flags.from_numpy(np.arange(8, dtype=np.int32) * 7 + 3)
    vec[None] = [1.5, -2.0, 4.0]
    out = qd.ndarray(qd.i32, (8,))
    total = qd.field(qd.f32, shape=())

    @qd.kernel
    def read(out: qd.types.ndarray(qd.i32, 1), src: qd.types.ndarray(qd.i32, 1)):
        for i in range(8):
            out[i] = qd.volatile_load(flags[i]) + qd.volatile_load(src[0])
        for _ in range(1):
            total[None] = qd.volatile_load(vec[None]).sum()

    src = qd.ndarray(qd.i32, (1,))
    src.from_numpy(np.array([100], dtype=np.int32))
    read(out, src)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(8) * 7 + 103)
    assert total[None] == 3.5


def test_the_printed_ir_marks_the_load(tmp_path, monkeypatch):
    monkeypatch.setenv("QD_DUMP_IR", "1")
    monkeypatch.setenv("QD_DUMP_IR_DIR", str(tmp_path))
    qd.init(arch=qd.cpu, offline_cache=False)
    try:
        counter = qd.field(qd.i32, shape=())
        out = qd.field(qd.i32, shape=4)

        @qd.kernel
        def poll():
            for i in range(4):
                out[i] = qd.volatile_load(counter[None]) + counter[None]

        counter[None] = 5
        poll()
        np.testing.assert_array_equal(out.to_numpy(), [10] * 4)
    finally:
        qd.reset()
    dumped = "".join(p.read_text() for p in tmp_path.glob("poll_*.ir"))
    assert dumped.count("global_load volatile") == 1, dumped


@test_utils.test(arch=qd.cpu)
def test_refusals_name_what_was_passed():
    flags = qd.field(qd.i32, shape=4)

    @qd.kernel
    def not_an_lvalue():
        x = 1
        y = qd.volatile_load(x + 1)  # noqa: F841

    @qd.kernel
    def bare_field():
        y = qd.volatile_load(flags)  # noqa: F841

    @qd.kernel
    def local_array():
        v = qd.Vector([0, 0, 0, 0])
        y = qd.volatile_load(v)  # noqa: F841

    with pytest.raises(qd.QuadrantsSyntaxError, match="lvalue"):
        not_an_lvalue()
    with pytest.raises(qd.QuadrantsSyntaxError, match="Field directly"):
        bare_field()
    with pytest.raises(qd.QuadrantsTypeError, match="local array"):
        local_array()
    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel code"):
        qd.volatile_load(flags[0])
