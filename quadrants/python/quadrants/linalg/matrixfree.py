"""Matrix-free conjugate gradient and BiCGSTAB on fields.

The solvers run their vector updates and dot products as kernels over the
fields' index space and keep the scalars on the host, as upstream's do.
Their work fields (one set per shape and dtype, per qd.init session) are
reused across calls."""
import math

from quadrants.lang import runtime, types
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from quadrants.lang.field import Field, field
from quadrants.lang.kernel import kernel
from quadrants.lang.transformer import grouped
from quadrants.lang.types import template


class LinearOperator:
    """A x as a kernel: matvec_kernel(x, Ax) writes A x into Ax (fields of
    one shape)."""

    def __init__(self, matvec_kernel):
        if not callable(matvec_kernel):
            raise QuadrantsTypeError(f"LinearOperator(matvec_kernel): needs a kernel, got "
                                     f"{matvec_kernel!r}")
        self._matvec = matvec_kernel

    def matvec(self, x, Ax):  # pylint: disable=invalid-name
        if x.shape != Ax.shape:
            raise QuadrantsRuntimeError(f"Dimension mismatch x.shape{x.shape} != "
                                        f"Ax.shape{Ax.shape}.")
        self._matvec(x, Ax)


@kernel
def _dot_into(p: template(), q: template(), out: template()):
    out[None] = 0.0
    for I in grouped(p):
        out[None] += p[I] * q[I]


@kernel
def _residual(r: template(), b: template(), ax: template()):
    for I in grouped(r):
        r[I] = b[I] - ax[I]


@kernel
def _axpy(y: template(), a: template(), x: template(), sign: template()):
    """y += sign * a[None] * x."""
    for I in grouped(y):
        y[I] += sign * a[None] * x[I]


@kernel
def _xpay(y: template(), x: template(), b: template()):
    """y = x + b[None] * y."""
    for I in grouped(y):
        y[I] = x[I] + b[None] * y[I]


@kernel
def _copy(src: template(), dst: template()):
    for I in grouped(src):
        dst[I] = src[I]


@kernel
def _fill(dst: template(), value: template()):
    for I in grouped(dst):
        dst[I] = value


@kernel
def _bicgstab_p(p: template(), r: template(), ap: template(), beta: template(),
                omega: template()):
    for I in grouped(p):
        p[I] = r[I] + beta[None] * (p[I] - omega[None] * ap[I])


@kernel
def _bicgstab_x(x: template(), p: template(), s: template(), alpha: template(),
                omega: template()):
    for I in grouped(x):
        x[I] += alpha[None] * p[I] + omega[None] * s[I]


@kernel
def _sub_scaled(out: template(), a: template(), c: template(), b: template()):
    """out = a - c[None] * b."""
    for I in grouped(out):
        out[I] = a[I] - c[None] * b[I]


_WORK = {}


def _work(shape, dtype, names):
    key = (runtime.state.generation, shape, dtype, names)
    if key not in _WORK:
        for stale in [k for k in _WORK if k[0] != key[0]]:  # fields of an ended session
            del _WORK[stale]
        vectors = {name: field(dtype, shape=shape) for name in names}
        scalars = {name: field(dtype, shape=()) for name in ("alpha", "beta", "omega",
                                                              "dot")}
        _WORK[key] = (vectors, scalars)
    return _WORK[key]


def _check(what, A, b, x):  # pylint: disable=invalid-name
    if not isinstance(A, LinearOperator):
        raise QuadrantsTypeError(f"{what}: A must be a qd.linalg.LinearOperator, got "
                                 f"{type(A).__name__}")
    for name, f in (("b", b), ("x", x)):
        if not isinstance(f, Field):
            raise QuadrantsTypeError(f"{what}: {name} must be a scalar field, got "
                                     f"{type(f).__name__}")
    if b.dtype != x.dtype:
        raise QuadrantsTypeError(f"Dtype mismatch b.dtype({b.dtype}) != x.dtype({x.dtype}).")
    if b.dtype not in (types.f32, types.f64):
        raise QuadrantsTypeError(f"Not supported dtype: {b.dtype}")
    if b.shape != x.shape:
        raise QuadrantsRuntimeError(f"Dimension mismatch b.shape{b.shape} != "
                                    f"x.shape{x.shape}.")
    if not 1 <= len(b.shape) <= 3:
        raise QuadrantsRuntimeError(f"{what} only supports 1D, 2D, 3D inputs; your inputs "
                                    f"is {len(b.shape)}-D.")


def _dot(p, q, out):
    _dot_into(p, q, out)
    return float(out[None])


def MatrixFreeCG(A, b, x, tol=1e-6, maxiter=5000, quiet=True):  # pylint: disable=invalid-name
    """Solves A x = b for symmetric positive definite A by conjugate
    gradient, starting from x and updating it in place. Stops when the
    residual norm |b - A x| is below tol or after maxiter iterations;
    returns whether it converged. quiet=False prints the residuals."""
    _check("MatrixFreeCG", A, b, x)
    vec, sc = _work(b.shape, b.dtype, ("p", "r", "Ap", "Ax"))
    p, r, ap, ax = vec["p"], vec["r"], vec["Ap"], vec["Ax"]
    A.matvec(x, ax)
    _residual(r, b, ax)
    _copy(r, p)
    old = _dot(r, r, sc["dot"])
    new = old
    if not quiet:
        print(f">>> Initial residual = {math.sqrt(old):e}")
    if math.sqrt(old) >= tol:
        for i in range(maxiter):
            A.matvec(p, ap)
            sc["alpha"][None] = old / _dot(p, ap, sc["dot"])
            _axpy(x, sc["alpha"], p, 1.0)
            _axpy(r, sc["alpha"], ap, -1.0)
            new = _dot(r, r, sc["dot"])
            if not quiet:
                print(f">>> Iter = {i + 1:4}, Residual = {math.sqrt(new):e}")
            if math.sqrt(new) < tol:
                break
            sc["beta"][None] = new / old
            _xpay(p, r, sc["beta"])
            old = new
    converged = math.sqrt(new) < tol
    if not quiet and not converged:
        print(f">>> Conjugate Gradient method failed to converge in {maxiter} iterations: "
              f"Residual = {math.sqrt(new):e}")
    return converged


def MatrixFreeBICGSTAB(A, b, x, tol=1e-6, maxiter=5000, quiet=True):  # pylint: disable=invalid-name
    """Solves A x = b for a general nonsingular A by BiCGSTAB, starting from x
    and updating it in place. Stops when the residual norm |b - A x| is
    below tol, after maxiter iterations, or on a breakdown (r . r0 = 0);
    returns whether it converged. quiet=False prints the residuals."""
    _check("MatrixFreeBICGSTAB", A, b, x)
    vec, sc = _work(b.shape, b.dtype, ("p", "r", "r0", "s", "t", "Ap", "Ax"))
    p, r, r0, s, t, ap = vec["p"], vec["r"], vec["r0"], vec["s"], vec["t"], vec["Ap"]
    A.matvec(x, vec["Ax"])
    _residual(r, b, vec["Ax"])
    _copy(r, r0)
    _fill(p, 0.0)
    _fill(ap, 0.0)
    rho_old, alpha, omega = 1.0, 1.0, 1.0
    res = _dot(r, r, sc["dot"])
    if not quiet:
        print(f">>> Initial residual = {math.sqrt(res):e}")
    for i in range(maxiter):
        if math.sqrt(res) < tol:
            break
        rho = _dot(r0, r, sc["dot"])
        if rho == 0.0:
            if not quiet:
                print(">>> BICGSTAB failed because r@r_tld = 0.")
            break
        sc["beta"][None] = (rho / rho_old) * (alpha / omega)
        sc["omega"][None] = omega
        _bicgstab_p(p, r, ap, sc["beta"], sc["omega"])
        A.matvec(p, ap)
        alpha = rho / _dot(r0, ap, sc["dot"])
        sc["alpha"][None] = alpha
        _sub_scaled(s, r, sc["alpha"], ap)
        A.matvec(s, t)
        tt = _dot(t, t, sc["dot"])
        omega = _dot(t, s, sc["dot"]) / tt if tt != 0.0 else 0.0
        sc["omega"][None] = omega
        _bicgstab_x(x, p, s, sc["alpha"], sc["omega"])
        _sub_scaled(r, s, sc["omega"], t)
        res = _dot(r, r, sc["dot"])
        rho_old = rho
        if not quiet:
            print(f">>> Iter = {i + 1:4}, Residual = {math.sqrt(res):e}")
        if omega == 0.0:
            break
    converged = math.sqrt(res) < tol
    if not quiet and not converged:
        print(f">>> BICGSTAB failed to converge in {maxiter} iterations: Residual = "
              f"{math.sqrt(res):e}")
    return converged
