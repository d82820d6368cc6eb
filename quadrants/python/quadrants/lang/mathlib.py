"""qd.math: GLSL-style vector types and helpers, built from scalar ops so
they work on scalars and vectors, in kernels and on the host."""
import math as _pymath
import operator

from quadrants.lang import context as _context
from quadrants.lang import ops, types
from quadrants.lang.exception import QuadrantsTypeError as _QuadrantsTypeError
# Bit counts, classification and rounding, as upstream's qd.math has them.
from quadrants.lang.numerics import (clz, ffs, fns, isinf, isnan,  # pylint: disable=unused-import
                                     popcnt, round)  # pylint: disable=redefined-builtin
from quadrants.lang.matrix import Matrix, matrix, vector

pi = _pymath.pi
e = _pymath.e
inf = _pymath.inf
nan = _pymath.nan

vec2, vec3, vec4 = (vector(n, float) for n in (2, 3, 4))
ivec2, ivec3, ivec4 = (vector(n, int) for n in (2, 3, 4))
uvec2, uvec3, uvec4 = (vector(n, types.u32) for n in (2, 3, 4))
mat2, mat3, mat4 = (matrix(n, n, float) for n in (2, 3, 4))


def _intrinsic(fn):
    fn._qd_intrinsic = True
    return fn


def _b(name, fn):
    return lambda a, b: ops.binary(name, a, b, fn)


_add, _sub, _mul, _div = (_b("add", operator.add), _b("sub", operator.sub),
                          _b("mul", operator.mul), _b("div", operator.truediv))


@_intrinsic
def clamp(x, xmin, xmax):
    """min(max(x, xmin), xmax), component-wise."""
    return ops.min(ops.max(x, xmin), xmax)


@_intrinsic
def mix(x, y, a):
    """x * (1 - a) + y * a."""
    return _add(_mul(x, _sub(1.0, a)), _mul(y, a))


@_intrinsic
def step(edge, x):
    """0 where x < edge, else 1."""
    return ops.select(ops.binary("cmp_lt", x, edge, operator.lt), 0.0, 1.0)


@_intrinsic
def smoothstep(edge0, edge1, x):
    """Hermite interpolation between 0 (x <= edge0) and 1 (x >= edge1)."""
    t = clamp(_div(_sub(x, edge0), _sub(edge1, edge0)), 0.0, 1.0)
    return _mul(_mul(t, t), _sub(3.0, _mul(2.0, t)))


@_intrinsic
def fract(x):
    return _sub(x, ops.floor(x))


@_intrinsic
def sign(x):
    pos = ops.select(ops.binary("cmp_gt", x, 0, operator.gt), 1.0, 0.0)
    neg = ops.select(ops.binary("cmp_lt", x, 0, operator.lt), 1.0, 0.0)
    return _sub(pos, neg)


@_intrinsic
def length(x):
    return _as_vec(x).norm()


@_intrinsic
def distance(x, y):
    return _as_vec(_sub(x, y)).norm()


@_intrinsic
def normalize(v):
    return _as_vec(v).normalized()


@_intrinsic
def dot(x, y):
    return _as_vec(x).dot(y)


@_intrinsic
def cross(x, y):
    return _as_vec(x).cross(y)


@_intrinsic
def reflect(x, n):
    """x reflected about the plane of unit normal n: x - 2 dot(n, x) n."""
    return _sub(x, _mul(_mul(2.0, dot(n, x)), n))


@_intrinsic
def refract(x, n, eta):
    """GLSL refract of incident x through unit normal n with index ratio eta."""
    d = dot(n, x)
    k = _sub(1.0, _mul(_mul(eta, eta), _sub(1.0, _mul(d, d))))
    r = _sub(_mul(eta, x), _mul(_add(_mul(eta, d), ops.sqrt(ops.max(k, 0.0))), n))
    return ops.select(ops.binary("cmp_lt", k, 0.0, operator.lt), _mul(x, 0.0), r)


@_intrinsic
def determinant(m):
    return m.determinant()


@_intrinsic
def inverse(m):
    return m.inverse()


@_intrinsic
def radians(deg):
    return _mul(deg, pi / 180.0)


@_intrinsic
def degrees(rad):
    return _mul(rad, 180.0 / pi)


@_intrinsic
def log2(x):
    return _mul(ops.log(x), 1.0 / _pymath.log(2.0))


@_intrinsic
def eye(n):
    return Matrix.identity(float, n)


@_intrinsic
def rot2(ang):
    """The 2x2 rotation by ang radians."""
    c, s = ops.cos(ang), ops.sin(ang)
    return Matrix([[c, ops.binary("sub", 0.0, s, operator.sub)], [s, c]])


rotation2d = rot2


# The scalar math of qd.* is reachable as qd.math.* too, as upstream has it.
acos, asin, atan2, ceil, cos, exp = ops.acos, ops.asin, ops.atan2, ops.ceil, ops.cos, ops.exp
floor, log, max, min, pow, sin = (ops.floor, ops.log, ops.max,  # pylint: disable=redefined-builtin
                                  ops.min, ops.pow, ops.sin)
sqrt, tan, tanh = ops.sqrt, ops.tan, ops.tanh


@_intrinsic
def mod(x, y):
    """x - y * floor(x / y), component-wise: the remainder takes y's sign."""
    return _sub(x, _mul(y, ops.floor(_div(x, y))))


@_intrinsic
def vdir(ang):
    """The 2D unit vector at angle ang (radians): (cos ang, sin ang)."""
    return vec2(ops.cos(ang), ops.sin(ang))


@_intrinsic
def translate(dx, dy, dz):
    """The 4x4 homogeneous translation by (dx, dy, dz)."""
    return mat4([[1.0, 0.0, 0.0, dx], [0.0, 1.0, 0.0, dy], [0.0, 0.0, 1.0, dz],
                 [0.0, 0.0, 0.0, 1.0]])


@_intrinsic
def scale(sx, sy, sz):
    """The 4x4 homogeneous scaling by (sx, sy, sz)."""
    return mat4([[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, sz, 0.0],
                 [0.0, 0.0, 0.0, 1.0]])


@_intrinsic
def rot_by_axis(axis, ang):
    """The 4x4 homogeneous rotation by ang radians about `axis` (normalized
    here), laid out as upstream's: row i holds the image of basis vector i,
    so it rotates row vectors (v @ R) counter-clockwise about the axis."""
    a = normalize(_as_vec(axis, "qd.math.rot_by_axis()", 3))
    c, s = ops.cos(ang), ops.sin(ang)
    t = [_mul(_sub(1.0, c), a[k]) for k in range(3)]

    def entry(i, j):
        if i == j:
            return _add(c, _mul(t[i], a[i]))
        k = 3 - i - j  # the third axis
        sign_ = 1.0 if (j - i) % 3 == 1 else -1.0
        return _add(_mul(t[i], a[j]), _mul(sign_, _mul(s, a[k])))
    rows = [[entry(i, j) for j in range(3)] + [0.0] for i in range(3)]
    return mat4(rows + [[0.0, 0.0, 0.0, 1.0]])


@_intrinsic
def rot_yaw_pitch_roll(yaw, pitch, roll):
    """The 4x4 homogeneous rotation with Euler angles in radians: yaw about
    Y, then pitch about X, then roll about Z (upstream's layout)."""
    ch, sh = ops.cos(yaw), ops.sin(yaw)
    cp, sp = ops.cos(pitch), ops.sin(pitch)
    cb, sb = ops.cos(roll), ops.sin(roll)

    def neg(v):
        return _sub(0.0, v)
    return mat4([
        [_add(_mul(ch, cb), _mul(_mul(sh, sp), sb)), _mul(sb, cp),
         _add(neg(_mul(sh, cb)), _mul(_mul(ch, sp), sb)), 0.0],
        [_add(neg(_mul(ch, sb)), _mul(_mul(sh, sp), cb)), _mul(cb, cp),
         _add(_mul(sb, sh), _mul(_mul(ch, sp), cb)), 0.0],
        [_mul(sh, cp), neg(sp), _mul(ch, cp), 0.0],
        [0.0, 0.0, 0.0, 1.0]])


@_intrinsic
def rotation3d(ang_x, ang_y, ang_z):
    """rot_yaw_pitch_roll(ang_z, ang_x, ang_y): upstream's argument order."""
    return rot_yaw_pitch_roll(ang_z, ang_x, ang_y)


# ---- complex numbers as 2D vectors (real, imaginary) ---------------------------

def _complex(z, what):
    return _as_vec(z, what, 2)


def _nonzero(z):
    """Whether complex z is not 0, and a copy of z with 0 replaced by 1: the
    functions below evaluate on the copy and select 0 for z == 0, so neither
    their values nor their gradients see atan2(0, 0) or sqrt(0)."""
    cond = ops.binary("logical_or", ops.binary("cmp_ne", z[0], 0.0, operator.ne),
                      ops.binary("cmp_ne", z[1], 0.0, operator.ne),
                      lambda a, b: a or b)
    safe = vec2(ops.select(cond, z[0], 1.0), ops.select(cond, z[1], 0.0))
    return cond, safe


@_intrinsic
def cmul(z1, z2):
    """The complex product z1 * z2."""
    a, b = _complex(z1, "qd.math.cmul()"), _complex(z2, "qd.math.cmul()")
    return vec2(_sub(_mul(a[0], b[0]), _mul(a[1], b[1])),
                _add(_mul(a[0], b[1]), _mul(a[1], b[0])))


@_intrinsic
def cconj(z):
    """The complex conjugate (x, -y)."""
    z = _complex(z, "qd.math.cconj()")
    return vec2(z[0], _sub(0.0, z[1]))


@_intrinsic
def cdiv(z1, z2):
    """The complex quotient z1 / z2."""
    a, b = _complex(z1, "qd.math.cdiv()"), _complex(z2, "qd.math.cdiv()")
    den = _add(_mul(b[0], b[0]), _mul(b[1], b[1]))
    return vec2(_div(_add(_mul(a[0], b[0]), _mul(a[1], b[1])), den),
                _div(_sub(_mul(a[1], b[0]), _mul(a[0], b[1])), den))


@_intrinsic
def cinv(z):
    """The complex reciprocal 1 / z."""
    z = _complex(z, "qd.math.cinv()")
    den = _add(_mul(z[0], z[0]), _mul(z[1], z[1]))
    return vec2(_div(z[0], den), _div(_sub(0.0, z[1]), den))


def _polar_form(z, what):
    z = _complex(z, what)
    cond, safe = _nonzero(z)
    return cond, _add(_mul(safe[0], safe[0]), _mul(safe[1], safe[1])), \
        ops.atan2(safe[1], safe[0])


@_intrinsic
def csqrt(z):
    """The principal square root (non-negative real part; for a negative
    real z, the root with positive imaginary part); 0 for z = 0."""
    cond, r2, ang = _polar_form(z, "qd.math.csqrt()")
    r = ops.pow(r2, 0.25)
    half = _mul(ang, 0.5)
    return ops.select(cond, vec2(_mul(r, ops.cos(half)), _mul(r, ops.sin(half))), vec2(0.0))


@_intrinsic
def cpow(z, n):
    """z ** n for real n through the polar form, |z|^n (cos n arg z,
    sin n arg z), with arg z in (-pi, pi]; 0 for z = 0."""
    cond, r2, ang = _polar_form(z, "qd.math.cpow()")
    r = ops.pow(r2, _mul(n, 0.5))
    a = _mul(ang, n)
    return ops.select(cond, vec2(_mul(r, ops.cos(a)), _mul(r, ops.sin(a))), vec2(0.0))


@_intrinsic
def cexp(z):
    """The complex exponential e^z."""
    z = _complex(z, "qd.math.cexp()")
    r = ops.exp(z[0])
    return vec2(_mul(r, ops.cos(z[1])), _mul(r, ops.sin(z[1])))


@_intrinsic
def clog(z):
    """The principal logarithm: (log |z|, arg z) with arg z in (-pi, pi]."""
    z = _complex(z, "qd.math.clog()")
    r2 = _add(_mul(z[0], z[0]), _mul(z[1], z[1]))
    return vec2(_mul(ops.log(r2), 0.5), ops.atan2(z[1], z[0]))


def _as_vec(x, what=None, size=None):
    """x as a vector (a Matrix of one dimension); with `size`, one of that
    many components, `what` naming the function for the error."""
    if not isinstance(x, Matrix):
        x = _context.load(x) if _context.current() is not None else x
    if isinstance(x, (list, tuple)):
        x = Matrix(x)
    ok = isinstance(x, Matrix) and (size is None or (x.ndim == 1 and x.n == size))
    if not ok:
        found = x._describe() if isinstance(x, Matrix) else type(x).__name__
        if size is None:
            raise _QuadrantsTypeError(f"expected a vector, got {found}")
        kind = "a complex number as a 2D vector" if size == 2 else f"a {size}D vector"
        raise _QuadrantsTypeError(f"{what} needs {kind}, got {found}")
    return x
