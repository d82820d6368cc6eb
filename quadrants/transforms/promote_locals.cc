#include "quadrants/transforms/promote_locals.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms {

bool PromoteTopLevelLocals(ir::Kernel& kernel) {
  ir::Block& root = *kernel.body();
  // Candidates: top-level allocas stored to only by top-level statements.
  absl::flat_hash_set<const ir::Stmt*> candidates;
  for (const auto& stmt : root) {
    if (ir::Isa<ir::AllocaStmt>(stmt.get()))
      candidates.insert(stmt.get());
  }
  ir::WalkKernel(kernel, [&](const ir::Stmt* s) {
    if (ir::Isa<ir::LocalStoreStmt>(s) && s->parent() != &root) {
      candidates.erase(s->operand(0));
    }
    // A call may write a local whose address it takes: it stays in memory.
    if (ir::Isa<ir::FuncCallStmt>(s)) {
      for (const ir::Stmt* operand : s->operands())
        candidates.erase(operand);
    }
  });
  if (candidates.empty())
    return false;

  bool changed = false;
  absl::flat_hash_map<const ir::Stmt*, ir::Stmt*> current;  // alloca -> value
  std::vector<std::unique_ptr<ir::Stmt>> dead;
  for (size_t i = 0; i < root.size(); ++i) {
    ir::Stmt* s = root.at(i);
    if (candidates.contains(s)) {
      // A fresh variable holds zero.
      auto zero = std::make_unique<ir::ConstStmt>(
          ir::IsFloat(s->type().element())
              ? ir::Constant::Float(s->type().element(), 0)
              : ir::Constant::Int(s->type().element(), 0));
      zero->set_loc(s->loc());
      current[s] = root.Insert(++i, std::move(zero));
      continue;
    }
    if (ir::Isa<ir::LocalStoreStmt>(s) && candidates.contains(s->operand(0))) {
      current[s->operand(0)] = s->operand(1);
      dead.push_back(root.Extract(s));
      --i;
      changed = true;
      continue;
    }
    // Reads at this point, here or nested in this statement.
    std::vector<ir::Stmt*> loads;
    if (ir::Isa<ir::LocalLoadStmt>(s))
      loads.push_back(s);
    for (ir::Block* block : s->blocks()) {
      ir::WalkBlock(*block, [&](ir::Stmt* inner) {
        if (ir::Isa<ir::LocalLoadStmt>(inner))
          loads.push_back(inner);
      });
    }
    for (ir::Stmt* load : loads) {
      auto it = current.find(load->operand(0));
      if (it == current.end())
        continue;
      ReplaceAllUses(kernel, load, it->second);
      changed = true;
    }
    if (ir::Isa<ir::LocalLoadStmt>(s) && current.contains(s->operand(0))) {
      dead.push_back(root.Extract(s));
      --i;
    }
  }
  return changed;
}

}  // namespace quadrants::transforms
