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
// launch-time expression, not overridden by a forced `ad_stack_size`.
bool HasExactCapacity(const ir::AdStackAllocaStmt& s, bool capacity_forced);

// The options that decide whether adstack pushes and pops are checked.
struct BoundsCheckPolicy {
  bool debug = false;               // qd.init(debug=True)
  bool check_out_of_bound = false;  // qd.init(check_out_of_bound=True)
  bool capacity_forced = false;     // ad_stack_size > 0
};

// Whether pushes onto stack `s` check its capacity (recording an overflow
// instead of writing past it) and pops its emptiness. Checks the user asked
// for (debug, check_out_of_bound) cover every stack; otherwise only a stack
// of exact capacity goes unchecked: default-sized and forced stacks are
// always checked, so a longer loop overflows cleanly. Every code generator
// asks this one function.
bool NeedsBoundsCheck(const ir::AdStackAllocaStmt& s,
                      const BoundsCheckPolicy& policy);

// What a launch needs of stack `s`, whose slots take `slot_bytes` each.
AdStackSpec Describe(const ir::AdStackAllocaStmt& s, int64_t slot_bytes);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_ADSTACK_STACK_SPEC_H_
