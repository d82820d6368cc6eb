"""qd.linalg.SparseMatrixBuilder and SparseMatrix: kernels append triplets
with builder[i, j] += v (atomically, on every backend), build() sums them
into a host CSR matrix; its arithmetic is checked against numpy's dense
results."""
import numpy as np
import pytest

import quadrants as qd
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from tests import test_utils


def _random_builder(n, m, entries, dtype=qd.f64):
    """A builder filled by a kernel with `entries` ((i, j, v) rows, repeats
    allowed), and the dense matrix numpy sums them into."""
    entries = np.asarray(entries, np.float64)
    rows = qd.ndarray(qd.i32, (len(entries),))
    cols = qd.ndarray(qd.i32, (len(entries),))
    vals = qd.ndarray(dtype, (len(entries),))
    rows.from_numpy(entries[:, 0].astype(np.int32))
    cols.from_numpy(entries[:, 1].astype(np.int32))
    vals.from_numpy(entries[:, 2].astype(np.float64 if dtype == qd.f64 else np.float32))
    builder = qd.linalg.SparseMatrixBuilder(n, m, max_num_triplets=2 * len(entries),
                                            dtype=dtype)

    @qd.kernel
    def fill(b: qd.types.sparse_matrix_builder(), r: qd.types.ndarray(qd.i32, 1),
             c: qd.types.ndarray(qd.i32, 1), v: qd.types.ndarray(dtype, 1)):
        for k in range(r.shape[0]):
            b[r[k], c[k]] += v[k]
            b[r[k], c[k]] -= 0.5 * v[k]   # -= appends the negated value

    fill(builder, rows, cols, vals)
    dense = np.zeros((n, m))
    for i, j, v in entries:
        dense[int(i), int(j)] += 0.5 * v
    return builder, dense


def _entries(rng, n, m, count):
    return np.stack([rng.integers(0, n, count), rng.integers(0, m, count),
                     rng.standard_normal(count)], axis=1)


@test_utils.test()
def test_kernels_fill_builders_and_duplicates_sum():
    rng = np.random.default_rng(0)
    builder, dense = _random_builder(7, 5, _entries(rng, 7, 5, 40))
    assert builder.num_triplets() == 80
    matrix = builder.build()
    assert matrix.shape == (7, 5)
    np.testing.assert_allclose(matrix.to_numpy(), dense, rtol=1e-12, atol=1e-12)
    assert matrix[3, 4] == pytest.approx(dense[3, 4], abs=1e-12)


@test_utils.test()
def test_arithmetic_matches_numpy():
    rng = np.random.default_rng(1)
    a_builder, a = _random_builder(6, 6, _entries(rng, 6, 6, 20))
    b_builder, b = _random_builder(6, 6, _entries(rng, 6, 6, 20))
    c_builder, c = _random_builder(6, 4, _entries(rng, 6, 4, 12))
    A, B, C = a_builder.build(), b_builder.build(), c_builder.build()
    for got, expected in (((A + B), a + b), ((A - B), a - b), ((2.5 * A), 2.5 * a),
                          ((A * 3), a * 3), ((A * B), a * b), ((A @ B), a @ b),
                          ((A @ C), a @ c), (A.transpose(), a.T)):
        np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12, atol=1e-12)
    x = rng.standard_normal(6)
    np.testing.assert_allclose(A @ x, a @ x, rtol=1e-12)
    v = qd.ndarray(qd.f64, (6,))
    v.from_numpy(x)
    result = A @ v
    assert isinstance(result, qd.Ndarray)
    np.testing.assert_allclose(result.to_numpy(), a @ x, rtol=1e-12)
    A[5, 0] = 9.0     # a new entry
    A[0, 0] = -1.0
    assert A[5, 0] == 9.0 and A[0, 0] == -1.0


@test_utils.test(debug=True)   # an index past the storage would raise
def test_overflowing_the_builder_is_an_error_and_writes_nothing_past_it():
    builder = qd.linalg.SparseMatrixBuilder(4, 4, max_num_triplets=5)

    @qd.kernel
    def fill(b: qd.types.sparse_matrix_builder()):
        for i in range(12):
            b[i % 4, (i * 3) % 4] += 1.0

    fill(builder)
    assert builder.num_triplets() == 12
    with pytest.raises(QuadrantsRuntimeError, match="added 12 triplets but max_num_triplets is 5"):
        builder.build()


def test_misuse_is_reported():
    qd.init(arch=qd.cpu)
    try:
        with pytest.raises(QuadrantsTypeError, match="storage_format"):
            qd.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=4, storage_format="diagonal")
        with pytest.raises(QuadrantsTypeError, match="f32 or f64"):
            qd.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=4, dtype=qd.i32)
        with pytest.raises(QuadrantsTypeError, match="max_num_triplets > 0"):
            qd.linalg.SparseMatrixBuilder(2, 2)
        a = qd.linalg.SparseMatrix(sm=np.eye(2))
        b = qd.linalg.SparseMatrix(sm=np.eye(3))
        with pytest.raises(QuadrantsTypeError, match="shapes"):
            _ = a + b
        with pytest.raises(QuadrantsTypeError, match="do not chain"):
            _ = a @ b
        with pytest.raises(IndexError, match="outside"):
            _ = a[2, 0]
    finally:
        qd.reset()
