#ifndef QUADRANTS_TRANSFORMS_OFFLOAD_H_
#define QUADRANTS_TRANSFORMS_OFFLOAD_H_

#include "absl/status/status.h"
#include "quadrants/ir/kernel.h"

namespace quadrants::transforms {

// Splits the kernel's top level into offloaded tasks, preserving order:
// each top-level range_for becomes a parallel range_for task (its bounds
// computed in the task's prologue), each top-level struct_for a struct_for
// task, and each run of other top-level statements one serial task.
//
// Values defined at the top level and used by a later task are recomputed
// in that task when they are pure (constants, arguments, shapes,
// arithmetic) or are global loads with no side effect between the load and
// the task. Serial runs that only compute such values disappear. A local
// variable shared across tasks is a QuadrantsCompilationError-kind error
// naming its file:line.
absl::Status Offload(ir::Kernel& kernel);

}  // namespace quadrants::transforms

#endif  // QUADRANTS_TRANSFORMS_OFFLOAD_H_
