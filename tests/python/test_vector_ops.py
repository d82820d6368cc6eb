"""Vector and matrix operations in kernels: forward values against numpy,
reverse-mode gradients against f64 central differences of the numpy
reference, in f32 and f64.

Every operation runs on N random samples held in vector/matrix fields:
`out[i] = op(a[i], b[i], ...)`. For the gradient, out.grad is seeded with
random weights w, so kernel.grad gives d(sum w * out)/d inputs, compared
with central differences of the same sum computed by the numpy reference
in f64.

Tolerances: the f64 kernel matches numpy to rounding (rel 1e-10 covers the
few dozen flops of a 4x4 inverse). f32 results carry ~1e-7 relative error
per op, amplified by at most the condition number of the well-conditioned
inputs used here (matrices are 2I + noise), so rel 1e-5 / abs 1e-5. The
central differences use h = 1e-6 in f64: truncation O(h^2) ~ 1e-12 and
cancellation ~ 1e-16 / h = 1e-10, so f64 gradients agree to 1e-7; f32
gradients carry f32 rounding of the chain (rel 2e-4 / abs 2e-4).
"""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils


def _require_dtype(dt):
    """f64 cases skip on archs without 64-bit data (qd.extension.data64)."""
    arch = runtime.state.options.get("arch", runtime.cpu)
    if dt == "f64" and not qd.is_extension_supported(arch, qd.extension.data64):
        pytest.skip(f"arch {arch} has no f64 (qd.extension.data64)")

N = 4
_TOL = {"f64": dict(rtol=1e-10, atol=1e-10), "f32": dict(rtol=1e-5, atol=1e-5)}
_GTOL = {"f64": dict(rtol=1e-7, atol=1e-7), "f32": dict(rtol=2e-4, atol=2e-4)}
_DT = {"f64": (qd.f64, np.float64), "f32": (qd.f32, np.float32)}


def _uniform(shape, lo=-1.0, hi=1.0):
    return lambda rng: rng.uniform(lo, hi, (N,) + shape)


def _well_conditioned(n):
    return lambda rng: 2.0 * np.eye(n) + rng.uniform(-0.5, 0.5, (N, n, n))


def _ref_normalize(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3 - 2 * t)


V3, V2, M2, M3 = _uniform((3,)), _uniform((2,)), _uniform((2, 2)), _uniform((3, 3))
S = _uniform(())
POS3 = _uniform((3,), 0.5, 1.5)

# name -> (kernel op, numpy reference over a leading sample axis, inputs,
#          differentiable)
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [V3, V3], True),
    "sub_mat": (lambda a, b: a - b, lambda a, b: a - b, [M3, M3], True),
    "mul": (lambda a, b: a * b, lambda a, b: a * b, [V3, V3], True),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [V3, POS3], True),
    "scalar_mul": (lambda s, a: s * a, lambda s, a: s[:, None] * a, [S, V3], True),
    "div_scalar": (lambda a, s: a / (s + 2.0), lambda a, s: a / (s[:, None] + 2.0),
                   [V3, S], True),
    "neg": (lambda a: -a, lambda a: -a, [M2], True),
    "pow": (lambda a: a ** 2, lambda a: a ** 2, [V3], True),
    "matvec": (lambda m, v: m @ v, lambda m, v: np.einsum("nij,nj->ni", m, v), [M3, V3], True),
    "matmat": (lambda a, b: a @ b, lambda a, b: a @ b, [M3, M3], True),
    "vecmat": (lambda v, m: v @ m, lambda v, m: np.einsum("ni,nij->nj", v, m), [V2, M2], True),
    "dot": (lambda a, b: a.dot(b), lambda a, b: np.sum(a * b, -1), [V3, V3], True),
    "cross3": (lambda a, b: a.cross(b), lambda a, b: np.cross(a, b), [V3, V3], True),
    "cross2": (lambda a, b: a.cross(b), lambda a, b: a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
               [V2, V2], True),
    "norm": (lambda a: a.norm(), lambda a: np.linalg.norm(a, axis=-1), [V3], True),
    "norm_sqr": (lambda a: a.norm_sqr(), lambda a: np.sum(a * a, -1), [V3], True),
    "normalized": (lambda a: a.normalized(), _ref_normalize, [V3], True),
    "transpose": (lambda m: m.transpose(), lambda m: np.swapaxes(m, 1, 2),
                  [_uniform((2, 3))], True),
    "trace": (lambda m: m.trace(), lambda m: np.trace(m, axis1=1, axis2=2), [M3], True),
    "det2": (lambda m: m.determinant(), np.linalg.det, [M2], True),
    "det3": (lambda m: m.determinant(), np.linalg.det, [M3], True),
    "det4": (lambda m: m.determinant(), np.linalg.det, [_uniform((4, 4))], True),
    "inv2": (lambda m: m.inverse(), np.linalg.inv, [_well_conditioned(2)], True),
    "inv3": (lambda m: m.inverse(), np.linalg.inv, [_well_conditioned(3)], True),
    "inv4": (lambda m: m.inverse(), np.linalg.inv, [_well_conditioned(4)], True),
    "outer": (lambda a, b: a.outer_product(b), lambda a, b: np.einsum("ni,nj->nij", a, b),
              [V3, V2], True),
    "sum": (lambda m: m.sum(), lambda m: m.sum(axis=(1, 2)), [M3], True),
    "max": (lambda a: a.max(), lambda a: a.max(-1), [V3], True),
    "min": (lambda a: a.min(), lambda a: a.min(-1), [V3], True),
    "swizzle": (lambda a: a.zxy * 2.0 + a.xyz, lambda a: a[:, [2, 0, 1]] * 2 + a, [V3], True),
    "swizzle_xy": (lambda a: a.xy + a.zz, lambda a: a[:, :2] + a[:, [2, 2]], [V3], True),
    "index": (lambda m: m[1, 0] * m[0, 1] + m[2, 2], lambda m: m[:, 1, 0] * m[:, 0, 1] +
              m[:, 2, 2], [M3], True),
    "elementwise_math": (lambda a: qd.sin(a) + qd.exp(a) * qd.sqrt(a * a + 1.0),
                         lambda a: np.sin(a) + np.exp(a) * np.sqrt(a * a + 1), [V3], True),
    "max_elementwise": (lambda a, b: qd.max(a, b) + qd.min(a, 0.25), lambda a, b:
                        np.maximum(a, b) + np.minimum(a, 0.25), [V3, V3], True),
    "math_clamp": (lambda a: qd.math.clamp(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5),
                   [V3], True),
    "math_mix": (lambda a, b, t: qd.math.mix(a, b, t), lambda a, b, t: a * (1 - t[:, None]) +
                 b * t[:, None], [V3, V3, S], True),
    "math_smoothstep": (lambda a: qd.math.smoothstep(-0.2, 1.0, a),
                        lambda a: _smoothstep(-0.2, 1.0, a), [_uniform((3,), 0.0, 0.9)], True),
    "math_length": (lambda a: qd.math.length(a), lambda a: np.linalg.norm(a, axis=-1), [V3],
                    True),
    "math_distance": (lambda a, b: qd.math.distance(a, b), lambda a, b:
                      np.linalg.norm(a - b, axis=-1), [V3, V3], True),
    "math_normalize": (lambda a: qd.math.normalize(a), _ref_normalize, [V2], True),
    "math_dot": (lambda a, b: qd.math.dot(a, b), lambda a, b: np.sum(a * b, -1), [V2, V2],
                 True),
    "math_cross": (lambda a, b: qd.math.cross(a, b), lambda a, b: np.cross(a, b), [V3, V3],
                   True),
    "math_reflect": (lambda a, n: qd.math.reflect(a, n.normalized()), lambda a, n:
                     a - 2 * np.sum(_ref_normalize(n) * a, -1)[:, None] * _ref_normalize(n),
                     [V3, V3], True),
    "compare": (lambda a, b: qd.cast(a < b, qd.i32) + 2 * qd.cast(a == a, qd.i32),
                lambda a, b: (a < b).astype(np.int32) + 2, [V3, V3], False),
    "any_all": (lambda a: qd.cast((a > 0).any(), qd.i32) + 2 * qd.cast((a > -2).all(), qd.i32),
                lambda a: np.any(a > 0, -1).astype(np.int32) + 2, [V3], False),
    "select": (lambda a, b: qd.select(a > b, a, b * 2.0), lambda a, b: np.where(a > b, a, b * 2),
               [V3, V3], True),
}


def _make_field(shape, dtype, needs_grad):
    if len(shape) == 0:
        return qd.field(dtype, shape=N, needs_grad=needs_grad)
    if len(shape) == 1:
        return qd.Vector.field(shape[0], dtype, shape=N, needs_grad=needs_grad)
    return qd.Matrix.field(shape[0], shape[1], dtype, shape=N, needs_grad=needs_grad)


@qd.kernel
def _apply1(fn: qd.template(), a: qd.template(), out: qd.template()):
    for i in range(out.shape[0]):
        out[i] = fn(a[i])


@qd.kernel
def _apply2(fn: qd.template(), a: qd.template(), b: qd.template(), out: qd.template()):
    for i in range(out.shape[0]):
        out[i] = fn(a[i], b[i])


@qd.kernel
def _apply3(fn: qd.template(), a: qd.template(), b: qd.template(), c: qd.template(),
            out: qd.template()):
    for i in range(out.shape[0]):
        out[i] = fn(a[i], b[i], c[i])


_APPLY = {1: _apply1, 2: _apply2, 3: _apply3}


def _setup(name, dt, seed=1):
    fn, ref, gens, diff = OPS[name]
    qd_dt, np_dt = _DT[dt]
    rng = np.random.default_rng(seed)
    inputs = [g(rng) for g in gens]
    expected = ref(*inputs)
    out_dt = qd_dt if np.issubdtype(expected.dtype, np.floating) else qd.i32
    fields = []
    for x in inputs:
        f = _make_field(x.shape[1:], qd_dt, diff)
        f.from_numpy(x.astype(np_dt))
        fields.append(f)
    out = _make_field(expected.shape[1:], out_dt, diff and out_dt == qd_dt)
    # The reference sees the inputs as the kernel does (rounded to dt).
    inputs = [f.to_numpy().astype(np.float64) for f in fields]
    return fn, ref, inputs, fields, out


def _central_difference(ref, inputs, weights, h=1e-6):
    grads = []
    for k, x in enumerate(inputs):
        g = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            plus = [v.copy() for v in inputs]
            minus = [v.copy() for v in inputs]
            plus[k][idx] += h
            minus[k][idx] -= h
            g[idx] = (np.sum(weights * ref(*plus)) - np.sum(weights * ref(*minus))) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("name", sorted(OPS))
@test_utils.test()
def test_op(name, dt):
    """The forward values, then (for differentiable ops) the gradient."""
    _require_dtype(dt)
    fn, ref, inputs, fields, out = _setup(name, dt)
    apply = _APPLY[len(fields)]
    apply(fn, *fields, out)
    expected = ref(*inputs)
    assert out.to_numpy().shape == expected.shape
    np.testing.assert_allclose(out.to_numpy(), expected, **_TOL[dt])
    if not OPS[name][3]:
        return
    weights = np.random.default_rng(7).uniform(0.5, 1.5, out.to_numpy().shape)
    out.grad.from_numpy(weights.astype(out.to_numpy().dtype))
    for f in fields:
        f.grad.fill(0)
    apply.grad(fn, *fields, out)
    expected = _central_difference(ref, inputs, weights)
    for f, g in zip(fields, expected):
        np.testing.assert_allclose(f.grad.to_numpy(), g, **_GTOL[dt])


@test_utils.test()
def test_builtin_all_and_any_reduce_vectors_in_kernels():
    x = qd.field(qd.i32, shape=4)
    out = qd.field(qd.i32, shape=(4, 2))
    x.from_numpy(np.array([0, 1, 2, 3], dtype=np.int32))

    @qd.kernel
    def check():
        for i in x:
            v = qd.Vector([x[i], x[i] - 1, 1])
            out[i, 0] = all(v != 0)
            out[i, 1] = any(v == 2)
        assert all(qd.Vector([1, 2]) == (1, 2))  # compile-time operands too

    check()
    want_all = [int(all(e != 0 for e in (k, k - 1, 1))) for k in range(4)]
    want_any = [int(any(e == 2 for e in (k, k - 1, 1))) for k in range(4)]
    np.testing.assert_array_equal(out.to_numpy()[:, 0], want_all)
    np.testing.assert_array_equal(out.to_numpy()[:, 1], want_any)


@test_utils.test()
def test_calling_a_vector_or_matrix_indexes_it():
    out = qd.field(qd.f32, shape=3)

    @qd.kernel
    def run(a: qd.f32):
        v = qd.Vector([a, 2.0 * a])
        m = qd.Matrix([[1.0, a], [3.0, 4.0]])
        out[0] = v(0) + v(1)  # Taichi's older spelling of v[0] + v[1]
        out[1] = m(0, 1)
        out[2] = (v * v)(1)

    run(1.5)
    np.testing.assert_allclose(out.to_numpy(), [4.5, 1.5, 9.0])


@test_utils.test(arch=qd.cpu)
def test_numpy_scalars_combine_with_vectors_into_vectors():
    v = qd.Vector([1.0, 2.0])
    for result in (np.float64(1.0) + v, v + np.float64(1.0), np.float32(2.0) * v):
        assert isinstance(result, qd.Matrix)
    assert (np.float64(3.0) - v).to_numpy().tolist() == [2.0, 1.0]
    assert isinstance(np.array([1.0, 1.0]) + v, np.ndarray)

    @qd.kernel
    def mixed() -> qd.types.vector(2, qd.f32):
        w = qd.Vector([1.0, 2.0])
        return np.float64(4.0) / w + np.cos(0.0)

    np.testing.assert_allclose(mixed().to_numpy(), [5.0, 3.0])


@test_utils.test()
def test_int_and_float_of_a_vector_cast_each_component():
    grid = qd.field(qd.i32, (6, 6))

    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        cell = int(qd.Vector([x, x + 2.0]))
        grid[cell] = 7
        half = float(qd.Vector([3, 5])) / 2
        return half[0] + half[1]

    assert run(1.75) == 4.0
    assert grid[1, 3] == 7


@test_utils.test()
def test_a_vector_unpacks_into_targets():
    a = qd.field(qd.f32, ())
    b = qd.field(qd.f32, ())

    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        a[None], b[None], c = qd.Vector([x, 2 * x, 3 * x])
        row0, row1 = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
        return c + row0[1] + row1[0]

    assert run(1.5) == 4.5 + 2.0 + 3.0
    assert a[None] == 1.5 and b[None] == 3.0


@test_utils.test()
def test_floor_and_ceil_take_a_result_type():
    @qd.kernel
    def run(x: qd.f32) -> qd.i32:
        v = qd.Vector([x, -x])
        f = qd.floor(v, qd.i32)
        c = qd.ceil(x, int)
        return f[0] * 100 + f[1] * 10 + c

    assert run(1.5) == 100 - 20 + 2


@test_utils.test()
def test_a_component_picked_by_a_run_time_index_binds_a_new_local():
    x = qd.Vector.field(3, qd.f32, shape=2)
    x[1] = [0.0, 5.0, 7.0]

    @qd.kernel
    def pick(k: qd.i32) -> qd.f32:
        s = 0.0
        for i in range(2):
            v = x[i][k]
            v += 1.0
            s += v
        return s

    assert pick(2) == 9.0
    assert pick(1) == 7.0


@test_utils.test()
def test_comprehensions_iterate_vectors_and_matrix_rows():
    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        m = qd.Matrix([[x, 1.0], [2.0, x]])
        firsts = [row[0] for row in m]
        flat = [e for row in m for e in row]
        doubled = [2 * c for c in qd.Vector([x, 3.0])]
        return firsts[0] + firsts[1] + flat[3] * 10 + doubled[1] * 100

    assert run(4.0) == 4.0 + 2.0 + 40.0 + 600.0


def _needs_pivoting(n, rng):
    """A well-conditioned n x n matrix whose top-left entry is 0, so
    elimination without row exchanges would divide by zero."""
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    a[[0, n - 1]] = a[[n - 1, 0]]
    a[0, 0] = 0.0
    return a


@pytest.mark.parametrize("n", [5, 8, 12])
@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test(require=qd.extension.data64)
def test_inverse_of_larger_matrices_pivots_at_run_time(n, dtype):
    m = qd.Matrix.field(n, n, dtype, shape=())
    inv = qd.Matrix.field(n, n, dtype, shape=())
    a = _needs_pivoting(n, np.random.default_rng(n))
    m.from_numpy(a)

    @qd.kernel
    def run():
        inv[None] = m[None].inverse()

    run()
    # Relative error of Gauss-Jordan with partial pivoting: a small multiple
    # of n * cond(a) * eps; cond(a) stays below 10 here.
    eps = np.finfo(np.float32 if dtype == qd.f32 else np.float64).eps
    np.testing.assert_allclose(inv.to_numpy(), np.linalg.inv(a),
                               atol=50 * n * eps * np.abs(np.linalg.inv(a)).max())
    host = qd.Matrix(a.tolist()).inverse()
    np.testing.assert_allclose(np.array(host.to_list()), np.linalg.inv(a), atol=1e-12)


@test_utils.test()
def test_frobenius_inner_of_matrices_and_vectors():
    @qd.kernel
    def run(x: qd.f32) -> qd.f32:
        a = qd.Matrix([[x, 2.0], [3.0, 4.0]])
        b = qd.Matrix([[5.0, 6.0], [7.0, x]])
        return a.frobenius_inner(b) + qd.Vector([1.0, x]).frobenius_inner(qd.Vector([x, 1.0]))

    assert run(2.0) == 10 + 12 + 21 + 8 + 4
    with pytest.raises(qd.QuadrantsTypeError, match="one shape"):
        qd.Matrix([[1, 2], [3, 4]]).frobenius_inner(qd.Vector([1, 2]))


@test_utils.test()
def test_a_run_time_component_index_out_of_range_reads_the_nearest_end():
    arr = qd.ndarray(qd.math.vec3, (2,))
    arr[1] = [10.0, 20.0, 30.0]

    @qd.kernel
    def pick(a: qd.types.ndarray(boundary="clamp"), k: qd.i32) -> qd.f32:
        return a[1][k]

    assert [pick(arr, k) for k in (-2, -1, 0, 1, 2, 3, 9)] == [10, 10, 10, 20, 30, 30, 30]


@test_utils.test(require=qd.extension.data64)
def test_the_gradient_through_a_pivoted_inverse_is_the_analytic_one():
    n = 6
    m = qd.Matrix.field(n, n, qd.f64, shape=(), needs_grad=True)
    w = qd.Matrix.field(n, n, qd.f64, shape=())
    loss = qd.field(qd.f64, (), needs_grad=True)
    rng = np.random.default_rng(2)
    a = _needs_pivoting(n, rng)
    weights = rng.standard_normal((n, n))
    m.from_numpy(a)
    w.from_numpy(weights)

    @qd.kernel
    def weighted_inverse():
        loss[None] = (m[None].inverse() * w[None]).sum()

    with qd.ad.Tape(loss=loss):
        weighted_inverse()
    # d/dA sum(W * A^-1) = -A^-T W A^-T; f64 elimination on a matrix with
    # cond(A) < 10 agrees to a few hundred ulps.
    inv = np.linalg.inv(a)
    expected = -inv.T @ weights @ inv.T
    np.testing.assert_allclose(m.grad.to_numpy(), expected, atol=1e-12 * np.abs(expected).max() * 100)
