// The host sparse direct solvers against dense reference solutions, for
// every factorization and ordering, plus their refusals.
#include "quadrants/linalg/sparse_solver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quadrants/common/errors.h"

namespace quadrants::linalg {
namespace {

// A dense matrix in row-major order with its CSR form.
struct Csr {
  int64_t n = 0;
  std::vector<double> dense;
  std::vector<int64_t> indptr, indices;
  std::vector<double> values;

  CsrPattern pattern() const { return {n, n, indptr, indices}; }
};

Csr FromDense(int64_t n, std::vector<double> dense) {
  Csr csr;
  csr.n = n;
  csr.dense = std::move(dense);
  csr.indptr.push_back(0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      if (csr.dense[r * n + c] != 0.0) {
        csr.indices.push_back(c);
        csr.values.push_back(csr.dense[r * n + c]);
      }
    }
    csr.indptr.push_back(static_cast<int64_t>(csr.indices.size()));
  }
  return csr;
}

// A banded matrix: symmetric positive definite (diagonally dominant) or,
// with `nonsymmetric`, a general one with the same pattern.
Csr Banded(int64_t n, bool nonsymmetric, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> dense(n * n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = r + 1; c < std::min(n, r + 4); ++c) {
      dense[r * n + c] = u(rng);
      dense[c * n + r] = nonsymmetric ? u(rng) : dense[r * n + c];
    }
  }
  for (int64_t r = 0; r < n; ++r)
    dense[r * n + r] = 8.0 + u(rng);
  return FromDense(n, std::move(dense));
}

std::vector<double> MatVec(const Csr& a, const std::vector<double>& x,
                           bool transposed) {
  std::vector<double> y(a.n, 0.0);
  for (int64_t r = 0; r < a.n; ++r) {
    for (int64_t c = 0; c < a.n; ++c) {
      const double v = transposed ? a.dense[c * a.n + r] : a.dense[r * a.n + c];
      y[r] += v * x[c];
    }
  }
  return y;
}

TEST(SparseDirectSolverTest, EveryFactorizationAndOrderingSolves) {
  const int64_t n = 40;
  for (Factorization f :
       {Factorization::kLLT, Factorization::kLDLT, Factorization::kLU}) {
    for (FillOrdering o : {FillOrdering::kAMD, FillOrdering::kCOLAMD}) {
      const Csr a = Banded(n, f == Factorization::kLU, 7);
      auto solver = SparseDirectSolver<double>::Create(f, o);
      ASSERT_TRUE(solver->AnalyzePattern(a.pattern()).ok());
      ASSERT_TRUE(solver->Factorize(a.pattern(), a.values).ok());
      EXPECT_TRUE(solver->ok());
      std::vector<double> x_true(n);
      for (int64_t i = 0; i < n; ++i)
        x_true[i] = std::sin(0.3 * i) + 0.1 * i;
      for (bool transposed : {false, true}) {
        const std::vector<double> b = MatVec(a, x_true, transposed);
        std::vector<double> x(n);
        ASSERT_TRUE(solver->Solve(b, absl::MakeSpan(x), transposed).ok());
        for (int64_t i = 0; i < n; ++i)
          EXPECT_NEAR(x[i], x_true[i], 1e-10) << i;
      }
    }
  }
}

TEST(SparseDirectSolverTest, SinglePrecisionSolves) {
  const Csr a = Banded(30, true, 3);
  std::vector<float> values(a.values.begin(), a.values.end());
  auto solver =
      SparseDirectSolver<float>::Create(Factorization::kLU, FillOrdering::kAMD);
  ASSERT_TRUE(solver->AnalyzePattern(a.pattern()).ok());
  ASSERT_TRUE(solver->Factorize(a.pattern(), values).ok());
  std::vector<double> x_true(30, 1.0);
  const std::vector<double> b = MatVec(a, x_true, false);
  std::vector<float> bf(b.begin(), b.end()), x(30);
  ASSERT_TRUE(solver->Solve(bf, absl::MakeSpan(x), false).ok());
  for (float v : x)
    EXPECT_NEAR(v, 1.0f, 1e-5f);  // well conditioned: a few f32 ulps
}

TEST(SparseDirectSolverTest, SingularMatrixIsARuntimeError) {
  const Csr a = FromDense(3, {1, 2, 0, 2, 4, 0, 0, 0, 1});  // rows 0, 1 equal
  for (Factorization f :
       {Factorization::kLLT, Factorization::kLDLT, Factorization::kLU}) {
    auto solver = SparseDirectSolver<double>::Create(f, FillOrdering::kAMD);
    ASSERT_TRUE(solver->AnalyzePattern(a.pattern()).ok());
    absl::Status s = solver->Factorize(a.pattern(), a.values);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(GetErrorKind(s), ErrorKind::kRuntime);
    EXPECT_NE(s.message().find("singular"), absl::string_view::npos) << s;
    EXPECT_FALSE(solver->ok());
    std::vector<double> b(3, 1.0), x(3);
    EXPECT_FALSE(solver->Solve(b, absl::MakeSpan(x), false).ok());
  }
}

TEST(SparseDirectSolverTest, MisuseIsRefusedWithReasons) {
  const Csr a = Banded(5, false, 1);
  auto solver = SparseDirectSolver<double>::Create(Factorization::kLLT,
                                                   FillOrdering::kAMD);
  absl::Status s = solver->Factorize(a.pattern(), a.values);
  EXPECT_NE(s.message().find("analyze_pattern"), absl::string_view::npos) << s;

  CsrPattern rectangular = a.pattern();
  rectangular.cols = 6;
  s = solver->AnalyzePattern(rectangular);
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kType);
  EXPECT_NE(s.message().find("square"), absl::string_view::npos) << s;

  std::vector<int64_t> bad_indices = a.indices;
  bad_indices[0] = 99;
  s = solver->AnalyzePattern({5, 5, a.indptr, bad_indices});
  EXPECT_NE(s.message().find("column 99"), absl::string_view::npos) << s;

  ASSERT_TRUE(solver->AnalyzePattern(a.pattern()).ok());
  const Csr other = FromDense(5, std::vector<double>(25, 1.0));
  s = solver->Factorize(other.pattern(), other.values);
  EXPECT_NE(s.message().find("pattern differs"), absl::string_view::npos) << s;

  ASSERT_TRUE(solver->Factorize(a.pattern(), a.values).ok());
  std::vector<double> b(4, 1.0), x(4);
  s = solver->Solve(b, absl::MakeSpan(x), false);
  EXPECT_NE(s.message().find("4 values"), absl::string_view::npos) << s;

  EXPECT_FALSE(ParseFactorization("QR").ok());
  EXPECT_FALSE(ParseFillOrdering("METIS").ok());
}

}  // namespace
}  // namespace quadrants::linalg
