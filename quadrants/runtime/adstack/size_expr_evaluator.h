#ifndef QUADRANTS_RUNTIME_ADSTACK_SIZE_EXPR_EVALUATOR_H_
#define QUADRANTS_RUNTIME_ADSTACK_SIZE_EXPR_EVALUATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/types.h"

namespace quadrants::adstack {

// The launch-time values a SizeExpr reads. A read outside its array returns
// nothing: the evaluator never touches memory past the end, and such an
// iteration (which the kernel itself cannot execute legitimately) adds
// nothing to a maximum.
class SizeExprInputs {
 public:
  virtual ~SizeExprInputs() = default;
  virtual absl::optional<int64_t> FieldValue(
      int snode, absl::Span<const int64_t> index) const = 0;
  virtual int64_t NdarrayShape(int arg, int axis) const = 0;
  virtual absl::optional<int64_t> NdarrayValue(
      int arg, absl::Span<const int64_t> index) const = 0;
  virtual int64_t ArgValue(int arg) const = 0;
};

// The element of `type` at `address` as an integer (floats truncate).
int64_t ReadAsInteger(const void* address, ir::PrimitiveType type);

// Serial MaxOverRange walks stop at this many iterations in total.
constexpr int64_t kMaxSizerIterations = int64_t{1} << 24;

// Evaluates `expr` in 64-bit integer arithmetic. Exceeding the iteration
// guard is an error (never a silent truncation) whose message says so.
absl::StatusOr<int64_t> EvaluateSizeExpr(const ir::SizeExpr& expr,
                                         const SizeExprInputs& inputs);

// As EvaluateSizeExpr, but an empty maximum (or a value made of reads out
// of range) comes back as INT64_MIN instead of 0, as nested expressions
// see it.
absl::StatusOr<int64_t> EvaluateSizeExprValue(const ir::SizeExpr& expr,
                                              const SizeExprInputs& inputs);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_SIZE_EXPR_EVALUATOR_H_
