#ifndef QUADRANTS_TRANSFORMS_TYPE_CHECK_H_
#define QUADRANTS_TRANSFORMS_TYPE_CHECK_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/types.h"

namespace quadrants::transforms {

struct TypeCheckOptions {
  ir::PrimitiveType default_fp = ir::PrimitiveType::kF32;
  ir::PrimitiveType default_ip = ir::PrimitiveType::kI32;
};

// Gives every expression its type and makes implicit conversions explicit
// casts:
// - arithmetic promotes both sides with PromoteTypes; `/` of two integers
//   and float math (sin, sqrt, atan2, ...) on integers use default_fp;
// - comparisons and logical and/or yield u1;
// - stores, atomics and adstack pushes convert the value to the target type;
// - loop bounds promote to a common integer type, which loop indices take.
// Integer-only ops on floats, float indices and float conditions are
// QuadrantsTypeError-kind errors naming the kernel and the file:line.
absl::Status TypeCheck(ir::Kernel& kernel,
                       const TypeCheckOptions& options = {});

// Type checks one statement just inserted into `kernel` (its operands are
// already typed), inserting casts before it. Front ends call this as they
// build, so each expression has its type and errors surface at once;
// TypeCheck over the finished kernel then finds nothing left to do.
absl::Status TypeCheckStatement(ir::Kernel& kernel, ir::Stmt& stmt,
                                const TypeCheckOptions& options = {});

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_TYPE_CHECK_H_
