#ifndef QUADRANTS_LINALG_SPARSE_SOLVER_H_
#define QUADRANTS_LINALG_SPARSE_SOLVER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quadrants::linalg {

// How A is factorized: Cholesky (A symmetric positive definite; its lower
// triangle is read), LDL^T (symmetric, possibly indefinite), or LU (any
// square A).
enum class Factorization { kLLT, kLDLT, kLU };
// The fill-reducing ordering applied before factorizing.
enum class FillOrdering { kAMD, kCOLAMD };

// Upstream's spellings: "LLT", "LDLT", "LU"; "AMD", "COLAMD".
absl::StatusOr<Factorization> ParseFactorization(absl::string_view name);
absl::StatusOr<FillOrdering> ParseFillOrdering(absl::string_view name);

// A compressed-sparse-row structure: row r stores the columns
// indices[indptr[r] .. indptr[r + 1]), sorted and without duplicates.
struct CsrPattern {
  int64_t rows = 0;
  int64_t cols = 0;
  absl::Span<const int64_t> indptr;
  absl::Span<const int64_t> indices;
};

// OK for a square CSR pattern with at most INT32_MAX rows and entries and
// each row's columns in range, sorted and distinct; a kType error naming
// what is malformed otherwise.
absl::Status CheckSquarePattern(const CsrPattern& pattern);

// The checks a solver's factorize() makes before factorizing: that
// `solver` (its name in errors) analyzed a pattern, that `pattern` is it
// (given by its analyzed row offsets and column indices), and that there
// is one value per stored entry.
absl::Status CheckFactorizeInput(absl::string_view solver, bool analyzed,
                                 absl::Span<const int64_t> analyzed_indptr,
                                 absl::Span<const int64_t> analyzed_indices,
                                 const CsrPattern& pattern, size_t num_values);

// The fill-reducing ordering of the symmetric matrix that A's lower
// triangle stands for (entry (i, j), j <= i, also stands for (j, i)), as
// the Cholesky factorizations read it: order[k] is the original index of
// row and column k of the reordered matrix. The pattern must pass
// CheckSquarePattern.
std::vector<int> SymmetricFillOrdering(const CsrPattern& pattern,
                                       FillOrdering ordering);

// A direct solver for A x = b with a sparse square A, on the host (Eigen's
// simplicial Cholesky factorizations and its supernodal LU). The symbolic
// analysis of a pattern serves every matrix with that pattern.
template <typename Scalar>
class SparseDirectSolver {
 public:
  virtual ~SparseDirectSolver() = default;

  static std::unique_ptr<SparseDirectSolver> Create(Factorization factorization,
                                                    FillOrdering ordering);

  // Orders A's pattern and factorizes it symbolically.
  virtual absl::Status AnalyzePattern(const CsrPattern& pattern) = 0;
  // Factorizes A numerically. The pattern must be the analyzed one; a
  // matrix the factorization cannot handle (singular, or not positive
  // definite for LLT) is a kRuntime error and leaves ok() false.
  virtual absl::Status Factorize(const CsrPattern& pattern,
                                 absl::Span<const Scalar> values) = 0;
  // x = A^-1 b, or A^-T b when `transposed`.
  virtual absl::Status Solve(absl::Span<const Scalar> b, absl::Span<Scalar> x,
                             bool transposed) = 0;
  // Whether the last analysis and factorization succeeded (upstream's
  // info()).
  virtual bool ok() const = 0;
};

extern template class SparseDirectSolver<float>;
extern template class SparseDirectSolver<double>;

}  // namespace quadrants::linalg

#endif  // QUADRANTS_LINALG_SPARSE_SOLVER_H_
