#ifndef QUADRANTS_IR_USES_H_
#define QUADRANTS_IR_USES_H_

#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/stmt.h"

namespace quadrants::ir {

// The statements whose value some statement of `kernel` reads (as an
// operand), its real functions included.
absl::flat_hash_set<const Stmt*> UsedValues(const Kernel& kernel);

// Whether `ptr` is the same address in every invocation of a launch: a
// field or ndarray element at constant indices (e.g. a scalar loss).
bool IsLaunchUniformPtr(const Stmt& ptr);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_USES_H_
