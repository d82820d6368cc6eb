#ifndef QUADRANTS_TRANSFORMS_CSE_H_
#define QUADRANTS_TRANSFORMS_CSE_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Common subexpression elimination over pure statements (constants,
// argument loads, shapes, element pointers, loop indices, arithmetic): a
// statement equal to one that dominates it (earlier in the same block or in
// an enclosing block) is replaced by it. Loads are never merged, since
// memory may change between them. Returns whether the kernel changed.
bool EliminateCommonSubexpressions(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_CSE_H_
