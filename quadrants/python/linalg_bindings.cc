#include "quadrants/python/linalg_bindings.h"

#include <pybind11/numpy.h>

#include <memory>
#include <string>

#include "quadrants/common/errors.h"
#include "quadrants/linalg/cuda/cuda_sparse_cholesky.h"
#include "quadrants/linalg/sparse_solver.h"

namespace py = pybind11;

namespace quadrants::python {
namespace {

using linalg::CsrPattern;
using linalg::SparseDirectSolver;

using Index = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

template <typename Scalar>
using Values = py::array_t<Scalar, py::array::c_style | py::array::forcecast>;

CsrPattern Pattern(int64_t rows, int64_t cols, const Index& indptr,
                   const Index& indices) {
  CsrPattern pattern;
  pattern.rows = rows;
  pattern.cols = cols;
  pattern.indptr = {indptr.data(), static_cast<size_t>(indptr.size())};
  pattern.indices = {indices.data(), static_cast<size_t>(indices.size())};
  return pattern;
}

template <typename Scalar>
void BindSolver(py::module_& m, const char* name) {
  using Solver = SparseDirectSolver<Scalar>;
  py::class_<Solver, std::unique_ptr<Solver>>(m, name)
      .def(py::init([](const std::string& factorization,
                       const std::string& ordering) {
             auto f = linalg::ParseFactorization(factorization);
             ThrowIfError(f.status());
             auto o = linalg::ParseFillOrdering(ordering);
             ThrowIfError(o.status());
             return Solver::Create(*f, *o);
           }),
           py::arg("factorization"), py::arg("ordering"))
      .def(
          "analyze_pattern",
          [](Solver& solver, int64_t rows, int64_t cols, const Index& indptr,
             const Index& indices) {
            py::gil_scoped_release release;
            ThrowIfError(
                solver.AnalyzePattern(Pattern(rows, cols, indptr, indices)));
          },
          "Orders and symbolically factorizes the CSR pattern.")
      .def(
          "factorize",
          [](Solver& solver, int64_t rows, int64_t cols, const Index& indptr,
             const Index& indices, const Values<Scalar>& values) {
            absl::Span<const Scalar> v(values.data(),
                                       static_cast<size_t>(values.size()));
            py::gil_scoped_release release;
            ThrowIfError(
                solver.Factorize(Pattern(rows, cols, indptr, indices), v));
          },
          "Factorizes the CSR matrix numerically.")
      .def(
          "solve",
          [](Solver& solver, const Values<Scalar>& b, bool transposed) {
            Values<Scalar> x(b.size());
            absl::Span<const Scalar> in(b.data(),
                                        static_cast<size_t>(b.size()));
            absl::Span<Scalar> out(x.mutable_data(),
                                   static_cast<size_t>(x.size()));
            {
              py::gil_scoped_release release;
              ThrowIfError(solver.Solve(in, out, transposed));
            }
            return x;
          },
          py::arg("b"), py::arg("transposed") = false,
          "x = A^-1 b (A^-T b when transposed), as a new array.")
      .def("ok", &Solver::ok,
           "Whether the last analysis and factorization succeeded.");
}

template <typename Scalar>
void BindCudaCholesky(py::module_& m, const char* name) {
  using Solver = linalg::cuda::CudaSparseCholesky<Scalar>;
  py::class_<Solver, SparseDirectSolver<Scalar>, std::unique_ptr<Solver>>(
      m, name)
      .def(py::init([](const std::string& ordering, int device_id) {
             auto o = linalg::ParseFillOrdering(ordering);
             ThrowIfError(o.status());
             auto solver = Solver::Create(*o, device_id);
             ThrowIfError(solver.status());
             return *std::move(solver);
           }),
           py::arg("ordering"), py::arg("device_id"))
      .def(
          "solve_on_device",
          [](Solver& solver, uint64_t b, uint64_t x) {
            py::gil_scoped_release release;
            ThrowIfError(solver.SolveOnDevice(b, x));
          },
          py::arg("b"), py::arg("x"),
          "x = A^-1 b between device addresses of n values each.");
}

}  // namespace

void BindLinalg(py::module_& m) {
  BindSolver<float>(m, "SparseDirectSolverF32");
  BindSolver<double>(m, "SparseDirectSolverF64");
  BindCudaCholesky<float>(m, "CudaSparseCholeskyF32");
  BindCudaCholesky<double>(m, "CudaSparseCholeskyF64");
}

}  // namespace quadrants::python
