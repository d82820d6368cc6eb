#include "quadrants/transforms/dce.h"

#include "absl/container/flat_hash_map.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms {
namespace {

using ir::Stmt;

bool HasNoWork(const Stmt& s) {
  if (!ir::Isa<ir::RangeForStmt>(&s) && !ir::Isa<ir::IfStmt>(&s))
    return false;
  for (const ir::Block* block : s.blocks()) {
    if (!block->empty())
      return false;
  }
  return true;
}

bool Removable(const Stmt& s, int uses) {
  if (uses > 0)
    return false;
  return !s.has_side_effects() || HasNoWork(s);
}

// Removes dead statements of `block` bottom-up; uses of their operands drop
// as they go, so chains of dead values fall in one sweep.
bool Sweep(ir::Block& block, absl::flat_hash_map<const Stmt*, int>& uses) {
  bool changed = false;
  for (size_t i = block.size(); i-- > 0;) {
    Stmt* s = block.at(i);
    for (ir::Block* child : s->blocks())
      changed |= Sweep(*child, uses);
    if (!Removable(*s, uses[s]))
      continue;
    for (const Stmt* operand : s->operands())
      --uses[operand];
    block.Erase(s);
    changed = true;
  }
  return changed;
}

}  // namespace

bool EliminateDeadCode(ir::Kernel& kernel) {
  bool any = false;
  for (;;) {
    absl::flat_hash_map<const Stmt*, int> uses;
    ir::WalkKernel(kernel, [&](const Stmt* s) {
      for (const Stmt* operand : s->operands())
        ++uses[operand];
    });
    if (!Sweep(*kernel.body(), uses))
      return any;
    any = true;
  }
}

}  // namespace quadrants::transforms
