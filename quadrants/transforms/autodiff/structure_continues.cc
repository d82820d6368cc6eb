#include "quadrants/transforms/autodiff/structure_continues.h"

#include <memory>
#include <vector>

#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

bool EndsWithContinue(const ir::Block& block) {
  return !block.empty() && ir::Isa<ir::ContinueStmt>(block.back());
}

// Restructures the top level of one loop body; returns whether it changed.
bool RestructureBody(ir::Block& body) {
  bool changed = false;
  for (size_t i = 0; i < body.size(); ++i) {
    auto* branch = ir::DynCast<ir::IfStmt>(body.at(i));
    if (branch == nullptr)
      continue;
    const bool in_true = EndsWithContinue(*branch->true_block());
    const bool in_false = EndsWithContinue(*branch->false_block());
    if (!in_true && !in_false)
      continue;
    // The statements after the if run only on the path that did not continue.
    std::vector<std::unique_ptr<ir::Stmt>> rest;
    while (body.size() > i + 1)
      rest.push_back(body.Extract(body.at(i + 1)));
    if (in_true)
      branch->true_block()->Erase(branch->true_block()->back());
    if (in_false)
      branch->false_block()->Erase(branch->false_block()->back());
    if (!(in_true && in_false)) {
      ir::Block* other = in_true ? branch->false_block() : branch->true_block();
      for (auto& stmt : rest)
        other->Append(std::move(stmt));
      RestructureBody(*other);  // the moved statements may continue again
    }
    changed = true;
    break;
  }
  return changed;
}

}  // namespace

bool StructureContinues(ir::Kernel& kernel) {
  std::vector<ir::Block*> bodies;
  ir::WalkKernel(kernel, [&](ir::Stmt* s) {
    if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s)) {
      if (task->task_kind() != ir::TaskKind::kSerial)
        bodies.push_back(task->body());
    } else if (ir::IsBreakableLoop(s)) {
      bodies.push_back(s->blocks()[0]);
    }
  });
  bool changed = false;
  for (ir::Block* body : bodies)
    changed |= RestructureBody(*body);
  return changed;
}

}  // namespace quadrants::transforms::autodiff
