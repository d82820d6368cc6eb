#include "quadrants/transforms/autodiff/loop_shapes.h"

#include <limits>

#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {

using ir::Block;
using ir::Stmt;

bool IsFloatValue(const Stmt* s) {
  if (ir::Isa<ir::AllocaStmt>(s))
    return ir::IsFloat(s->type().element());
  return s->type().is_float_scalar();
}

const Stmt* JumpTarget(const Stmt& jump) {
  for (const Stmt* c = jump.enclosing(); c != nullptr; c = c->enclosing()) {
    if (ir::IsBreakableLoop(c) || ir::Isa<ir::OffloadedTaskStmt>(c))
      return c;
  }
  return nullptr;
}

int ConditionCheck(const Stmt& loop) {
  const Block& body = *loop.blocks()[0];
  for (size_t i = 0; i < body.size(); ++i) {
    const Stmt* s = body.at(i);
    if (const auto* check = ir::DynCast<ir::IfStmt>(s)) {
      const bool is_check =
          check->true_block()->size() == 1 &&
          ir::Isa<ir::BreakStmt>(check->true_block()->at(0)) &&
          check->false_block()->empty();
      return is_check ? static_cast<int>(i) : -1;
    }
    // The condition is computed from values only: no effects, no blocks.
    if (s->has_side_effects() || !s->blocks().empty())
      return -1;
  }
  return -1;
}

bool StartsWithConditionCheck(const Stmt& loop) {
  return ConditionCheck(loop) >= 0;
}

bool MaySegment(const Stmt& loop) {
  if (!ir::Isa<ir::RangeForStmt>(&loop))
    return false;
  for (const Stmt* c = loop.enclosing(); c != nullptr; c = c->enclosing()) {
    if (ir::IsBreakableLoop(c))
      return false;
  }
  return true;
}

bool SameEveryIteration(
    const Stmt& loop, const Stmt* value,
    const absl::flat_hash_set<const Stmt*>& written) {
  if (!value->IsInside(&loop) || ir::Isa<ir::ConstStmt>(value))
    return true;
  if (ir::Isa<ir::LocalLoadStmt>(value))
    return !written.contains(value->operand(0));
  if (!ir::Isa<ir::UnaryOpStmt>(value) && !ir::Isa<ir::BinaryOpStmt>(value))
    return false;
  for (const Stmt* operand : value->operands()) {
    if (!SameEveryIteration(loop, operand, written))
      return false;
  }
  return true;
}

std::vector<const Stmt*> LoopInvariantLoads(const Stmt& loop) {
  absl::flat_hash_set<int64_t> written;
  std::vector<const Stmt*> loads;
  // Block-shared addresses share one key: any store to shared memory makes
  // every shared load variant.
  constexpr int64_t kShared = std::numeric_limits<int64_t>::min();
  auto target = [](const Stmt* ptr) -> int64_t {
    if (const auto* f = ir::DynCast<ir::FieldPtrStmt>(ptr))
      return f->snode_id();
    if (const auto* a = ir::DynCast<ir::NdarrayPtrStmt>(ptr))
      return -1 - a->arg();
    return kShared;
  };
  for (const Block* block : loop.blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* s) {
      if (ir::Isa<ir::GlobalStoreStmt>(s) || ir::Isa<ir::AtomicOpStmt>(s)) {
        written.insert(target(s->operand(0)));
        return;
      }
      if (!ir::Isa<ir::GlobalLoadStmt>(s) || !IsFloatValue(s))
        return;
      const Stmt* inner = s->enclosing();
      while (inner != nullptr && !ir::IsBreakableLoop(inner))
        inner = inner->enclosing();
      if (inner != &loop)
        return;
      for (const Stmt* index : s->operand(0)->operands()) {
        if (index->IsInside(&loop))
          return;
      }
      loads.push_back(s);
    });
  }
  std::vector<const Stmt*> invariant;
  for (const Stmt* load : loads) {
    if (!written.contains(target(load->operand(0))))
      invariant.push_back(load);
  }
  return invariant;
}

bool StoresToGlobals(const Stmt& loop) {
  bool stores = false;
  for (const Block* block : loop.blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* s) {
      stores |= ir::Isa<ir::GlobalStoreStmt>(s);
    });
  }
  return stores;
}

}  // namespace quadrants::transforms::autodiff
