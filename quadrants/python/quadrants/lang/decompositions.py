"""Per-thread decompositions: qd.svd, qd.polar_decompose, qd.solve (2x2 and
3x3), qd.sym_eig and qd.make_spd (2x2 up to 6x6), qd.eig (2x2).

Up to 3x3 they are built from scalar ops (statically unrolled), so they
compile to straight-line code and autodiff differentiates them like any
other code; sym_eig from 4x4 up loops over its sweeps (sym_eig_jacobi.py).
The SVD is one-sided Jacobi: plane rotations V make the columns of A V
orthogonal; their norms are the singular values. Rotation angles come from
atan2, which stays finite (and differentiable) when a column pair is
already orthogonal, where the usual tangent formula divides by zero.
"""
import operator

from quadrants.lang import context, ops, runtime, source_inline
from quadrants.lang.exception import QuadrantsTypeError
from quadrants.lang.expr import Expr
from quadrants.lang.matrix import Matrix
from quadrants.lang.sym_eig_jacobi import sym_eig_jacobi

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


def _check(a, what, sizes=(2, 3)):
    if context.current() is not None:
        a = context.load(a)
    if not isinstance(a, Matrix) or a.ndim != 2 or a.n != a.m or a.n not in sizes:
        shape = a._describe() if isinstance(a, Matrix) else type(a).__name__
        if sizes == (2, 3):
            supported = "2D and 3D matrices (2x2 and 3x3)"
        elif len(sizes) == 1:
            supported = f"{sizes[0]}x{sizes[0]} matrices"
        else:
            supported = (f"square matrices from {sizes[0]}x{sizes[0]} up to "
                         f"{sizes[-1]}x{sizes[-1]}")
        upstream = " (Polar decomposition only supports 2×2 and 3×3 matrices.)" \
            if what == "qd.polar_decompose()" else ""
        raise QuadrantsTypeError(f"{what} only supports {supported}, got a {shape}{upstream}")
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
    """qd.sym_eig(A, dt=None) for symmetric A from 2x2 up to 6x6:
    (eigenvalues, eigenvectors), a vector and a matrix whose column k is the
    unit eigenvector of eigenvalue k, eigenvalues in ascending order (as
    numpy's eigh). Two-sided Jacobi: each rotation zeroes one off-diagonal
    pair of R^T A R; 2x2 and 3x3 unroll a few sweeps into straight-line,
    differentiable code, larger sizes loop over sweeps (sym_eig_jacobi)."""
    a = _cast(_check(A, "qd.sym_eig()", _SYM_EIG_SIZES), dt)
    n = a.n
    if n > 3:
        return _sym_eig_loop(a, dt)
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
        cond = _lt(lam[j], lam[i])
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


_SYM_EIG_SIZES = (2, 3, 4, 5, 6)


def _sym_eig_loop(a, dt):
    if context.current() is None:
        raise QuadrantsTypeError(f"qd.sym_eig() of a {a.n}x{a.n} matrix runs in kernel code "
                                 f"only")
    dtype = dt if dt is not None else _float_dtype(a, runtime.default_fp())
    lam, vecs = source_inline.inline(sym_eig_jacobi, {"A": a.cast(dtype), "n": a.n,
                                                      "dt": dtype})
    return lam, vecs


def _float_dtype(a, default):
    """The float type of a's entries (the default float type for literals)."""
    dtypes = [e.dtype for e in a.entries if isinstance(e, Expr) and e.dtype.is_float]
    return dtypes[0] if dtypes else default


def make_spd(A, dt=None):  # pylint: disable=invalid-name
    """qd.make_spd(A, dt=None): the positive semi-definite matrix nearest to
    symmetric A in the Frobenius norm, Q diag(max(lambda, 0)) Q^T with
    A = Q diag(lambda) Q^T from qd.sym_eig (2x2 up to 6x6)."""
    a = _cast(_check(A, "qd.make_spd()", _SYM_EIG_SIZES), dt)
    lam, q = sym_eig(a, dt)
    n = a.n
    lam = [ops.max(lam.entries[k], 0.0) for k in range(n)]
    qe = q.entries
    out = []
    for i in range(n):
        for j in range(n):
            terms = [_mul(_mul(qe[i * n + k], lam[k]), qe[j * n + k]) for k in range(n)]
            total = terms[0]
            for t in terms[1:]:
                total = _add(total, t)
            out.append(total)
    return Matrix._make(out, n, n, 2)


def eig(A, dt=None):  # pylint: disable=invalid-name
    """qd.eig(A, dt=None) for a real 2x2 A: (eigenvalues, eigenvectors) in
    complex form. eigenvalues is 2x2, row k = (real, imaginary) of eigenvalue
    k (the larger real one first, or the one with positive imaginary part);
    eigenvectors is 4x2, column k = (re x, im x, re y, im y), a unit
    eigenvector of eigenvalue k. By Cayley-Hamilton the columns of
    A - lambda_2 I are eigenvectors of lambda_1 and the other way round; of
    two real columns the longer is taken. A double eigenvalue of A = c I
    gets the unit vectors; of a defective A, its one eigenvector twice."""
    a = _cast(_check(A, "qd.eig()", (2,)), dt)
    e = a.entries
    tr = _add(e[0], e[3])
    half = _mul(tr, 0.5)
    gap = _sub(_mul(tr, tr), _mul(4.0, _sub(_mul(e[0], e[3]), _mul(e[1], e[2]))))
    root = _mul(ops.sqrt(ops.abs(gap)), 0.5)
    real, cplx = _lt(0.0, gap), _lt(gap, 0.0)
    zero = _mul(0.0, tr)
    lam1 = [ops.select(real, _add(half, root), half), ops.select(real, zero, root)]
    lam2 = [ops.select(real, _sub(half, root), half), ops.select(real, zero, _neg(root))]
    # The complex case takes column 0 of A - lambda I: its imaginary part is
    # +-root, never 0.
    centered = _sub(e[0], half)
    c1 = _unit([centered, root, e[2], zero])
    c2 = _unit([centered, _neg(root), e[2], zero])
    m_size = _add(_add(ops.abs(centered), ops.abs(e[1])),
                  _add(ops.abs(e[2]), ops.abs(_sub(e[3], half))))
    scalar = ops.binary("cmp_le", m_size, 0.0, operator.le)  # A - lambda I == 0
    defective = _longer_column(e, half)

    def pick(v_real, v_cplx, v_scalar):
        return [ops.select(real, r, ops.select(cplx, c, ops.select(scalar, u, d)))
                for r, c, u, d in zip(v_real, v_cplx, v_scalar, defective)]
    v1 = pick(_longer_column(e, lam2[0]), c1, [zero, zero, _add(zero, 1.0), zero])
    v2 = pick(_longer_column(e, lam1[0]), c2, [_add(zero, 1.0), zero, zero, zero])
    values = Matrix._make(lam1 + lam2, 2, 2, 2)
    vectors = Matrix._make([x for pair in zip(v1, v2) for x in pair], 4, 2, 2)
    return values, vectors


def _unit(v):
    inv = ops.rsqrt(_dot(v, v))
    return [_mul(x, inv) for x in v]


def _longer_column(e, lam):
    """The longer column of the 2x2 [[e0 - lam, e1], [e2, e3 - lam]], made a
    unit vector, in complex form (x, 0, y, 0)."""
    c0, c1 = [_sub(e[0], lam), e[2]], [e[1], _sub(e[3], lam)]
    first = _lt(_dot(c1, c1), _dot(c0, c0))
    x, y = _unit([ops.select(first, p, q) for p, q in zip(c0, c1)])
    zero = _mul(0.0, x)
    return [x, zero, y, zero]


for _fn in (svd, polar_decompose, sym_eig, solve, make_spd, eig):
    _fn._qd_intrinsic = True
