// The cuSOLVER sparse Cholesky against the host (Eigen) LLT on the same
// matrices, its refusals, and the error naming a missing library. Without
// a CUDA device or cuSOLVER the device cases skip and print why.
#include "quadrants/linalg/cuda/cuda_sparse_cholesky.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/linalg/cuda/cusolver_library.h"
#include "quadrants/linalg/sparse_solver.h"
#include "quadrants/runtime/cuda/cuda_driver.h"

namespace quadrants::linalg::cuda {
namespace {

// The 5-point Laplacian of a side x side grid plus `shift` on the
// diagonal, with arbitrary values above the diagonal, which a Cholesky
// solver must not read.
struct Grid {
  int64_t n = 0;
  std::vector<int64_t> indptr{0}, indices;
  std::vector<double> values;
  CsrPattern pattern() const { return {n, n, indptr, indices}; }
};

Grid Laplacian(int side, double shift) {
  Grid g;
  g.n = int64_t{side} * side;
  for (int i = 0; i < side; ++i) {
    for (int j = 0; j < side; ++j) {
      const int64_t r = int64_t{i} * side + j;
      for (int64_t c : {r - side, r - 1, r, r + 1, r + side}) {
        const bool neighbour =
            (c == r - side && i > 0) || (c == r + side && i + 1 < side) ||
            (c == r - 1 && j > 0) || (c == r + 1 && j + 1 < side);
        if (c != r && !neighbour)
          continue;
        g.indices.push_back(c);
        g.values.push_back(c == r ? 4.0 + shift : c < r ? -1.0 : 123.0);
      }
      g.indptr.push_back(static_cast<int64_t>(g.indices.size()));
    }
  }
  return g;
}

template <typename Scalar>
std::vector<Scalar> Cast(const std::vector<double>& v) {
  return std::vector<Scalar>(v.begin(), v.end());
}

template <typename Scalar>
std::unique_ptr<CudaSparseCholesky<Scalar>> DeviceSolverOrSkip(
    FillOrdering ordering, std::string* why) {
  auto solver = CudaSparseCholesky<Scalar>::Create(ordering, 0);
  if (!solver.ok()) {
    *why = std::string(solver.status().message());
    return nullptr;
  }
  return *std::move(solver);
}

TEST(CusolverLibraryTest, AMissingLibraryIsNamedWithTheFix) {
  auto library = CusolverLibrary::Open({"libqd_absent_cusparse.so.99"},
                                       {"libqd_absent_cusolver.so.99"});
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(GetErrorKind(library.status()), ErrorKind::kUnavailable);
  const std::string message(library.status().message());
  EXPECT_NE(message.find("cuSPARSE (libcusparse)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("libqd_absent_cusparse.so.99"), std::string::npos)
      << message;
  EXPECT_NE(message.find("SparseSolver(\"LLT\")"), std::string::npos)
      << message;
  EXPECT_NE(message.find("LD_LIBRARY_PATH"), std::string::npos) << message;
}

TEST(SymmetricFillOrderingTest, IsAPermutationThatReducesFill) {
  const Grid g = Laplacian(12, 0.0);
  for (FillOrdering ordering : {FillOrdering::kAMD, FillOrdering::kCOLAMD}) {
    std::vector<int> order = SymmetricFillOrdering(g.pattern(), ordering);
    ASSERT_EQ(order.size(), static_cast<size_t>(g.n));
    std::vector<bool> seen(g.n, false);
    for (int old : order) {
      ASSERT_TRUE(old >= 0 && old < g.n && !seen[old]) << old;
      seen[old] = true;
    }
  }
}

template <typename Scalar>
void ExpectMatchesHost(FillOrdering ordering, double tolerance) {
  std::string why;
  auto device = DeviceSolverOrSkip<Scalar>(ordering, &why);
  if (device == nullptr)
    GTEST_SKIP() << why;
  auto host = SparseDirectSolver<Scalar>::Create(Factorization::kLLT, ordering);
  const Grid g = Laplacian(40, 0.01);
  const std::vector<Scalar> values = Cast<Scalar>(g.values);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> b64(g.n);
  for (double& v : b64)
    v = u(rng);
  const std::vector<Scalar> b = Cast<Scalar>(b64);
  for (SparseDirectSolver<Scalar>* solver :
       {static_cast<SparseDirectSolver<Scalar>*>(device.get()), host.get()}) {
    ASSERT_TRUE(solver->AnalyzePattern(g.pattern()).ok());
    ASSERT_TRUE(solver->Factorize(g.pattern(), values).ok());
    EXPECT_TRUE(solver->ok());
  }
  std::vector<Scalar> on_device(g.n), on_host(g.n);
  ASSERT_TRUE(device->Solve(b, absl::MakeSpan(on_device), false).ok());
  ASSERT_TRUE(host->Solve(b, absl::MakeSpan(on_host), false).ok());
  double scale = 0.0;
  for (Scalar v : on_host)
    scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (int64_t i = 0; i < g.n; ++i)
    ASSERT_NEAR(on_device[i], on_host[i], tolerance * scale) << i;
}

// The shifted 40 x 40 grid's condition number is about 400: the two
// solutions differ by a few hundred ulps of the dtype at most.
TEST(CudaSparseCholeskyTest, MatchesTheHostLltInF64WithAmd) {
  ExpectMatchesHost<double>(FillOrdering::kAMD, 1e-10);
}
TEST(CudaSparseCholeskyTest, MatchesTheHostLltInF64WithColamd) {
  ExpectMatchesHost<double>(FillOrdering::kCOLAMD, 1e-10);
}
TEST(CudaSparseCholeskyTest, MatchesTheHostLltInF32WithAmd) {
  ExpectMatchesHost<float>(FillOrdering::kAMD, 2e-3);
}

TEST(CudaSparseCholeskyTest, SolvesBetweenDeviceAddresses) {
  std::string why;
  auto solver = DeviceSolverOrSkip<double>(FillOrdering::kAMD, &why);
  if (solver == nullptr)
    GTEST_SKIP() << why;
  const Grid g = Laplacian(8, 1.0);
  ASSERT_TRUE(solver->AnalyzePattern(g.pattern()).ok());
  ASSERT_TRUE(solver->Factorize(g.pattern(), g.values).ok());
  auto driver = quadrants::cuda::CudaDriver::Shared(0);
  ASSERT_TRUE(driver.ok());
  ASSERT_TRUE((*driver)->MakeCurrent().ok());
  CUdeviceptr b = 0, x = 0;
  const size_t bytes = g.n * sizeof(double);
  ASSERT_EQ((*driver)->cuMemAlloc(&b, bytes), CUDA_SUCCESS);
  ASSERT_EQ((*driver)->cuMemAlloc(&x, bytes), CUDA_SUCCESS);
  // A x = A 1 for x = 1: b holds the row sums of the symmetric matrix.
  std::vector<double> row_sums(g.n, 0.0), ones(g.n, 1.0), out(g.n);
  for (int64_t r = 0; r < g.n; ++r) {
    for (int64_t k = g.indptr[r]; k < g.indptr[r + 1]; ++k)
      row_sums[r] += g.indices[k] > r ? -1.0 : g.values[k];
  }
  ASSERT_EQ((*driver)->cuMemcpyHtoD(b, row_sums.data(), bytes), CUDA_SUCCESS);
  ASSERT_TRUE(solver->SolveOnDevice(b, x).ok());
  ASSERT_EQ((*driver)->cuMemcpyDtoH(out.data(), x, bytes), CUDA_SUCCESS);
  for (int64_t i = 0; i < g.n; ++i)
    EXPECT_NEAR(out[i], 1.0, 1e-12) << i;
  (*driver)->cuMemFree(b);
  (*driver)->cuMemFree(x);
}

TEST(CudaSparseCholeskyTest, RefusesIndefiniteAndMismatchedMatrices) {
  std::string why;
  auto solver = DeviceSolverOrSkip<double>(FillOrdering::kAMD, &why);
  if (solver == nullptr)
    GTEST_SKIP() << why;
  std::vector<double> x(4);
  EXPECT_NE(solver->Solve(std::vector<double>(4, 1.0), absl::MakeSpan(x), false)
                .message()
                .find("factorize"),
            absl::string_view::npos);
  // The 2 x 2 grid's Laplacian has eigenvalues 2, 4, 4 and 6; shifted by
  // -4.5 it is indefinite.
  const Grid g = Laplacian(2, -4.5);
  ASSERT_TRUE(solver->AnalyzePattern(g.pattern()).ok());
  absl::Status indefinite = solver->Factorize(g.pattern(), g.values);
  EXPECT_EQ(GetErrorKind(indefinite), ErrorKind::kRuntime);
  EXPECT_NE(indefinite.message().find("not symmetric positive definite"),
            absl::string_view::npos)
      << indefinite;
  EXPECT_FALSE(solver->ok());
  const Grid other = Laplacian(3, 0.0);
  EXPECT_NE(solver->Factorize(other.pattern(), other.values)
                .message()
                .find("pattern differs"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace quadrants::linalg::cuda
