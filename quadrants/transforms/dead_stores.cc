#include "quadrants/transforms/dead_stores.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms {
namespace {

using ir::Block;
using ir::Stmt;
using Locals = absl::flat_hash_set<const Stmt*>;

// Backward liveness of locals over the structured IR: a local is live at a
// point when some path from there reads it before assigning it. Valid IR
// reaches a local only through local_load, local_store and calls that take
// its address (which may read it).
class LocalLiveness {
 public:
  std::vector<const Stmt*> DeadStores(const ir::Kernel& kernel) {
    WalkBlock(*kernel.body(), {}, Jumps{}, /*record=*/true);
    return dead_;
  }

 private:
  // What is live where a break or a continue of the innermost loop goes.
  struct Jumps {
    const Locals* on_break = nullptr;
    const Locals* on_continue = nullptr;
  };

  // Returns the locals live before `block`, given those live after it.
  // `record` collects dead stores; it is set only on the final walk of each
  // loop body, once what is live around the loop has settled.
  Locals WalkBlock(const Block& block, Locals live, const Jumps& jumps,
                   bool record) {
    for (size_t i = block.size(); i-- > 0;)
      live = WalkStmt(*block.at(i), std::move(live), jumps, record);
    return live;
  }

  Locals WalkStmt(const Stmt& s, Locals live, const Jumps& jumps, bool record) {
    switch (s.kind()) {
      case ir::StmtKind::kAlloca:
        // A local starts as zero where it is declared, each time it is run.
        live.erase(&s);
        return live;
      case ir::StmtKind::kLocalLoad:
        live.insert(s.operand(0));
        return live;
      case ir::StmtKind::kLocalStore:
        if (!live.erase(s.operand(0)) && record)
          dead_.push_back(&s);
        return live;
      case ir::StmtKind::kFuncCall:
        for (const Stmt* operand : s.operands()) {
          if (ir::Isa<ir::AllocaStmt>(operand))
            live.insert(operand);
        }
        return live;
      case ir::StmtKind::kReturn:
        // The function's own locals die when it returns.
        return {};
      case ir::StmtKind::kBreak:
        return jumps.on_break ? *jumps.on_break : live;
      case ir::StmtKind::kContinue:
        return jumps.on_continue ? *jumps.on_continue : live;
      case ir::StmtKind::kIf: {
        const auto& branch = static_cast<const ir::IfStmt&>(s);
        Locals in = WalkBlock(*branch.true_block(), live, jumps, record);
        Locals other = WalkBlock(*branch.false_block(), live, jumps, record);
        in.insert(other.begin(), other.end());
        return in;
      }
      default: {
        // Loops, and task bodies that run for any number of indices after
        // their prologue. Any other container is taken as a loop too, which
        // can only keep more stores.
        const std::vector<Block*> blocks = s.blocks();
        for (size_t i = blocks.size(); i-- > 0;)
          live = WalkLoop(*blocks[i], live, record);
        return live;
      }
    }
  }

  // A loop body runs zero or more times; what is live at the start of an
  // iteration grows until it settles.
  Locals WalkLoop(const Block& body, const Locals& after, bool record) {
    const Locals head = SettledHead(body, after);
    if (record)
      WalkBlock(body, head, Jumps{&after, &head}, /*record=*/true);
    return head;
  }

  // The settled head of a loop is remembered with the `after` it was
  // computed for: an enclosing loop's walks reuse it while that stays the
  // same, so nesting does not multiply the walks of inner bodies.
  Locals SettledHead(const Block& body, const Locals& after) {
    auto it = settled_.find(&body);
    if (it != settled_.end() && it->second.first == after)
      return it->second.second;
    Locals head = after;
    for (;;) {
      Locals next =
          WalkBlock(body, head, Jumps{&after, &head}, /*record=*/false);
      next.insert(after.begin(), after.end());
      if (next == head)
        break;
      head = std::move(next);
    }
    settled_[&body] = {after, head};
    return head;
  }

  std::vector<const Stmt*> dead_;
  absl::flat_hash_map<const Block*, std::pair<Locals, Locals>> settled_;
};

bool EliminateDeadLocalStores(ir::Kernel& kernel) {
  const std::vector<const Stmt*> dead = LocalLiveness().DeadStores(kernel);
  for (const Stmt* store : dead)
    store->parent()->Erase(store);
  return !dead.empty();
}

// A read of an unread stack's capacity (a checkpointed loop's schedule)
// moves to a surviving stack of the same loop and role, whose capacity the
// launch sets alike; with none left, the launch never segments the loop
// (ChooseCheckpoints needs both roles), so the read becomes 0.
void MoveCapacityReads(ir::Kernel& kernel, const Locals& unread,
                       const std::vector<const Stmt*>& capacity_reads) {
  absl::flat_hash_map<std::pair<int, ir::AdStackRole>, Stmt*> survivors;
  ir::WalkKernel(kernel, [&](const Stmt* s) {
    const auto* stack = ir::DynCast<ir::AdStackAllocaStmt>(s);
    if (stack != nullptr && stack->checkpoint_group() >= 0 &&
        !unread.contains(s)) {
      survivors.try_emplace({stack->checkpoint_group(), stack->role()},
                            const_cast<Stmt*>(s));
    }
  });
  for (const Stmt* read : capacity_reads) {
    const auto& stack =
        static_cast<const ir::AdStackAllocaStmt&>(*read->operand(0));
    if (!unread.contains(&stack))
      continue;
    auto it = survivors.find({stack.checkpoint_group(), stack.role()});
    if (it != survivors.end()) {
      const_cast<Stmt*>(read)->set_operand(0, it->second);
      continue;
    }
    Block* block = read->parent();
    auto zero = std::make_unique<ir::ConstStmt>(
        ir::Constant::Int(ir::PrimitiveType::kI32, 0));
    zero->set_loc(read->loc());
    Stmt* replacement = block->Insert(block->IndexOf(read), std::move(zero));
    ir::ReplaceAllUses(kernel, const_cast<Stmt*>(read), replacement);
    block->Erase(read);
  }
}

// Adstacks whose values nothing reads: their only uses are pushes, pops and
// capacity reads.
bool EliminateUnreadStacks(ir::Kernel& kernel) {
  Locals unread, read;
  std::vector<const Stmt*> accesses, capacity_reads;
  ir::WalkKernel(kernel, [&](const Stmt* s) {
    if (ir::Isa<ir::AdStackAllocaStmt>(s))
      unread.insert(s);
    if (ir::Isa<ir::AdStackPushStmt>(s) || ir::Isa<ir::AdStackPopStmt>(s)) {
      accesses.push_back(s);
      return;
    }
    if (ir::Isa<ir::AdStackCapacityStmt>(s)) {
      capacity_reads.push_back(s);
      return;
    }
    for (const Stmt* operand : s->operands())
      read.insert(operand);
  });
  for (const Stmt* s : read)
    unread.erase(s);
  if (unread.empty())
    return false;
  MoveCapacityReads(kernel, unread, capacity_reads);
  for (const Stmt* s : accesses) {
    if (unread.contains(s->operand(0)))
      s->parent()->Erase(s);
  }
  for (const Stmt* stack : unread)
    stack->parent()->Erase(stack);
  return true;
}

}  // namespace

bool EliminateDeadStores(ir::Kernel& kernel) {
  bool changed = EliminateDeadLocalStores(kernel);
  changed |= EliminateUnreadStacks(kernel);
  return changed;
}

}  // namespace quadrants::transforms
