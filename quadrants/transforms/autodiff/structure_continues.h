#ifndef QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_
#define QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms::autodiff {

// Rewrites `if c: A; continue` (the continue ending one branch of an if at
// the top of a loop body, in any loop or parallel task) into
// `if c: A else: <rest of the body>`, so reverse mode sees structured code.
// Continues in other positions are left alone. Returns whether anything
// changed.
bool StructureContinues(ir::Kernel& kernel);

}  // namespace quadrants::transforms::autodiff

#endif  // QUADRANTS_TRANSFORMS_AUTODIFF_STRUCTURE_CONTINUES_H_
