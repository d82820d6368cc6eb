"""qd.math: GLSL-style vector types and helpers, built from scalar ops so
they work on scalars and vectors, in kernels and on the host."""
import math as _pymath
import operator

from quadrants.lang import ops, types
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


def _as_vec(x):
    if not isinstance(x, Matrix):
        from quadrants.lang import context  # pylint: disable=import-outside-toplevel
        x = context.load(x) if context.current() is not None else x
    if isinstance(x, (list, tuple)):
        x = Matrix(x)
    if not isinstance(x, Matrix):
        from quadrants.lang.exception import QuadrantsTypeError  # pylint: disable=import-outside-toplevel
        raise QuadrantsTypeError(f"expected a vector, got {type(x).__name__}")
    return x
