"""qd.linalg.SparseSolver (Eigen's LLT, LDLT and LU with AMD and COLAMD
orderings) and SparseCG against numpy.linalg.solve; their errors; and
gradients through a solve under qd.ad.Tape against f64 central
differences."""
import numpy as np
import pytest

import quadrants as qd
from quadrants._lib import core
from quadrants.lang.exception import (QuadrantsGradientError, QuadrantsRuntimeError,
                                      QuadrantsTypeError)
from tests import test_utils

_SOLVER_TYPES = ["LLT", "LDLT", "LU"]
_ORDERINGS = ["AMD", "COLAMD"]
_NP = {qd.f32: np.float32, qd.f64: np.float64}
# Relative error of a solve of a well-conditioned (cond < 1e3) system: a few
# hundred ulps of the dtype.
_RTOL = {qd.f32: 2e-4, qd.f64: 1e-10}


def _system(rng, n, symmetric):
    """A well-conditioned sparse matrix (about 5 entries a row) as dense."""
    a = np.zeros((n, n))
    for i in range(n):
        for j in rng.choice(n, 4, replace=False):
            a[i, j] = rng.standard_normal()
    if symmetric:
        a = a @ a.T + n * np.eye(n)  # positive definite
    else:
        a += np.diag(np.abs(a).sum(axis=1) + 1.0)  # diagonally dominant
    return a


def _matrix(dense, dtype):
    """The dense matrix as a SparseMatrix filled by a kernel, and b."""
    n = dense.shape[0]
    rows, cols = np.nonzero(dense)
    r = qd.ndarray(qd.i32, (rows.size,))
    c = qd.ndarray(qd.i32, (rows.size,))
    v = qd.ndarray(dtype, (rows.size,))
    r.from_numpy(rows.astype(np.int32))
    c.from_numpy(cols.astype(np.int32))
    v.from_numpy(dense[rows, cols].astype(_NP[dtype]))
    builder = qd.linalg.SparseMatrixBuilder(n, n, max_num_triplets=rows.size, dtype=dtype)

    @qd.kernel
    def fill(bld: qd.types.sparse_matrix_builder(), r: qd.types.ndarray(),
             c: qd.types.ndarray(), v: qd.types.ndarray()):
        for k in range(r.shape[0]):
            bld[r[k], c[k]] += v[k]

    fill(builder, r, c, v)
    return builder.build()


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@pytest.mark.parametrize("solver_type", _SOLVER_TYPES)
@pytest.mark.parametrize("ordering", _ORDERINGS)
@test_utils.test()
def test_every_solver_and_ordering_matches_numpy(dtype, solver_type, ordering):
    rng = np.random.default_rng(hash((solver_type, ordering)) % 2**32)
    for symmetric in ([True] if solver_type != "LU" else [True, False]):
        dense = _system(rng, 60, symmetric)
        a = _matrix(dense, dtype)
        b_np = rng.standard_normal(60)
        solver = qd.linalg.SparseSolver(dtype=dtype, solver_type=solver_type,
                                        ordering=ordering)
        solver.analyze_pattern(a)
        solver.factorize(a)
        assert solver.info()
        expected = np.linalg.solve(dense.astype(_NP[dtype]).astype(np.float64), b_np)
        scale = np.abs(expected).max()
        # A numpy right-hand side gives numpy, an ndarray gives an ndarray.
        x = solver.solve(b_np.astype(_NP[dtype]))
        assert isinstance(x, np.ndarray)
        np.testing.assert_allclose(x, expected, atol=_RTOL[dtype] * scale)
        b = qd.ndarray(dtype, (60,))
        b.from_numpy(b_np.astype(_NP[dtype]))
        x = solver.solve(b)
        assert isinstance(x, qd.Ndarray)
        np.testing.assert_allclose(x.to_numpy(), expected, atol=_RTOL[dtype] * scale)
        # A second matrix with the pattern reuses the analysis.
        solver.factorize(_matrix(2.0 * dense, dtype))
        np.testing.assert_allclose(solver.solve(b_np), expected / 2,
                                   atol=_RTOL[dtype] * scale)


@pytest.mark.parametrize("solver_type", _SOLVER_TYPES)
@test_utils.test()
def test_a_singular_matrix_is_a_clear_error(solver_type):
    dense = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    a = _matrix(dense, qd.f64)
    solver = qd.linalg.SparseSolver(qd.f64, solver_type)
    solver.analyze_pattern(a)
    with pytest.raises(QuadrantsRuntimeError, match="singular"):
        solver.factorize(a)
    assert not solver.info()
    with pytest.raises(QuadrantsRuntimeError, match="factorize"):
        solver.solve(np.ones(3))


@test_utils.test()
def test_solver_misuse_is_reported():
    a = _matrix(np.eye(4) * 2.0, qd.f64)
    with pytest.raises(QuadrantsRuntimeError, match="QR"):
        qd.linalg.SparseSolver(qd.f64, "QR")
    with pytest.raises(QuadrantsRuntimeError, match="METIS"):
        qd.linalg.SparseSolver(qd.f64, "LU", "METIS")
    with pytest.raises(QuadrantsRuntimeError, match="compute"):
        qd.linalg.SparseSolver(qd.f64).solve(np.ones(4))
    with pytest.raises(QuadrantsRuntimeError, match="dtype"):
        qd.linalg.SparseSolver(qd.f32).analyze_pattern(a)
    solver = qd.linalg.SparseSolver(qd.f64)
    with pytest.raises(QuadrantsRuntimeError, match="analyze_pattern"):
        solver.factorize(a)
    solver.compute(a)
    with pytest.raises(QuadrantsRuntimeError, match="4 values"):
        solver.solve(np.ones(5))
    with pytest.raises(QuadrantsRuntimeError, match="pattern differs"):
        solver.factorize(_matrix(np.ones((4, 4)), qd.f64))
    with pytest.raises(QuadrantsTypeError, match="square"):
        qd.linalg.SparseSolver(qd.f64).compute(_rectangular())
    with pytest.raises(QuadrantsRuntimeError, match="not supported"):
        solver.solve([1.0, 2.0, 3.0, 4.0])


def _rectangular():
    builder = qd.linalg.SparseMatrixBuilder(3, 4, max_num_triplets=4, dtype=qd.f64)

    @qd.kernel
    def fill(bld: qd.types.sparse_matrix_builder()):
        for i in range(3):
            bld[i, i] += 1.0

    fill(builder)
    return builder.build()


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@test_utils.test()
def test_sparse_cg_matches_numpy(dtype):
    rng = np.random.default_rng(5)
    dense = _system(rng, 40, True)
    a = _matrix(dense, dtype)
    b = qd.ndarray(dtype, (40,))
    b.from_numpy(rng.standard_normal(40).astype(_NP[dtype]))
    expected = np.linalg.solve(dense, b.to_numpy().astype(np.float64))
    atol = 1e-4 if dtype == qd.f32 else 1e-9
    x, converged = qd.linalg.SparseCG(a, b, max_iter=200, atol=atol).solve()
    assert converged
    x = x.to_numpy() if isinstance(x, qd.Ndarray) else x
    np.testing.assert_allclose(x, expected, atol=10 * atol * np.abs(expected).max())
    # Too few iterations: reported, not hidden.
    _, converged = qd.linalg.SparseCG(a, b, max_iter=2, atol=1e-12).solve()
    assert not converged


# ---- gradients through the solve --------------------------------------------

_NX = 6
_N = _NX * _NX
_DT = 0.1


def _heat_problem(solver_type):
    """One implicit step of 2-D heat diffusion with a per-cell conductivity
    k and source s: (I + dt L(k)) u = u0 + dt s^2, where L(k) is the grid
    Laplacian with edge weights (k_a + k_b) / 2 (plus, for LU, an upwind
    drift term c k_a that makes the matrix nonsymmetric), and
    loss = sum(w * u^2). Returns loss(k, s) and its taped gradients."""
    k = qd.field(qd.f64, _N, needs_grad=True)
    s = qd.field(qd.f64, _N, needs_grad=True)
    u0 = qd.field(qd.f64, _N)
    w = qd.field(qd.f64, _N)
    loss = qd.field(qd.f64, (), needs_grad=True)
    drift = 0.3 if solver_type == "LU" else 0.0
    rng = np.random.default_rng(11)
    u0.from_numpy(rng.standard_normal(_N))
    w.from_numpy(rng.uniform(0.5, 1.5, _N))

    @qd.kernel
    def fill_matrix(bld: qd.types.sparse_matrix_builder(), k: qd.template()):
        for i in range(_N):
            bld[i, i] += 1.0
            x, y = i % _NX, i // _NX
            for d in qd.static(range(4)):
                nx = x + (1 if d == 0 else -1 if d == 1 else 0)
                ny = y + (1 if d == 2 else -1 if d == 3 else 0)
                if 0 <= nx < _NX and 0 <= ny < _NX:
                    j = ny * _NX + nx
                    weight = _DT * 0.5 * (k[i] + k[j])
                    bld[i, i] += weight
                    bld[i, j] -= weight
                    if d == 1:
                        bld[i, j] -= _DT * drift * k[i]
                        bld[i, i] += _DT * drift * k[i]

    @qd.kernel
    def fill_rhs(b: qd.types.ndarray(), s: qd.template(), u0: qd.template()):
        for i in range(_N):
            b[i] = u0[i] + _DT * s[i] * s[i]

    @qd.kernel
    def reduce(u: qd.types.ndarray(), w: qd.template(), loss: qd.template()):
        for i in range(_N):
            loss[None] += w[i] * u[i] * u[i]

    builder = qd.linalg.SparseMatrixBuilder(_N, _N, max_num_triplets=10 * _N, dtype=qd.f64)
    b = qd.ndarray(qd.f64, (_N,), needs_grad=True)

    def forward():
        builder.clear()
        fill_matrix(builder, k)
        fill_rhs(b, s, u0)
        a = builder.build()
        solver = qd.linalg.SparseSolver(qd.f64, solver_type, "AMD")
        solver.compute(a)
        u = solver.solve(b)
        reduce(u, w, loss)

    def value(kv, sv):
        k.from_numpy(kv)
        s.from_numpy(sv)
        loss[None] = 0.0
        forward()
        return loss[None]

    def gradients(kv, sv):
        k.from_numpy(kv)
        s.from_numpy(sv)
        with qd.ad.Tape(loss=loss):
            forward()
        return k.grad.to_numpy(), s.grad.to_numpy()

    return value, gradients


@pytest.mark.parametrize("solver_type", _SOLVER_TYPES)
@test_utils.test(arch=[qd.cpu, qd.cuda])
def test_gradient_through_a_solve_matches_central_differences(solver_type):
    value, gradients = _heat_problem(solver_type)
    rng = np.random.default_rng(3)
    kv = rng.uniform(0.5, 2.0, _N)
    sv = rng.uniform(-1.0, 1.0, _N)
    grad_k, grad_s = gradients(kv, sv)
    # f64 central differences with h = 1e-6: truncation ~h^2 and rounding
    # ~1e-16/h leave about 1e-9 relative error.
    h = 1e-6
    for i in rng.choice(_N, 8, replace=False):
        e = np.zeros(_N)
        e[i] = h
        fd_k = (value(kv + e, sv) - value(kv - e, sv)) / (2 * h)
        fd_s = (value(kv, sv + e) - value(kv, sv - e)) / (2 * h)
        assert grad_k[i] == pytest.approx(fd_k, rel=1e-6, abs=1e-9), i
        assert grad_s[i] == pytest.approx(fd_s, rel=1e-6, abs=1e-9), i
    assert np.abs(grad_k).max() > 1e-3  # the matrix path carries gradient


def _taped_two_by_two_solve(matrix_of=lambda a: a, after_solve=lambda a: None):
    """Fills A = diag(2 + k) under a Tape, solves matrix_of(A) x = 1, sums x
    into the loss and then calls after_solve(A)."""
    builder = qd.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=4, dtype=qd.f64)
    loss = qd.field(qd.f64, (), needs_grad=True)
    k = qd.field(qd.f64, 2, needs_grad=True)

    @qd.kernel
    def fill(bld: qd.types.sparse_matrix_builder(), k: qd.template()):
        for i in range(2):
            bld[i, i] += 2.0 + k[i]

    @qd.kernel
    def reduce(u: qd.types.ndarray(), loss: qd.template()):
        for i in range(2):
            loss[None] += u[i]

    b = qd.ndarray(qd.f64, (2,), needs_grad=True)
    b.fill(1.0)
    with qd.ad.Tape(loss=loss):
        fill(builder, k)
        a = builder.build()
        solver = qd.linalg.SparseSolver(qd.f64, "LU")
        solver.compute(matrix_of(a))
        reduce(solver.solve(b), loss)
        after_solve(a)


@test_utils.test(arch=[qd.cpu])
def test_a_taped_matrix_changed_before_the_backward_pass_is_refused():
    def write(a):
        a[0, 0] = 5.0

    with pytest.raises(QuadrantsGradientError, match="modified"):
        _taped_two_by_two_solve(after_solve=write)


@test_utils.test(arch=[qd.cpu])
def test_a_taped_solve_with_a_derived_matrix_says_its_gradient_is_lost():
    with pytest.raises(QuadrantsGradientError, match="arithmetic"):
        _taped_two_by_two_solve(matrix_of=lambda a: a * 2.0)


def _lower_spd_with_a_foreign_upper_triangle(rng, n):
    """A dense matrix whose lower triangle is that of a symmetric positive
    definite S and whose strict upper triangle is arbitrary, and S: an LLT
    solver reads the lower triangle only, so it solves with S."""
    s = _system(rng, n, symmetric=True)
    noise = np.triu(rng.standard_normal((n, n)), 1) * (s != 0)
    return np.tril(s) + noise, s


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@pytest.mark.parametrize("ordering", _ORDERINGS)
@test_utils.test(arch=[qd.cuda])
def test_llt_factorizes_and_solves_on_the_gpu_in_a_cuda_session(dtype, ordering):
    rng = np.random.default_rng(11)
    dense, s = _lower_spd_with_a_foreign_upper_triangle(rng, 80)
    a = _matrix(dense, dtype)
    solver = qd.linalg.SparseSolver(dtype, "LLT", ordering)
    assert isinstance(solver.solver, core.CudaSparseCholeskyF32 if dtype == qd.f32
                      else core.CudaSparseCholeskyF64)
    solver.compute(a)
    assert solver.info()
    b_np = rng.standard_normal(80)
    expected = np.linalg.solve(s.astype(_NP[dtype]).astype(np.float64), b_np)
    tol = _RTOL[dtype] * np.abs(expected).max()
    b = qd.ndarray(dtype, (80,))
    b.from_numpy(b_np.astype(_NP[dtype]))
    np.testing.assert_allclose(solver.solve(b).to_numpy(), expected, atol=tol)
    np.testing.assert_allclose(solver.solve(b_np.astype(_NP[dtype])), expected, atol=tol)
    # The host's Eigen LLT on the same matrix agrees with the GPU's.
    host = (core.SparseDirectSolverF32 if dtype == qd.f32 else core.SparseDirectSolverF64)(
        "LLT", ordering)
    host.analyze_pattern(a.n, a.m, a._indptr, a._cols)
    host.factorize(a.n, a.m, a._indptr, a._cols, a._data)
    np.testing.assert_allclose(host.solve(b_np.astype(_NP[dtype]), False),
                               solver.solve(b).to_numpy(), atol=tol)


@test_utils.test(arch=[qd.cuda])
def test_an_indefinite_matrix_is_refused_by_the_gpu_llt():
    a = _matrix(np.diag([2.0, -1.0, 3.0]), qd.f64)
    solver = qd.linalg.SparseSolver(qd.f64, "LLT")
    solver.analyze_pattern(a)
    with pytest.raises(QuadrantsRuntimeError, match="not symmetric positive definite"):
        solver.factorize(a)
    assert not solver.info()
