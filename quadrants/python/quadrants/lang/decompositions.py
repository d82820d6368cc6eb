"""qd.svd and qd.polar_decompose for 2x2 and 3x3 matrices.

Both are built from scalar ops (statically unrolled), so they compile to
straight-line code and autodiff differentiates them like any other code.
The SVD is one-sided Jacobi: plane rotations V make the columns of A V
orthogonal; their norms are the singular values. Rotation angles come from
atan2, which stays finite (and differentiable) when a column pair is
already orthogonal, where the usual tangent formula divides by zero.
"""
import operator

from quadrants.lang import context, ops
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.matrix import Matrix

# Each sweep rotates every column pair once. Jacobi converges quadratically
# once the off-diagonal part is small: three sweeps reach f32 precision for
# 3x3 and four f64 precision; for 2x2 one rotation orthogonalizes the two
# columns and a second one removes its rounding.
_SWEEPS = {2: 2, 3: 4}


def _b(name, fn):
    return lambda a, b: ops.binary(name, a, b, fn)


_add, _sub, _mul, _div = (_b("add", operator.add), _b("sub", operator.sub),
                          _b("mul", operator.mul), _b("div", operator.truediv))
_lt = _b("cmp_lt", operator.lt)


def _neg(x):
    return _sub(0.0, x)


def _check(a, what):
    if context.current() is not None:
        a = context.load(a)
    if not isinstance(a, Matrix) or a.ndim != 2 or a.n != a.m or a.n not in (2, 3):
        shape = a._describe() if isinstance(a, Matrix) else type(a).__name__
        raise QuadrantsTypeError(f"{what} only supports 2D and 3D matrices (2x2 and 3x3), "
                                 f"got a {shape}")
    return a


def _cast(a, dt):
    return a if dt is None else a.cast(dt)


def _cols(a):
    n = a.n
    return [[a.entries[i * n + j] for i in range(n)] for j in range(n)]


def _from_cols(cols):
    n = len(cols)
    return Matrix._make([cols[j][i] for i in range(n) for j in range(n)], n, n, 2)


def _dot(x, y):
    out = _mul(x[0], y[0])
    for a, b in zip(x[1:], y[1:]):
        out = _add(out, _mul(a, b))
    return out


def _swap_if(cond, x, y):
    """(y, x) where cond holds, else (x, y), component-wise."""
    return ([ops.select(cond, b, a) for a, b in zip(x, y)],
            [ops.select(cond, a, b) for a, b in zip(x, y)])


def svd(A, dt=None):  # pylint: disable=invalid-name
    """qd.svd(A): U, S, V with A = U @ S @ V.transpose(), U and V rotations
    (determinant 1) and S diagonal with |S[0,0]| >= |S[1,1]| (>= |S[2,2]|);
    the last singular value carries the sign of det(A)."""
    a = _cast(_check(A, "qd.svd()"), dt)
    n = a.n
    w = _cols(a)                       # the columns of A V
    v = [[1.0 if i == j else 0.0 for i in range(n)] for j in range(n)]
    pairs = [(0, 1)] if n == 2 else [(0, 1), (0, 2), (1, 2)]
    for _ in range(_SWEEPS[n]):
        for p, q in pairs:
            alpha, beta, gamma = _dot(w[p], w[p]), _dot(w[q], w[q]), _dot(w[p], w[q])
            theta = _mul(0.5, ops.atan2(_mul(2.0, gamma), _sub(beta, alpha)))
            c, s = ops.cos(theta), ops.sin(theta)
            for cols in (w, v):
                cp, cq = cols[p], cols[q]
                cols[p] = [_sub(_mul(c, x), _mul(s, y)) for x, y in zip(cp, cq)]
                cols[q] = [_add(_mul(s, x), _mul(c, y)) for x, y in zip(cp, cq)]
    sig = [_dot(col, col) for col in w]
    # Sort by decreasing singular value (a sorting network of swaps).
    order = [(0, 1)] if n == 2 else [(0, 1), (1, 2), (0, 1)]
    for i, j in order:
        cond = _lt(sig[i], sig[j])
        sig[i], sig[j] = ops.select(cond, sig[j], sig[i]), ops.select(cond, sig[i], sig[j])
        w[i], w[j] = _swap_if(cond, w[i], w[j])
        v[i], v[j] = _swap_if(cond, v[i], v[j])
    # Make V a rotation by flipping its last column if needed.
    det_v = Matrix._make([v[j][i] for i in range(n) for j in range(n)], n, n, 2).determinant()
    flip = ops.select(_lt(det_v, 0.0), -1.0, 1.0)
    v[n - 1] = [_mul(flip, x) for x in v[n - 1]]
    w[n - 1] = [_mul(flip, x) for x in w[n - 1]]
    u, s_diag = [], []
    for k in range(n - 1):
        norm = ops.sqrt(sig[k])
        s_diag.append(norm)
        u.append([_div(x, norm) for x in w[k]])
    # The last column of U completes a rotation; the last singular value is
    # the (signed) component of the last column of A V along it.
    if n == 2:
        u.append([_neg(u[0][1]), u[0][0]])
    else:
        x, y = u[0], u[1]
        u.append([_sub(_mul(x[1], y[2]), _mul(x[2], y[1])),
                  _sub(_mul(x[2], y[0]), _mul(x[0], y[2])),
                  _sub(_mul(x[0], y[1]), _mul(x[1], y[0]))])
    s_diag.append(_dot(w[n - 1], u[n - 1]))
    zero = _mul(0.0, s_diag[0])
    s_mat = Matrix._make([s_diag[i] if i == j else zero for i in range(n) for j in range(n)],
                         n, n, 2)
    return _from_cols(u), s_mat, _from_cols(v)


def polar_decompose(A, dt=None):  # pylint: disable=invalid-name
    """qd.polar_decompose(A): U, P with A = U @ P, U a rotation and P
    symmetric."""
    a = _cast(_check(A, "qd.polar_decompose()"), dt)
    if a.n == 2:
        # The rotation by the angle of (a00 + a11, a10 - a01) makes U^T A
        # symmetric.
        e = a.entries
        x, y = _add(e[0], e[3]), _sub(e[2], e[1])
        inv = ops.rsqrt(_add(_mul(x, x), _mul(y, y)))
        c, s = _mul(x, inv), _mul(y, inv)
        u = Matrix._make([c, _neg(s), s, c], 2, 2, 2)
        return u, u.transpose() @ a
    u, s, v = svd(a)
    return u @ v.transpose(), v @ s @ v.transpose()


def sym_eig(A, dt=None):  # pylint: disable=invalid-name
    """qd.sym_eig(A) for symmetric 2x2 and 3x3 A: (eigenvalues, eigenvectors),
    a vector and a matrix whose columns are the unit eigenvectors, eigenvalues
    in decreasing order. Two-sided Jacobi: each rotation zeroes one
    off-diagonal pair of R^T A R."""
    a = _cast(_check(A, "qd.sym_eig()"), dt)
    n = a.n
    m = [list(a.entries[i * n:(i + 1) * n]) for i in range(n)]
    v = [[1.0 if i == j else 0.0 for i in range(n)] for j in range(n)]  # columns
    pairs = [(0, 1)] if n == 2 else [(0, 1), (0, 2), (1, 2)]
    for _ in range(_SWEEPS[n]):
        for p, q in pairs:
            theta = _mul(0.5, ops.atan2(_mul(2.0, m[p][q]), _sub(m[q][q], m[p][p])))
            c, s = ops.cos(theta), ops.sin(theta)
            # Columns p, q of M R, then rows p, q of R^T (M R).
            for row in m:
                row[p], row[q] = _sub(_mul(c, row[p]), _mul(s, row[q])), \
                    _add(_mul(s, row[p]), _mul(c, row[q]))
            m[p], m[q] = [_sub(_mul(c, x), _mul(s, y)) for x, y in zip(m[p], m[q])], \
                [_add(_mul(s, x), _mul(c, y)) for x, y in zip(m[p], m[q])]
            v[p], v[q] = [_sub(_mul(c, x), _mul(s, y)) for x, y in zip(v[p], v[q])], \
                [_add(_mul(s, x), _mul(c, y)) for x, y in zip(v[p], v[q])]
    lam = [m[k][k] for k in range(n)]
    order = [(0, 1)] if n == 2 else [(0, 1), (1, 2), (0, 1)]
    for i, j in order:
        cond = _lt(lam[i], lam[j])
        lam[i], lam[j] = ops.select(cond, lam[j], lam[i]), ops.select(cond, lam[i], lam[j])
        v[i], v[j] = _swap_if(cond, v[i], v[j])
    return Matrix._make(lam, n, 1, 1), _from_cols(v)


def solve(A, b, dt=None):  # pylint: disable=invalid-name
    """qd.solve(A, b): x with A @ x = b, for 2x2 and 3x3 A (through the
    cofactor inverse)."""
    a = _cast(_check(A, "qd.solve()"), dt)
    if context.current() is not None:
        b = context.load(b)
    if not isinstance(b, Matrix) or b.ndim != 1 or b.n != a.n:
        shape = b._describe() if isinstance(b, Matrix) else type(b).__name__
        raise QuadrantsTypeError(f"qd.solve(): A is a {a._describe()}, so b must be a "
                                 f"vector of {a.n}, got a {shape}")
    return a.inverse() @ _cast(b, dt)


for _fn in (svd, polar_decompose, sym_eig, solve):
    _fn._qd_intrinsic = True
