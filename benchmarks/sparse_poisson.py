"""Factorize + solve of the 2-D Poisson matrix (5-point Laplacian on a
side x side grid, 10^6 unknowns by default), built by a kernel through
qd.linalg.SparseMatrixBuilder: qd.linalg.SparseSolver (--solvers: LLT and LDLT with AMD, LU with
COLAMD by default)
against scipy.sparse.linalg.spsolve (SuperLU), CHOLMOD through
scikit-sparse where it is installed, and, with --arch cuda,
cupyx.scipy.sparse.linalg.spsolve on the GPU, all in one process. On cuda
our LLT factorizes on the GPU (cuSOLVER); Eigen's host LLT is then timed
too, as "host LLT". Prints
seconds for each (best of --repeats), each solution's residual
|A x - b| / |b|, and reference / ours (> 1: ours faster).

    python benchmarks/sparse_poisson.py --arch cpu [--side 1000]
"""
import argparse
import importlib.util
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

import quadrants as qd
from quadrants._lib import core
from progress import phase


def build_poisson(side):
    n = side * side
    builder = qd.linalg.SparseMatrixBuilder(n, n, max_num_triplets=5 * n, dtype=qd.f64)

    @qd.kernel
    def fill(b: qd.types.sparse_matrix_builder()):
        for i in range(n):
            x, y = i % side, i // side
            b[i, i] += 4.0
            if x > 0:
                b[i, i - 1] -= 1.0
            if x < side - 1:
                b[i, i + 1] -= 1.0
            if y > 0:
                b[i, i - side] -= 1.0
            if y < side - 1:
                b[i, i + side] -= 1.0

    start = time.perf_counter()
    fill(builder)
    matrix = builder.build()
    return matrix, time.perf_counter() - start


def best_seconds(run, repeats):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def residual(csr, x, b):
    return float(np.linalg.norm(csr @ x - b) / np.linalg.norm(b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--solvers", default="LLT/AMD,LDLT/AMD,LU/COLAMD",
                        help="comma-separated TYPE/ORDERING of SparseSolver to time")
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch))
    n = args.side * args.side
    phase(f"building the {n}-unknown Poisson matrix")
    matrix, build_s = build_poisson(args.side)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n)
    print(f"Poisson {args.side}x{args.side}: n = {n}, nnz = {matrix._data.size}, "
          f"build (kernel + CSR) {build_s:.2f} s")

    csr = sp.csr_matrix((matrix._data, matrix._cols, matrix._indptr), shape=(n, n))
    ours = {}
    for solver_type, ordering in [s.split("/") for s in args.solvers.split(",")]:
        phase(f"ours: {solver_type}/{ordering}")

        def run(solver_type=solver_type, ordering=ordering):
            solver = qd.linalg.SparseSolver(qd.f64, solver_type, ordering)
            solver.compute(matrix)
            return solver.solve(b), solver._on_device

        seconds, (x, on_device) = best_seconds(run, args.repeats)
        ours[solver_type + "/" + ordering] = seconds
        where = "GPU" if on_device else "host"
        print(f"ours {solver_type + '/' + ordering:14s} {where:4s} {seconds:8.2f} s   residual "
              f"{residual(csr, x, b):.1e}")
        if on_device:
            phase(f"Eigen's host {solver_type}/{ordering}")

            def run_host(solver_type=solver_type, ordering=ordering):
                solver = core.SparseDirectSolverF64(solver_type, ordering)
                solver.analyze_pattern(n, n, matrix._indptr, matrix._cols)
                solver.factorize(n, n, matrix._indptr, matrix._cols, matrix._data)
                return solver.solve(b, False)

            host_s, x = best_seconds(run_host, args.repeats)
            print(f"host {solver_type + '/' + ordering:14s}      {host_s:8.2f} s   residual "
                  f"{residual(csr, x, b):.1e}   host / GPU {host_s / seconds:.2f}")

    best_ours = min(ours.values())
    phase("scipy.sparse.linalg.spsolve")
    seconds, x = best_seconds(lambda: spsolve(csr.tocsc(), b), args.repeats)
    print(f"scipy spsolve (SuperLU)  {seconds:8.2f} s   residual {residual(csr, x, b):.1e}   "
          f"scipy / ours {seconds / best_ours:.2f}")
    if importlib.util.find_spec("sksparse") is not None:
        phase("CHOLMOD (scikit-sparse)")
        from sksparse.cholmod import cholesky  # pylint: disable=import-outside-toplevel
        seconds, x = best_seconds(lambda: cholesky(csr.tocsc())(b), args.repeats)
        print(f"CHOLMOD (scikit-sparse)  {seconds:8.2f} s   residual "
              f"{residual(csr, x, b):.1e}   cholmod / ours {seconds / best_ours:.2f}")
    else:
        print("CHOLMOD: scikit-sparse is not installed here")
    if args.arch == "cuda":
        phase("cupyx.scipy.sparse.linalg.spsolve")
        import cupy  # pylint: disable=import-outside-toplevel
        import cupyx.scipy.sparse as cusp  # pylint: disable=import-outside-toplevel
        from cupyx.scipy.sparse.linalg import spsolve as cu_spsolve  # pylint: disable=import-outside-toplevel
        a_gpu = cusp.csr_matrix(csr)
        b_gpu = cupy.asarray(b)

        def run_cupy():
            x = cu_spsolve(a_gpu, b_gpu)
            cupy.cuda.Device().synchronize()
            return cupy.asnumpy(x)

        seconds, x = best_seconds(run_cupy, args.repeats)
        print(f"cupyx spsolve (GPU)      {seconds:8.2f} s   residual "
              f"{residual(csr, x, b):.1e}   cupyx / ours {seconds / best_ours:.2f}")


if __name__ == "__main__":
    main()
