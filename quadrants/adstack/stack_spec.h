#ifndef QUADRANTS_ADSTACK_STACK_SPEC_H_
#define QUADRANTS_ADSTACK_STACK_SPEC_H_

#include <cstdint>

#include "quadrants/artifact/compiled_kernel_data.h"
#include "quadrants/ir/statements.h"

namespace quadrants::adstack {

// Bytes of one adstack element of type `t` in LLVM targets' heaps (u1 takes
// a byte).
int64_t ElementBytes(ir::PrimitiveType t);

// Whether stack `s` has an exact capacity: a constant trip count or a
// launch-time expression, not overridden by a forced `ad_stack_size`. Only
// pushes onto such a stack may skip their overflow check; default-sized and
// forced stacks are always checked, so a longer loop overflows cleanly.
bool HasExactCapacity(const ir::AdStackAllocaStmt& s, bool capacity_forced);

// What a launch needs of stack `s`, whose slots take `slot_bytes` each.
AdStackSpec Describe(const ir::AdStackAllocaStmt& s, int64_t slot_bytes);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_ADSTACK_STACK_SPEC_H_
