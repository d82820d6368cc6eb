#include "quadrants/linalg/sparse_solver.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "Eigen/OrderingMethods"
#include "Eigen/SparseCholesky"
#include "Eigen/SparseCore"
#include "Eigen/SparseLU"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::linalg {
namespace {

template <typename Scalar>
using ColMajor = Eigen::SparseMatrix<Scalar, Eigen::ColMajor, int>;

template <typename T>
struct IsLu : std::false_type {};
template <typename Matrix, typename Ordering>
struct IsLu<Eigen::SparseLU<Matrix, Ordering>> : std::true_type {};

}  // namespace

absl::Status CheckSquarePattern(const CsrPattern& pattern) {
  if (pattern.rows != pattern.cols) {
    return MakeError(
        ErrorKind::kType,
        absl::StrCat("a sparse direct solve needs a square matrix, "
                     "got ",
                     pattern.rows, " x ", pattern.cols));
  }
  if (pattern.rows <= 0 || pattern.rows > INT32_MAX ||
      static_cast<int64_t>(pattern.indptr.size()) != pattern.rows + 1 ||
      pattern.indptr.back() != static_cast<int64_t>(pattern.indices.size()) ||
      pattern.indices.size() > INT32_MAX) {
    return MakeError(
        ErrorKind::kType,
        absl::StrCat("malformed CSR matrix: ", pattern.rows, " rows, ",
                     pattern.indptr.size(), " row offsets, ",
                     pattern.indices.size(), " column indices"));
  }
  for (int64_t r = 0; r < pattern.rows; ++r) {
    const int64_t begin = pattern.indptr[r], end = pattern.indptr[r + 1];
    if (begin > end || begin < 0) {
      return MakeError(ErrorKind::kType,
                       absl::StrCat("malformed CSR matrix: row ", r, " spans [",
                                    begin, ", ", end, ")"));
    }
    for (int64_t k = begin; k < end; ++k) {
      const int64_t c = pattern.indices[k];
      if (c < 0 || c >= pattern.cols ||
          (k > begin && c <= pattern.indices[k - 1])) {
        return MakeError(
            ErrorKind::kType,
            absl::StrCat("malformed CSR matrix: row ", r, " has column ", c,
                         " out of range or out of order"));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// A as Eigen's column-major matrix (its solvers' format).
template <typename Scalar>
ColMajor<Scalar> ToEigen(const CsrPattern& pattern,
                         absl::Span<const Scalar> values) {
  std::vector<int> outer(pattern.indptr.begin(), pattern.indptr.end());
  std::vector<int> inner(pattern.indices.begin(), pattern.indices.end());
  const Eigen::Map<const Eigen::SparseMatrix<Scalar, Eigen::RowMajor, int>>
      rows(pattern.rows, pattern.cols, static_cast<int>(inner.size()),
           outer.data(), inner.data(), values.data());
  ColMajor<Scalar> matrix = rows;
  matrix.makeCompressed();
  return matrix;
}

template <typename Scalar, typename EigenSolver>
class EigenDirectSolver : public SparseDirectSolver<Scalar> {
 public:
  explicit EigenDirectSolver(std::string name) : name_(std::move(name)) {}

  absl::Status AnalyzePattern(const CsrPattern& pattern) override {
    ok_ = false;
    if (absl::Status s = CheckSquarePattern(pattern); !s.ok())
      return s;
    std::vector<Scalar> ones(pattern.indices.size(), Scalar(1));
    solver_.analyzePattern(ToEigen<Scalar>(pattern, ones));
    indptr_.assign(pattern.indptr.begin(), pattern.indptr.end());
    indices_.assign(pattern.indices.begin(), pattern.indices.end());
    analyzed_ = true;
    return absl::OkStatus();
  }

  absl::Status Factorize(const CsrPattern& pattern,
                         absl::Span<const Scalar> values) override {
    ok_ = false;
    factorized_ = false;
    QD_RETURN_IF_ERROR(CheckFactorizeInput(name_, analyzed_, indptr_, indices_,
                                           pattern, values.size()));
    solver_.factorize(ToEigen<Scalar>(pattern, values));
    if (solver_.info() != Eigen::Success) {
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat(name_, ": the factorization of the ", pattern.rows,
                       " x ", pattern.cols, " matrix failed: it is singular",
                       name_.rfind("LLT", 0) == 0
                           ? " or not symmetric positive definite"
                           : ""));
    }
    n_ = pattern.rows;
    ok_ = factorized_ = true;
    return absl::OkStatus();
  }

  absl::Status Solve(absl::Span<const Scalar> b, absl::Span<Scalar> x,
                     bool transposed) override {
    if (!factorized_) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat(name_,
                                    ": solve() needs a successful "
                                    "factorize() (or compute()) first"));
    }
    if (static_cast<int64_t>(b.size()) != n_ ||
        static_cast<int64_t>(x.size()) != n_) {
      return MakeError(
          ErrorKind::kType,
          absl::StrCat(name_, ": the right-hand side has ", b.size(),
                       " values; the matrix has ", n_, " rows"));
    }
    using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
    const Eigen::Map<const Vector> rhs(b.data(), n_);
    Eigen::Map<Vector> out(x.data(), n_);
    SolveInto(rhs, out, transposed);
    if (solver_.info() != Eigen::Success) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat(name_, ": the triangular solves failed"));
    }
    return absl::OkStatus();
  }

  bool ok() const override { return ok_; }

 private:
  template <typename In, typename Out>
  void SolveInto(const In& rhs, Out& out, bool transposed) {
    if constexpr (IsLu<EigenSolver>::value) {
      if (transposed) {
        out = solver_.transpose().solve(rhs);
        return;
      }
    }
    // Cholesky and LDL^T factor a symmetric matrix: A^-T = A^-1.
    out = solver_.solve(rhs);
  }

  std::string name_;
  EigenSolver solver_;
  std::vector<int64_t> indptr_, indices_;
  int64_t n_ = 0;
  bool analyzed_ = false, factorized_ = false, ok_ = false;
};

template <typename Scalar, typename Ordering>
std::unique_ptr<SparseDirectSolver<Scalar>> CreateWithOrdering(
    Factorization factorization, const std::string& ordering) {
  switch (factorization) {
    case Factorization::kLLT:
      return std::make_unique<EigenDirectSolver<
          Scalar,
          Eigen::SimplicialLLT<ColMajor<Scalar>, Eigen::Lower, Ordering>>>(
          "LLT/" + ordering);
    case Factorization::kLDLT:
      return std::make_unique<EigenDirectSolver<
          Scalar,
          Eigen::SimplicialLDLT<ColMajor<Scalar>, Eigen::Lower, Ordering>>>(
          "LDLT/" + ordering);
    case Factorization::kLU:
      return std::make_unique<EigenDirectSolver<
          Scalar, Eigen::SparseLU<ColMajor<Scalar>, Ordering>>>("LU/" +
                                                                ordering);
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<Factorization> ParseFactorization(absl::string_view name) {
  if (name == "LLT")
    return Factorization::kLLT;
  if (name == "LDLT")
    return Factorization::kLDLT;
  if (name == "LU")
    return Factorization::kLU;
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("unknown sparse solver type '", name,
                                "'; expected LLT, LDLT or LU"));
}

absl::StatusOr<FillOrdering> ParseFillOrdering(absl::string_view name) {
  if (name == "AMD")
    return FillOrdering::kAMD;
  if (name == "COLAMD")
    return FillOrdering::kCOLAMD;
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("unknown sparse solver ordering '", name,
                                "'; expected AMD or COLAMD"));
}

template <typename Scalar>
std::unique_ptr<SparseDirectSolver<Scalar>> SparseDirectSolver<Scalar>::Create(
    Factorization factorization, FillOrdering ordering) {
  if (ordering == FillOrdering::kAMD)
    return CreateWithOrdering<Scalar, Eigen::AMDOrdering<int>>(factorization,
                                                               "AMD");
  return CreateWithOrdering<Scalar, Eigen::COLAMDOrdering<int>>(factorization,
                                                                "COLAMD");
}

absl::Status CheckFactorizeInput(absl::string_view solver, bool analyzed,
                                 absl::Span<const int64_t> analyzed_indptr,
                                 absl::Span<const int64_t> analyzed_indices,
                                 const CsrPattern& pattern, size_t num_values) {
  if (!analyzed) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat(solver, ": factorize() needs analyze_pattern() first"));
  }
  QD_RETURN_IF_ERROR(CheckSquarePattern(pattern));
  if (num_values != pattern.indices.size()) {
    return MakeError(ErrorKind::kType,
                     absl::StrCat(solver, ": ", num_values, " values for ",
                                  pattern.indices.size(), " stored entries"));
  }
  if (!std::equal(analyzed_indptr.begin(), analyzed_indptr.end(),
                  pattern.indptr.begin(), pattern.indptr.end()) ||
      !std::equal(analyzed_indices.begin(), analyzed_indices.end(),
                  pattern.indices.begin(), pattern.indices.end())) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat(solver,
                     ": the matrix's sparsity pattern differs from the "
                     "analyzed one; call analyze_pattern() (or compute()) "
                     "with it"));
  }
  return absl::OkStatus();
}

std::vector<int> SymmetricFillOrdering(const CsrPattern& pattern,
                                       FillOrdering ordering) {
  std::vector<Eigen::Triplet<double, int>> entries;
  for (int64_t r = 0; r < pattern.rows; ++r) {
    for (int64_t k = pattern.indptr[r]; k < pattern.indptr[r + 1]; ++k) {
      const int64_t c = pattern.indices[k];
      if (c > r)
        continue;
      entries.emplace_back(r, c, 1.0);
      if (c < r)
        entries.emplace_back(c, r, 1.0);
    }
  }
  const int n = static_cast<int>(pattern.rows);
  ColMajor<double> full(n, n);
  full.setFromTriplets(entries.begin(), entries.end());
  full.makeCompressed();
  // Eigen's orderings compute the inverse permutation: new index -> old.
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> inverse;
  if (ordering == FillOrdering::kAMD) {
    Eigen::AMDOrdering<int>()(full, inverse);
  } else {
    Eigen::COLAMDOrdering<int>()(full, inverse);
  }
  std::vector<int> order(inverse.indices().data(),
                         inverse.indices().data() + n);
  return order;
}

template class SparseDirectSolver<float>;
template class SparseDirectSolver<double>;

}  // namespace quadrants::linalg
