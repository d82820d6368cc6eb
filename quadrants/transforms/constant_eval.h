#ifndef QUADRANTS_TRANSFORMS_CONSTANT_EVAL_H_
#define QUADRANTS_TRANSFORMS_CONSTANT_EVAL_H_

#include "absl/types/optional.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/op_kinds.h"

namespace quadrants::transforms {

// Compile-time evaluation with the language's run-time semantics: integers
// wrap at their width, `//` and `%` follow Python (floor toward -inf, the
// remainder takes the divisor's sign), f32 math is computed in float.
// Returns nothing where the result is undefined or trapping at run time
// (integer division by zero, out-of-range shifts), leaving it to run time.
absl::optional<ir::Constant> EvalUnary(ir::UnaryOpKind op,
                                       const ir::Constant& x,
                                       ir::PrimitiveType result);
absl::optional<ir::Constant> EvalBinary(ir::BinaryOpKind op,
                                        const ir::Constant& a,
                                        const ir::Constant& b,
                                        ir::PrimitiveType result);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_CONSTANT_EVAL_H_
