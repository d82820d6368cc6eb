"""Shape errors of vectors and matrices: compile errors that name the
kernel, the source file:line and both shapes; host errors that name both
shapes."""
import inspect
import re

import numpy as np
import pytest

import quadrants as qd
from tests import test_utils


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return start + k
    raise AssertionError(text)


def _expect(kernel, text, pattern, exc=qd.QuadrantsTypeError):
    with pytest.raises(exc) as info:
        kernel()
    message = str(info.value)
    where = f"{__file__}:{_line_of(kernel.fn, text)}"
    assert where in message, message
    assert f"'{kernel.name}'" in message, message
    assert re.search(pattern, message), message


@test_utils.test()
def test_matmul_shape_mismatch():
    out = qd.Vector.field(3, qd.f32, shape=())

    @qd.kernel
    def bad_matmul():
        m = qd.math.mat3(1.0)
        v = qd.math.vec2(1.0, 2.0)
        out[None] = m @ v

    _expect(bad_matmul, "m @ v", r"3x3 matrix @ vector of 2")


@test_utils.test()
def test_elementwise_shape_mismatch():
    @qd.kernel
    def bad_add():
        a = qd.Vector([1.0, 2.0, 3.0])
        b = qd.Vector([1.0, 2.0])
        c = a + b
        c.x += 1.0

    _expect(bad_add, "a + b", r"vector of 3 and vector of 2")


@test_utils.test()
def test_static_index_out_of_range():
    @qd.kernel
    def bad_index():
        a = qd.Vector([1.0, 2.0, 3.0])
        a[3] = 1.0

    _expect(bad_index, "a[3]", r"index 3 is out of range .*vector of 3")

    @qd.kernel
    def bad_swizzle():
        a = qd.Vector([1.0, 2.0])
        b = a.xz
        b.x += 1.0

    _expect(bad_swizzle, "a.xz", re.escape("vec2 only has attributes=('x', 'y'), got=('x', 'z')"),
            qd.QuadrantsSyntaxError)

    @qd.kernel
    def bad_swizzle_store():
        a = qd.Vector([1.0, 2.0])
        a.rgb = qd.Vector([1.0, 2.0, 3.0])

    _expect(bad_swizzle_store, "a.rgb",
            re.escape("vec2 only has attributes=('r', 'g'), got=('r', 'g', 'b')"),
            qd.QuadrantsSyntaxError)


@test_utils.test()
def test_assigning_another_shape():
    x = qd.Vector.field(3, qd.f32, shape=())

    @qd.kernel
    def bad_store():
        x[None] = qd.Vector([1.0, 2.0])

    _expect(bad_store, "x[None] =", r"vector of 3 is assigned a vector of 2")


@test_utils.test()
def test_unsupported_sizes():
    @qd.kernel
    def bad_inverse():
        a = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = a.inverse()
        b[0, 0] += 1.0

    _expect(bad_inverse, "a.inverse()", r"square matrix, got a 2x3 matrix")


@test_utils.test()
def test_kernel_argument_shapes():
    @qd.kernel
    def k(v: qd.math.vec3, a: qd.types.ndarray(dtype=qd.math.vec2, ndim=1)):
        a[0] = v.xy

    with pytest.raises(ValueError, match=r"vector of 3.*shape \(3,\).*\(2,\)"):
        k([1, 2], np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match=r"trailing shape \(2,\).*\(2, 3\)"):
        k([1, 2, 3], np.zeros((2, 3), np.float32))


@test_utils.test(arch=qd.cpu)
def test_numpy_arguments_of_the_wrong_dtype_or_rank_are_value_errors():
    @qd.kernel
    def scalars(x: qd.types.ndarray(qd.i32, ndim=1)):
        for i in x:
            x[i] = i

    @qd.kernel
    def matrices(m: qd.types.ndarray(dtype=qd.math.mat3, ndim=2)):
        for I in qd.grouped(m):
            m[I] = m[I] + 1.0

    with pytest.raises(ValueError, match=r"kernel 'scalars' argument 'x'.*"
                       r"required array has dtype=i32, got int64"):
        scalars(np.arange(3, dtype=np.int64))
    with pytest.raises(ValueError, match=r"argument 'x'.*required array has ndim=1, "
                       r"array with 2 dimensions is provided"):
        scalars(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ValueError, match=r"argument 'm'.*required array has ndim=2 "
                       r"element_dim=2, array with 3 dimensions is provided"):
        matrices(np.zeros((2, 2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match=r"argument 'm'.*required element_shape=\(3, 3\), "
                       r"array with element shape of \(2, 3\)"):
        matrices(np.zeros((2, 2, 2, 3), dtype=np.float32))


@test_utils.test()
def test_negative_constant_indices_are_refused_for_vectors_and_ndarrays():
    @qd.kernel
    def last(i: qd.i32) -> qd.i32:
        v = qd.Vector([i, i + 1, i + 2])
        return v[-1]

    @qd.kernel
    def head(i: qd.i32) -> qd.i32:
        v = qd.Vector([i, i + 1, i + 2])
        return v[:-1].sum()

    @qd.kernel
    def from_array(a: qd.types.ndarray()) -> qd.f32:
        return a[-1]

    for call in (lambda: last(0), lambda: head(0),
                 lambda: from_array(qd.ndarray(qd.f32, (3,)))):
        with pytest.raises(qd.QuadrantsSyntaxError,
                           match="Negative indices are not supported in Quadrants kernels"):
            call()

    @qd.kernel
    def static_tail() -> qd.i32:
        return qd.static([4, 5, 6][-1])

    assert static_tail() == 6
