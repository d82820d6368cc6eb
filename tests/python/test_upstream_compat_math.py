"""Upstream's qd.math helpers, qd.randn, qd.zero / qd.one, the compile-time
helpers (qd.static_assert, qd.static_print, qd.assume_in_range) and the
per-thread decompositions qd.eig, qd.sym_eig (up to 6x6) and qd.make_spd.

Forward values are checked against numpy; the gradients of the
differentiable math helpers against f64 central differences of numpy
references (h = 1e-6, so agreement to ~1e-7 relative)."""
import math

import numpy as np
import pytest

import quadrants as qd
from quadrants.lang import runtime
from tests import test_utils


def _require_f64():
    arch = runtime.state.options.get("arch", runtime.cpu)
    if not qd.is_extension_supported(arch, qd.extension.data64):
        pytest.skip(f"arch {arch} has no f64 (qd.extension.data64)")


# ---- forward values ------------------------------------------------------------

def _rodrigues_rows(axis, ang):
    """upstream's rot_by_axis layout: the transpose of the column-vector
    rotation matrix by ang about axis."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    r = np.eye(3) + math.sin(ang) * k + (1 - math.cos(ang)) * k @ k
    out = np.eye(4)
    out[:3, :3] = r.T
    return out


@test_utils.test()
def test_transforms():
    out = qd.Matrix.field(4, 4, qd.f32, shape=7)

    @qd.kernel
    def k():
        out[0] = qd.math.translate(1.0, 2.0, 3.0)
        out[1] = qd.math.scale(1.0, 2.0, 3.0)
        out[2] = qd.math.rot_yaw_pitch_roll(1.046, 0.52, -0.785)
        out[3] = qd.math.rot_by_axis(qd.math.vec3(0, 0, 1), -0.785) @ \
            qd.math.rot_by_axis(qd.math.vec3(1, 0, 0), 0.52) @ \
            qd.math.rot_by_axis(qd.math.vec3(0, 1, 0), -1.046)
        out[4] = qd.math.rotation3d(0.52, -0.785, 1.046)
        out[5] = qd.math.rot_by_axis(qd.math.vec3(1, -2, 0.5), 0.7)
        r2 = qd.math.rotation2d(qd.math.radians(30))
        m = qd.math.eye(4)
        for i in qd.static(range(2)):
            for j in qd.static(range(2)):
                m[i, j] = r2[i, j]
        out[6] = m

    k()
    m = out.to_numpy()
    np.testing.assert_allclose(m[0], [[1, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]])
    np.testing.assert_allclose(m[1], np.diag([1, 2, 3, 1]))
    euler = [[0.05048351, -0.61339645, -0.78816002, 0.0],
             [0.65833154, 0.61388511, -0.4355969, 0.0],
             [0.75103329, -0.49688014, 0.4348093, 0.0], [0, 0, 0, 1]]
    np.testing.assert_allclose(m[2], euler, atol=1e-5)
    # Upstream's check: the Euler matrix minus the composition about the axes.
    np.testing.assert_allclose(m[2] - m[3], [[-0.60788802, 0.0, -1.22438441, 0.0],
                                             [0.60837229, 0.0, -1.22340979, 0.0],
                                             [1.50206658, 0.0, 0.0, 0.0], [0, 0, 0, 0]],
                               atol=1e-5)
    np.testing.assert_allclose(m[4], m[2], atol=1e-6)
    np.testing.assert_allclose(m[5], _rodrigues_rows([1, -2, 0.5], 0.7), atol=1e-6)
    r = np.eye(4)
    r[:2, :2] = [[0.866025, -0.5], [0.5, 0.866025]]
    np.testing.assert_allclose(m[6], r, atol=1e-5)


@test_utils.test()
def test_glsl_helpers():
    s = qd.field(qd.f32, shape=16)
    v = qd.Vector.field(3, qd.f32, shape=8)

    @qd.kernel
    def k():
        a = qd.math.vec3(1.0, 2.0, 3.0)
        b = qd.math.vec3(-0.5, 0.25, 2.0)
        n = qd.math.vec3(0.0, 1.0, 0.0)
        s[0] = qd.math.clamp(2.5, 0.0, 1.0)
        s[1] = qd.math.mix(1.0, 3.0, 0.25)
        s[2] = qd.math.step(0.5, 0.2)
        s[3] = qd.math.smoothstep(0.0, 2.0, 0.5)
        s[4] = qd.math.fract(-1.25)
        s[5] = qd.math.sign(-3.0)
        s[6] = qd.math.mod(-0.5, 1.0)
        s[7] = qd.math.log2(8.0)
        s[8] = qd.math.degrees(qd.math.pi / 2)
        s[9] = qd.math.distance(a, b)
        s[10] = qd.math.length(b)
        s[11] = qd.math.dot(a, b)
        s[12] = qd.math.determinant(qd.math.mat2([[1.0, 2.0], [3.0, 4.0]]))
        s[13] = qd.math.sqrt(2.0) + qd.math.atan2(1.0, 1.0)
        s[14] = qd.math.sign(0.0)
        s[15] = qd.math.mod(5.0, -3.0)
        v[0] = qd.math.normalize(a)
        v[1] = qd.math.cross(a, b)
        v[2] = qd.math.reflect(a, n)
        v[3] = qd.math.refract(qd.math.vec3(1.0, 1.0, 1.0), n, 2.0)
        v[4] = qd.math.refract(qd.math.normalize(qd.math.vec3(1.0, -0.2, 0.0)), n, 1.5)
        v[5] = qd.math.clamp(b, -0.25, 1.0)
        v[6] = qd.math.mix(a, b, qd.math.vec3(0.0, 0.5, 1.0))
        v[7] = qd.math.sign(b - 0.25)

    k()
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-0.5, 0.25, 2.0])
    want = [1.0, 1.5, 0.0, 0.15625, 0.75, -1.0, 0.5, 3.0, 90.0, np.linalg.norm(a - b),
            np.linalg.norm(b), a @ b, -2.0, math.sqrt(2) + math.pi / 4, 0.0, -1.0]
    np.testing.assert_allclose(s.to_numpy(), want, rtol=1e-6, atol=1e-6)
    d = np.array([1.0, -0.2, 0.0]) / np.linalg.norm([1.0, -0.2, 0.0])
    # GLSL refract: total internal reflection (k < 0) gives the zero vector.
    k_ = 1 - 1.5 ** 2 * (1 - d[1] ** 2)
    refr = np.zeros(3) if k_ < 0 else 1.5 * d - (1.5 * d[1] + math.sqrt(k_)) * np.array([0, 1, 0])
    want_v = [a / np.linalg.norm(a), np.cross(a, b), [1.0, -2.0, 3.0], [2.0, -1.0, 2.0], refr,
              np.clip(b, -0.25, 1.0), a * (1 - np.array([0, 0.5, 1])) + b * [0, 0.5, 1],
              np.sign(b - 0.25)]
    np.testing.assert_allclose(v.to_numpy(), want_v, rtol=1e-6, atol=1e-6)


@test_utils.test()
def test_complex_helpers():
    out = qd.Vector.field(2, qd.f32, shape=11)

    @qd.kernel
    def k():
        z1 = qd.math.vec2(1.0, 1.0)
        z2 = qd.math.vec2(0.0, 1.0)
        z3 = qd.math.vec2(-0.6, -1.7)
        out[0] = qd.math.cmul(z1, z2)
        out[1] = qd.math.cdiv(z1, z2)
        out[2] = qd.math.cconj(z3)
        out[3] = qd.math.cinv(z3)
        out[4] = qd.math.csqrt(z3)
        out[5] = qd.math.csqrt(qd.math.vec2(-1.0, 0.0))
        out[6] = qd.math.cpow(z3, 2.5)
        out[7] = qd.math.cexp(z3)
        out[8] = qd.math.clog(z3)
        out[9] = qd.math.csqrt(qd.math.vec2(0.0, 0.0)) + qd.math.cpow(qd.math.vec2(0.0), 3.0)
        out[10] = qd.math.vdir(qd.math.pi / 2)

    k()
    z3 = complex(-0.6, -1.7)
    want = [(1 + 1j) * 1j, (1 + 1j) / 1j, z3.conjugate(), 1 / z3, np.sqrt(z3), 1j,
            abs(z3) ** 2.5 * np.exp(2.5j * np.angle(z3)), np.exp(z3), np.log(z3), 0, 1j]
    np.testing.assert_allclose(out.to_numpy(), [[w.real, w.imag] for w in np.array(want)],
                               rtol=1e-5, atol=1e-6)


@test_utils.test(arch=qd.cpu)
def test_math_on_the_host():
    np.testing.assert_allclose(qd.math.cmul([1.0, 2.0], [3.0, -1.0]).to_numpy(), [5.0, 5.0])
    np.testing.assert_allclose(qd.math.rotation2d(0.5).to_numpy(),
                               [[math.cos(0.5), -math.sin(0.5)],
                                [math.sin(0.5), math.cos(0.5)]])
    assert qd.math.mod(-0.5, 1.0) == 0.5
    np.testing.assert_allclose(qd.math.translate(1, 2, 3).to_numpy()[:3, 3], [1, 2, 3])


def test_quadrants_math_module():
    import quadrants.math  # pylint: disable=import-outside-toplevel
    from quadrants.math import cmul, inf, nan, pi, vdir  # pylint: disable=import-outside-toplevel
    assert quadrants.math is qd.math
    assert cmul is qd.math.cmul and vdir is qd.math.vdir
    assert pi == math.pi and inf == math.inf and math.isnan(nan)


@test_utils.test(debug=True)
def test_vector_type_aliases():
    @qd.dataclass
    class Ray:
        pos: qd.math.vec3
        uv: qd.math.vec2
        mat: qd.math.mat3
        cell: qd.math.ivec3
        tag: qd.math.uvec2

    out = qd.field(qd.f32, shape=4)

    @qd.kernel
    def k():
        ray = Ray(qd.math.vec3(qd.math.pi), qd.math.vec2(0.5, 0.5), qd.math.mat3(1),
                  qd.math.ivec3(1, -2, 3), qd.math.uvec2(7))
        out[0] = ray.pos.x
        out[1] = ray.mat[2, 1] + ray.uv.y
        out[2] = ray.cell.y
        out[3] = ray.tag.x

    k()
    np.testing.assert_allclose(out.to_numpy(), [math.pi, 1.5, -2.0, 7.0], rtol=1e-6)


@test_utils.test(arch=qd.cpu)
def test_complex_helpers_reject_other_shapes():
    @qd.kernel
    def k():
        qd.math.cmul(qd.math.vec3(1.0), qd.math.vec2(1.0))

    with pytest.raises(qd.QuadrantsTypeError, match=r"qd.math.cmul\(\) needs a complex"):
        k()


# ---- gradients against central differences --------------------------------------

_W2 = np.array([0.3, -0.7])
_W3 = np.array([0.3, -0.7, 1.1])
_V4 = np.array([0.2, -0.4, 0.9, 1.3])


def _vec2(x, i, j):
    return qd.Vector([x[i], x[j]])


def _vec3(x, i, j, k):
    return qd.Vector([x[i], x[j], x[k]])


def _k_mix(x):
    return qd.math.mix(x[0], x[1], x[2]) + qd.math.clamp(x[0], -5.0, 5.0)


def _n_mix(x):
    return x[0] * (1 - x[2]) + x[1] * x[2] + x[0]


def _k_smooth(x):
    return qd.math.smoothstep(-1.0, 2.0, x[0]) + qd.math.fract(x[1]) + qd.math.mod(x[2], 0.7)


def _n_smooth(x):
    t = np.clip((x[0] + 1) / 3, 0, 1)
    return t * t * (3 - 2 * t) + x[1] - np.floor(x[1]) + x[2] - 0.7 * np.floor(x[2] / 0.7)


def _k_log2(x):
    return qd.math.log2(x[0] * x[0] + 1.0) * qd.math.degrees(x[1]) + qd.math.radians(x[2])


def _n_log2(x):
    return np.log2(x[0] ** 2 + 1) * np.degrees(x[1]) + np.radians(x[2])


def _k_geometry(x):
    a = _vec3(x, 0, 1, 2)
    n = qd.math.normalize(_vec3(x, 2, 0, 1))
    return (qd.math.distance(a, n) + qd.math.length(a) * 0.5 +
            qd.math.reflect(a, n).dot(qd.Vector(list(_W3))) +
            qd.math.refract(qd.math.normalize(a), n, 0.8).dot(qd.Vector(list(_W3))))


def _n_geometry(x):
    a = x[[0, 1, 2]]
    n = x[[2, 0, 1]] / np.linalg.norm(x[[2, 0, 1]])
    d = a / np.linalg.norm(a)
    k = 1 - 0.64 * (1 - (n @ d) ** 2)
    refr = 0.8 * d - (0.8 * (n @ d) + np.sqrt(k)) * n
    return (np.linalg.norm(a - n) + 0.5 * np.linalg.norm(a) +
            (a - 2 * (n @ a) * n) @ _W3 + refr @ _W3)


def _k_rotations(x):
    r2 = qd.math.rotation2d(x[0])
    r3 = qd.math.rotation3d(x[0], x[1], x[2]) @ qd.math.rot_by_axis(_vec3(x, 1, 2, 0), x[0])
    return (r2 @ qd.Vector(list(_W2))).dot(qd.Vector([1.0, 2.0])) + \
        (r3 @ qd.Vector(list(_V4))).dot(qd.Vector([1.0, -1.0, 0.5, 2.0]))


def _euler(yaw, pitch, roll):
    ch, sh, cp, sp, cb, sb = (math.cos(yaw), math.sin(yaw), math.cos(pitch),
                              math.sin(pitch), math.cos(roll), math.sin(roll))
    return np.array([[ch * cb + sh * sp * sb, sb * cp, -sh * cb + ch * sp * sb, 0],
                     [-ch * sb + sh * sp * cb, cb * cp, sb * sh + ch * sp * cb, 0],
                     [sh * cp, -sp, ch * cp, 0], [0, 0, 0, 1]])


def _n_rotations(x):
    c, s = math.cos(x[0]), math.sin(x[0])
    r2 = np.array([[c, -s], [s, c]])
    r3 = _euler(x[2], x[0], x[1]) @ _rodrigues_rows(x[[1, 2, 0]], x[0])
    return (r2 @ _W2) @ [1.0, 2.0] + (r3 @ _V4) @ [1.0, -1.0, 0.5, 2.0]


def _k_complex(x):
    z, w = _vec2(x, 0, 1), _vec2(x, 2, 0)
    total = qd.math.cmul(z, w) + qd.math.cdiv(z, w) + qd.math.cinv(w) + qd.math.csqrt(z) + \
        qd.math.cpow(w, 1.7) + qd.math.cexp(z) + qd.math.clog(w) + qd.math.cconj(z)
    return total.dot(qd.Vector(list(_W2)))


def _n_complex(x):
    z, w = complex(x[0], x[1]), complex(x[2], x[0])
    t = z * w + z / w + 1 / w + np.sqrt(z) + abs(w) ** 1.7 * np.exp(1.7j * np.angle(w)) + \
        np.exp(z) + np.log(w) + z.conjugate()
    return _W2[0] * t.real + _W2[1] * t.imag


def _k_inverse(x):
    m = qd.math.mat2([[x[0], x[1]], [x[2], 2.0]])
    return (qd.math.inverse(m) @ qd.Vector(list(_W2))).dot(qd.Vector([1.0, 3.0])) + \
        qd.math.determinant(m)


def _n_inverse(x):
    m = np.array([[x[0], x[1]], [x[2], 2.0]])
    return (np.linalg.inv(m) @ _W2) @ [1.0, 3.0] + np.linalg.det(m)


_GRAD_CASES = {
    "mix_clamp": (_k_mix, _n_mix),
    "smoothstep_fract_mod": (_k_smooth, _n_smooth),
    "log2_degrees_radians": (_k_log2, _n_log2),
    "geometry": (_k_geometry, _n_geometry),
    "rotations": (_k_rotations, _n_rotations),
    "complex": (_k_complex, _n_complex),
    "inverse_determinant": (_k_inverse, _n_inverse),
}


@pytest.mark.parametrize("case", sorted(_GRAD_CASES))
@test_utils.test(default_fp=qd.f64)
def test_math_gradients(case):
    _require_f64()
    kernel_fn, numpy_fn = _GRAD_CASES[case]
    x = qd.Vector.field(3, qd.f64, shape=(), needs_grad=True)
    loss = qd.field(qd.f64, shape=(), needs_grad=True)

    @qd.kernel
    def run(fn: qd.template()):
        loss[None] = fn(x[None])

    x0 = np.array([0.45, -1.3, 0.8])
    x.from_numpy(x0)
    with qd.ad.Tape(loss=loss):
        run(kernel_fn)
    assert loss[None] == pytest.approx(numpy_fn(x0), rel=1e-10, abs=1e-12)
    h = 1e-6
    central = [(numpy_fn(x0 + h * e) - numpy_fn(x0 - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.to_numpy(), central, rtol=1e-6, atol=1e-7)


# ---- qd.randn, qd.zero / qd.one, compile-time helpers ---------------------------

@pytest.mark.parametrize("precision", ["f32", "f64"])
@test_utils.test()
def test_randn_moments(precision):
    if precision == "f64":
        _require_f64()
    dt = getattr(qd, precision)
    n = 1024
    x = qd.field(qd.f32, shape=(n, n))

    @qd.kernel
    def fill():
        for i in range(n):
            for j in range(n):
                x[i, j] = qd.randn(dt)

    fill()
    samples = x.to_numpy()
    # Moments of the standard normal: 0, 1, 0, 3.
    for power, moment in zip(range(1, 5), [0.0, 1.0, 0.0, 3.0]):
        assert (samples ** power).mean() == pytest.approx(moment, abs=3e-2)


@test_utils.test(arch=qd.cpu)
def test_randn_errors():
    @qd.kernel
    def k():
        qd.randn(qd.i32)

    with pytest.raises(qd.QuadrantsTypeError, match="qd.randn"):
        k()
    with pytest.raises(qd.QuadrantsSyntaxError, match="kernel code"):
        qd.randn()


@pytest.mark.parametrize("dtype", ["i32", "f32", "i64", "f64"])
@pytest.mark.parametrize("which,expected", [("zero", 0), ("one", 1)])
@pytest.mark.parametrize("is_mat", [False, True])
@test_utils.test()
def test_zero_one(dtype, which, expected, is_mat):
    if dtype in ("i64", "f64"):
        _require_f64()
    dt, fn = getattr(qd, dtype), getattr(qd, which)
    if is_mat:
        x, y = qd.Matrix.field(2, 3, dt, ()), qd.Matrix.field(2, 3, dt, ())
    else:
        x, y = qd.field(dt, ()), qd.field(dt, ())

    @qd.kernel
    def k():
        y[None] = fn(x[None])

    for a in [-1, -2.3, 0, 1.9, 3]:
        x.fill(int(a) if dtype[0] == "i" else a)
        k()
        assert np.all(y.to_numpy() == expected)
        assert y.to_numpy().dtype == np.dtype({"i32": np.int32, "f32": np.float32,
                                               "i64": np.int64, "f64": np.float64}[dtype])


@test_utils.test(arch=qd.cpu)
def test_static_assert():
    v = qd.Vector.field(4, qd.f32, ())
    f = qd.field(qd.f32, ())
    three = 3

    @qd.kernel
    def ok():
        qd.static_assert(v.n == 4)
        qd.static_assert(f.dtype == qd.f32, "f32 only")

    @qd.kernel
    def fails():
        qd.static_assert(three == 4, "Oh, no!")

    @qd.kernel
    def runtime_condition():
        value = False
        qd.static_assert(value, "Oh, no!")

    ok()
    with pytest.raises(qd.QuadrantsCompilationError, match="Oh, no!"):
        fails()
    with pytest.raises(qd.QuadrantsTypeError, match="Static assert with non-static condition"):
        runtime_condition()


@test_utils.test(arch=qd.cpu)
def test_static_print_runs_at_compile_time(capsys):
    x = qd.field(qd.f32, shape=4)

    @qd.kernel
    def k():
        for i in range(4):
            x[i] = i
            qd.static_print("compiling", 4)

    k()
    k()
    assert capsys.readouterr().out.count("compiling 4") == 1
    np.testing.assert_array_equal(x.to_numpy(), [0, 1, 2, 3])


@test_utils.test()
def test_assume_in_range():
    base = qd.field(qd.i32, shape=8)
    out = qd.field(qd.i32, shape=8)

    @qd.kernel
    def k():
        for i in range(8):
            j = qd.assume_in_range(base[i] + 1, base[i], 0, 2)
            out[i] = j * 2

    base.from_numpy(np.arange(8, dtype=np.int32) * 3)
    k()
    np.testing.assert_array_equal(out.to_numpy(), (np.arange(8) * 3 + 1) * 2)

    @qd.kernel
    def bad(lo: qd.i32):
        out[0] = qd.assume_in_range(out[1], out[2], lo, 4)

    with pytest.raises(qd.QuadrantsTypeError, match="low must be a compile-time int"):
        bad(0)


# ---- eig, sym_eig, make_spd ---------------------------------------------------

def _same_direction(v, w, tol):
    """Unit complex vectors equal up to a unit complex factor."""
    v, w = v / np.linalg.norm(v), w / np.linalg.norm(w)
    assert abs(abs(np.vdot(v, w)) - 1.0) < tol


@pytest.mark.parametrize("a", [[[1, 1], [2, 3]], [[1, -1], [1, 1]], [[2, 0], [0, 2]],
                               [[1, 1], [0, 1]], [[1, 1], [0, 2]], [[0, 2], [-3, 1]]])
@pytest.mark.parametrize("dt", ["f32", "f64"])
@test_utils.test()
def test_eig2x2(a, dt):
    if dt == "f64":
        _require_f64()
    qd_dt = getattr(qd, dt)
    tol = 1e-5 if dt == "f32" else 1e-12
    A = qd.Matrix.field(2, 2, qd_dt, shape=())
    vals = qd.Matrix.field(2, 2, qd_dt, shape=())
    vecs = qd.Matrix.field(4, 2, qd_dt, shape=())
    A[None] = a

    @qd.kernel
    def k():
        vals[None], vecs[None] = qd.eig(A[None], qd_dt)

    k()
    lam = vals.to_numpy() @ [1, 1j]
    v = vecs.to_numpy()[0::2] + 1j * vecs.to_numpy()[1::2]
    an = np.array(a, float)
    np.testing.assert_allclose(sorted(lam, key=lambda c: (c.real, c.imag)),
                               sorted(np.linalg.eigvals(an), key=lambda c: (c.real, c.imag)),
                               atol=10 * tol)
    for col in range(2):
        np.testing.assert_allclose(np.linalg.norm(v[:, col]), 1.0, atol=10 * tol)
        np.testing.assert_allclose(an @ v[:, col], lam[col] * v[:, col], atol=10 * tol)
    if not np.allclose(an, an[0, 0] * np.eye(2)) and lam[0] != lam[1]:
        ref_vals, ref_vecs = np.linalg.eig(an)
        for col in range(2):
            match = int(np.argmin(abs(ref_vals - lam[col])))
            _same_direction(v[:, col], ref_vecs[:, match], 10 * tol)


def _sym(n, kind, rng):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    if kind == "random":
        m = rng.standard_normal((n, n))
        return (m + m.T) / 2
    eigs = {"indefinite": np.linspace(-1.0, 2.0, n), "negative": -np.linspace(0.5, 2.0, n),
            "repeated": np.array([1.0] * (n // 2) + [3.0] * (n - n // 2)),
            "spd": np.linspace(0.5, 4.0, n)}[kind]
    return q @ np.diag(eigs) @ q.T


@pytest.mark.parametrize("n", [2, 3, 4, 6])
@pytest.mark.parametrize("kind", ["random", "indefinite", "repeated", "negative"])
@test_utils.test()
def test_sym_eig_and_make_spd(n, kind):
    _require_f64()
    a_np = _sym(n, kind, np.random.default_rng(n * 7 + len(kind)))
    A = qd.Matrix.field(n, n, qd.f64, shape=())
    vals = qd.Vector.field(n, qd.f64, shape=())
    vecs = qd.Matrix.field(n, n, qd.f64, shape=())
    spd = qd.Matrix.field(n, n, qd.f64, shape=())
    A.from_numpy(a_np)

    @qd.kernel
    def k():
        vals[None], vecs[None] = qd.sym_eig(A[None], qd.f64)
        spd[None] = qd.make_spd(A[None], qd.f64)

    k()
    lam, q = vals.to_numpy(), vecs.to_numpy()
    tol = 1e-9
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(a_np), atol=tol)  # ascending
    np.testing.assert_allclose(q.T @ q, np.eye(n), atol=tol)
    np.testing.assert_allclose(a_np @ q, q * lam, atol=tol)
    w, v = np.linalg.eigh(a_np)
    np.testing.assert_allclose(spd.to_numpy(), v @ np.diag(np.clip(w, 0, None)) @ v.T,
                               atol=tol)


@test_utils.test()
def test_sym_eig_f32_and_identity():
    n = 5
    a_np = _sym(n, "indefinite", np.random.default_rng(3)).astype(np.float32)
    A = qd.Matrix.field(n, n, qd.f32, shape=())
    vals = qd.Vector.field(n, qd.f32, shape=2)
    vecs = qd.Matrix.field(n, n, qd.f32, shape=2)
    A.from_numpy(a_np)

    @qd.kernel
    def k():
        vals[0], vecs[0] = qd.sym_eig(A[None])
        vals[1], vecs[1] = qd.sym_eig(qd.Matrix.identity(qd.f32, n) * -2.5)

    k()
    np.testing.assert_allclose(vals.to_numpy()[0], np.linalg.eigvalsh(a_np), atol=5e-5)
    q = vecs.to_numpy()[0]
    np.testing.assert_allclose(a_np @ q, q * vals.to_numpy()[0], atol=5e-5)
    np.testing.assert_allclose(vals.to_numpy()[1], [-2.5] * n)
    np.testing.assert_allclose(vecs.to_numpy()[1], np.eye(n))


@pytest.mark.parametrize("fn", ["sym_eig", "make_spd"])
@test_utils.test(arch=qd.cpu)
def test_sym_eig_above_six_raises(fn):
    A = qd.Matrix.field(7, 7, qd.f32, shape=())

    @qd.kernel
    def k():
        getattr(qd, fn)(A[None])

    with pytest.raises(qd.QuadrantsTypeError, match="up to 6x6"):
        k()


@test_utils.test(arch=qd.cpu)
def test_eig_needs_2x2():
    A = qd.Matrix.field(3, 3, qd.f32, shape=())

    @qd.kernel
    def k():
        qd.eig(A[None])

    with pytest.raises(qd.QuadrantsTypeError, match=r"qd.eig\(\) only supports 2x2"):
        k()
