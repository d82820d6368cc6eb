#include "quadrants/transforms/autodiff/backup_values.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/statements.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::Block;
using ir::Stmt;

struct Use {
  Stmt* user;
  size_t operand;
};

// Finds operands that are not visible at their use, scope by scope.
class ScopeWalker {
 public:
  std::vector<Use> Run(const ir::Kernel& kernel) {
    Visit(*kernel.body());
    return uses_;
  }

 private:
  bool Visible(const Stmt* s) const {
    for (const auto& scope : scopes_) {
      if (scope.contains(s))
        return true;
    }
    return false;
  }

  void Visit(const Block& block) {
    scopes_.emplace_back();
    for (const auto& stmt : block) {
      Stmt* s = stmt.get();
      if (!ir::Isa<ir::LoopIndexStmt>(s) &&
          !ir::Isa<ir::OffloadedTaskStmt>(s)) {
        for (size_t i = 0; i < s->num_operands(); ++i) {
          if (!Visible(s->operand(i)))
            uses_.push_back({s, i});
        }
      }
      for (const Block* child : s->blocks())
        Visit(*child);
      scopes_.back().insert(s);
    }
    scopes_.pop_back();
  }

  std::vector<absl::flat_hash_set<const Stmt*>> scopes_;
  std::vector<Use> uses_;
};

ir::OffloadedTaskStmt* TaskOf(Stmt* s) {
  for (Stmt* c = s; c != nullptr; c = c->enclosing()) {
    if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(c))
      return task;
  }
  return nullptr;
}

// Field and ndarray element pointers are pure address computations that a
// local variable cannot hold (locals hold scalars).
bool IsElementPointer(const Stmt* s) {
  return ir::Isa<ir::FieldPtrStmt>(s) || ir::Isa<ir::NdarrayPtrStmt>(s);
}

// Recomputes each out-of-scope element pointer right before its use. The
// copy's own operands (indices) may be out of scope there too; the next walk
// finds them. Returns whether anything changed.
bool RecomputeOutOfScopePointers(ir::Kernel& kernel) {
  bool changed = false;
  for (const Use& use : ScopeWalker().Run(kernel)) {
    Stmt* value = use.user->operand(use.operand);
    if (!IsElementPointer(value))
      continue;
    auto copy = ir::CloneStmt(*value);
    copy->set_loc(value->loc());
    Block* block = use.user->parent();
    Stmt* pointer = block->Insert(block->IndexOf(use.user), std::move(copy));
    use.user->set_operand(use.operand, pointer);
    changed = true;
  }
  return changed;
}

}  // namespace

bool BackupOutOfScopeValues(ir::Kernel& kernel) {
  bool changed = false;
  while (RecomputeOutOfScopePointers(kernel))
    changed = true;
  std::vector<Use> uses = ScopeWalker().Run(kernel);
  absl::flat_hash_map<Stmt*, Stmt*> slots;  // value -> its backup variable
  for (const Use& use : uses) {
    Stmt* value = use.user->operand(use.operand);
    auto it = slots.find(value);
    if (it == slots.end()) {
      ir::OffloadedTaskStmt* task = TaskOf(value);
      Block* region = task != nullptr ? task->body() : kernel.body();
      auto slot = std::make_unique<ir::AllocaStmt>(value->type().element());
      slot->set_loc(value->loc());
      Stmt* var = region->Insert(0, std::move(slot));
      auto store = std::make_unique<ir::LocalStoreStmt>(var, value);
      store->set_loc(value->loc());
      Block* home = value->parent();
      home->Insert(home->IndexOf(value) + 1, std::move(store));
      it = slots.emplace(value, var).first;
    }
    auto load = std::make_unique<ir::LocalLoadStmt>(it->second);
    load->set_loc(use.user->loc());
    Block* block = use.user->parent();
    Stmt* loaded = block->Insert(block->IndexOf(use.user), std::move(load));
    use.user->set_operand(use.operand, loaded);
  }
  return changed || !uses.empty();
}

}  // namespace quadrants::transforms::autodiff
