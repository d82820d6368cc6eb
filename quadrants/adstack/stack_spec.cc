#include "quadrants/adstack/stack_spec.h"

#include <algorithm>

namespace quadrants::adstack {

int64_t ElementBytes(ir::PrimitiveType t) {
  return std::max(1, ir::BitWidth(t) / 8);
}

bool HasExactCapacity(const ir::AdStackAllocaStmt& s, bool capacity_forced) {
  return (s.max_size() > 0 || s.size_expr()) && !capacity_forced;
}

bool NeedsBoundsCheck(const ir::AdStackAllocaStmt& s,
                      const BoundsCheckPolicy& policy) {
  return policy.debug || policy.check_out_of_bound ||
         !HasExactCapacity(s, policy.capacity_forced);
}

AdStackSpec Describe(const ir::AdStackAllocaStmt& s, int64_t slot_bytes) {
  AdStackSpec spec;
  spec.dtype = s.dtype();
  spec.slot_bytes = slot_bytes;
  spec.static_capacity = s.max_size();
  spec.size_expr = s.size_expr();
  spec.loc = s.loc();
  spec.checkpoint_group = s.checkpoint_group();
  spec.checkpoints = s.role() == ir::AdStackRole::kCheckpoint;
  return spec;
}

}  // namespace quadrants::adstack
