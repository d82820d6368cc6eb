#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms::autodiff {

// Rewrites jumps that end one branch of an `if` at the top of a loop body
// into structured code for reverse mode:
// - `if c: A; continue` (any loop or parallel task) becomes
//   `if c: A else: <rest of the body>`;
// - `if c: A; break` (range and struct loops) becomes a flag carried
//   across iterations: `done = False` before the loop, the body runs only
//   while not done, and the branch sets `done = True` instead of breaking.
//   (Reversing the flag needs the adstack, like any carried branch.)
// Jumps in other positions are left alone. Returns whether anything changed.
bool StructureContinues(ir::Kernel& kernel);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_
