#include "quadrants/codegen/llvm/adstack_slots.h"

#include <algorithm>

#include "quadrants/ir/walk.h"

namespace quadrants::codegen {

absl::flat_hash_set<const ir::Stmt*> StacksWithAdjoints(
    const ir::Kernel& kernel) {
  absl::flat_hash_set<const ir::Stmt*> stacks;
  ir::WalkKernel(kernel, [&](const ir::Stmt* stmt) {
    if (ir::Isa<ir::AdStackLoadTopAdjStmt>(stmt) ||
        ir::Isa<ir::AdStackAccAdjointStmt>(stmt)) {
      stacks.insert(stmt->operand(0));
    }
  });
  return stacks;
}

int64_t AdStackElementBytes(ir::PrimitiveType t) {
  return std::max(1, ir::BitWidth(t) / 8);
}

AdStackSpec DescribeAdStack(const ir::AdStackAllocaStmt& s, bool adjoint) {
  AdStackSpec spec;
  spec.dtype = s.dtype();
  const int64_t elem = AdStackElementBytes(s.dtype());
  spec.slot_bytes = adjoint ? 2 * elem : elem;
  spec.static_capacity = s.max_size();
  spec.size_expr = s.size_expr();
  spec.loc = s.loc();
  return spec;
}

}  // namespace quadrants::codegen
