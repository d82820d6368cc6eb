#ifndef QUADRANTS_TRANSFORMS_PROMOTE_LOCALS_H_
#define QUADRANTS_TRANSFORMS_PROMOTE_LOCALS_H_

#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Replaces reads of kernel-level local variables that are only ever
// assigned at the kernel's top level by the value last assigned before the
// read (inside loops and branches too: they cannot reassign it). Offload
// can then recompute those values inside the parallel loops that read
// them, as in `scale = 2.0; for i in x: x[i] *= scale`. Returns whether the
// kernel changed; unused variables are left for DCE.
bool PromoteTopLevelLocals(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_PROMOTE_LOCALS_H_
