#ifndef QUADRANTS_TRANSFORMS_SIMPLIFY_H_
#define QUADRANTS_TRANSFORMS_SIMPLIFY_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Constant folding and algebraic simplification on a type-checked kernel,
// repeated until nothing changes:
// - unary, binary and select statements over constants become constants
//   (with run-time semantics, see constant_eval.h);
// - identities: x + 0, x - 0, x * 1, x / 1, x | 0, x << 0 -> x; integer
//   x * 0, x & 0 -> 0 and x - x -> 0; casts to the operand's own type;
//   select with a constant condition; float rules only where IEEE exact;
// - an `if` on a constant keeps only the branch taken.
// Returns whether the kernel changed.
bool Simplify(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_SIMPLIFY_H_
