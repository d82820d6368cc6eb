"""qd.FieldsBuilder: layout levels grouped under the root, closed by
finalize(); the returned SNodeTree's destroy() retires its fields."""
import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


@test_utils.test()
def test_two_builders_hold_fields_kernels_use_together():
    a = qd.field(qd.i32)
    fb = qd.FieldsBuilder()
    fb.dense(qd.i, 6).place(a)
    fb.finalize()
    b, c = qd.field(qd.f32), qd.field(qd.f32)
    fb2 = qd.FieldsBuilder()
    fb2.dense(qd.ij, (2, 3)).place(b)
    fb2.dense(qd.i, 4).place(c)
    fb2.finalize()

    @qd.kernel
    def fill():
        for i in a:
            a[i] = i * 3
        for i, j in b:
            b[i, j] = i * 10 + j
        for i in c:
            c[i] = a[i] + 0.5

    fill()
    np.testing.assert_array_equal(a.to_numpy(), np.arange(6) * 3)
    np.testing.assert_array_equal(b.to_numpy(), [[0, 1, 2], [10, 11, 12]])
    np.testing.assert_array_equal(c.to_numpy(), np.arange(4) * 3 + 0.5)


@test_utils.test(require=qd.extension.sparse)
def test_a_pointer_level_in_a_builder():
    x = qd.field(qd.f32)
    fb = qd.FieldsBuilder()
    fb.pointer(qd.i, 8).place(x)
    fb.finalize()

    @qd.kernel
    def touch():
        for i in range(0, 8, 1):
            if i % 3 == 0:
                x[i] = i + 1.0

    @qd.kernel
    def count() -> qd.i32:
        n = 0
        for i in x:
            n += 1
        return n

    touch()
    assert count() == 3
    np.testing.assert_array_equal(x.to_numpy(), [1, 0, 0, 4, 0, 0, 7, 0])


@test_utils.test()
def test_destroy_retires_only_that_trees_fields():
    kept, gone, gone_root = qd.field(qd.i32), qd.field(qd.i32), qd.field(qd.i32)
    fb = qd.FieldsBuilder()
    fb.dense(qd.i, 3).place(kept)
    fb.finalize()
    fb2 = qd.FieldsBuilder()
    fb2.dense(qd.i, 3).dense(qd.j, 2).place(gone)
    fb2.place(gone_root)
    tree = fb2.finalize()
    kept[1] = 7
    gone[2, 1] = 5
    tree.destroy()
    assert kept[1] == 7
    for f in (gone, gone_root):
        with pytest.raises(qd.QuadrantsRuntimeError, match=f"field '{f.name}' cannot be used"):
            f.to_numpy()

    @qd.kernel
    def read() -> qd.i32:
        return gone[0, 0]

    with pytest.raises(qd.QuadrantsRuntimeError, match="destroyed"):
        read()
    with pytest.raises(qd.QuadrantsRuntimeError, match="already destroyed"):
        tree.destroy()


@test_utils.test()
def test_a_finalized_builder_refuses_more_levels():
    fb = qd.FieldsBuilder()
    fb.dense(qd.i, 2).place(qd.field(qd.f32))
    fb.finalize()
    with pytest.raises(qd.QuadrantsRuntimeError, match="finalized"):
        fb.dense(qd.i, 2)
    with pytest.raises(qd.QuadrantsRuntimeError, match="finalized"):
        fb.finalize()
    with pytest.warns(UserWarning, match="empty FieldsBuilder"):
        qd.FieldsBuilder().finalize()


@test_utils.test()
def test_gradients_through_fields_of_builders():
    # out = 2 x^2 summed: d/dx = 4 x.
    x, out, loss = qd.field(qd.f32), qd.field(qd.f32), qd.field(qd.f32)
    for f, shape in ((x, 5), (out, 5)):
        fb = qd.FieldsBuilder()
        fb.dense(qd.i, shape).place(f, f.grad)
        fb.finalize()
    fb = qd.FieldsBuilder()
    fb.place(loss, loss.grad)
    fb.finalize()

    @qd.kernel
    def square():
        for i in x:
            out[i] = 2.0 * x[i] * x[i]

    @qd.kernel
    def total():
        for i in out:
            loss[None] += out[i]

    x.from_numpy(np.arange(5, dtype=np.float32))
    with qd.ad.Tape(loss=loss):
        square()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), 4 * np.arange(5), rtol=1e-6)


@test_utils.test(arch=qd.cpu)
def test_one_size_for_several_axes_applies_to_each():
    x = qd.field(qd.f32)
    qd.root.dense(qd.ij, (3,)).place(x)
    assert x.shape == (3, 3)
    with pytest.raises(qd.QuadrantsTypeError, match=r"dense\(\): 2 axes but 3 sizes"):
        qd.root.dense(qd.ij, (2, 3, 4))
