#ifndef QUADRANTS_TRANSFORMS_DCE_H_
#define QUADRANTS_TRANSFORMS_DCE_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Dead code elimination: removes statements whose value is never used and
// that have no side effects (pure values, loads, unused allocas and
// adstacks), and range_for / if statements left with nothing in their
// blocks, until nothing more can go. Returns whether the kernel changed.
bool EliminateDeadCode(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_DCE_H_
