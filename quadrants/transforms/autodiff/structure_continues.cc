#include "quadrants/transforms/autodiff/structure_continues.h"

#include <memory>
#include <utility>
#include <vector>

#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::PrimitiveType;
using ir::Stmt;

bool EndsWith(const ir::Block& block, ir::StmtKind jump) {
  return !block.empty() && block.back()->kind() == jump;
}

template <typename T, typename... Args>
Stmt* Add(ir::Block* block, size_t position, const SourceLocation& loc,
          Args&&... args) {
  auto stmt = std::make_unique<T>(std::forward<Args>(args)...);
  stmt->set_loc(loc);
  return block->Insert(position, std::move(stmt));
}

// Whether `block` ends with a jump this pass removes: a continue, or a break
// when `done` is the flag of the loop being structured.
bool EndsWithJump(const ir::Block& block, const Stmt* done) {
  return EndsWith(block, ir::StmtKind::kContinue) ||
         (done != nullptr && EndsWith(block, ir::StmtKind::kBreak));
}

// Restructures the top level of one loop body: the statements after an `if`
// whose branch ends with a jump move into its other branch, and the jump is
// removed (a break sets `done` instead). Continues and breaks are handled in
// one pass, so one may follow the other in any order. Returns whether it
// changed.
bool RestructureBody(ir::Block& body, Stmt* done) {
  for (size_t i = 0; i < body.size(); ++i) {
    auto* branch = ir::DynCast<ir::IfStmt>(body.at(i));
    if (branch == nullptr)
      continue;
    const bool in_true = EndsWithJump(*branch->true_block(), done);
    const bool in_false = EndsWithJump(*branch->false_block(), done);
    if (!in_true && !in_false)
      continue;
    // The statements after the if run only on the path that did not jump.
    std::vector<std::unique_ptr<Stmt>> rest;
    while (body.size() > i + 1)
      rest.push_back(body.Extract(body.at(i + 1)));
    for (ir::Block* side : {branch->true_block(), branch->false_block()}) {
      if (!EndsWithJump(*side, done))
        continue;
      const SourceLocation loc = side->back()->loc();
      const bool is_break = side->back()->kind() == ir::StmtKind::kBreak;
      side->Erase(side->back());
      if (is_break) {
        Stmt* yes = Add<ir::ConstStmt>(side, side->size(), loc,
                                       ir::Constant::Bool(true));
        Add<ir::LocalStoreStmt>(side, side->size(), loc, done, yes);
      }
    }
    if (!(in_true && in_false)) {
      ir::Block* other = in_true ? branch->false_block() : branch->true_block();
      for (auto& stmt : rest)
        other->Append(std::move(stmt));
      RestructureBody(*other, done);  // the moved statements may jump again
    }
    return true;
  }
  return false;
}

bool HasTopLevelBreak(const ir::Block& body) {
  for (const auto& stmt : body) {
    if (const auto* branch = ir::DynCast<ir::IfStmt>(stmt.get())) {
      if (EndsWith(*branch->true_block(), ir::StmtKind::kBreak) ||
          EndsWith(*branch->false_block(), ir::StmtKind::kBreak)) {
        return true;
      }
    }
  }
  return false;
}

// The block where a flag for `loop` is declared: the body of its task. The
// reverse sweep runs in its own copies of the blocks around the loop (the
// `if` branches a `continue` above the loop creates), which see only
// variables declared in the blocks enclosing both.
ir::Block* FlagHome(Stmt& loop) {
  for (Stmt* s = loop.enclosing(); s != nullptr; s = s->enclosing()) {
    if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s))
      return task->body();
  }
  return loop.parent();
}

// `for ...: body-with-breaks` -> `done = False; for ...: if not done: body`.
void StructureBreaks(Stmt& loop) {
  ir::Block& body = *loop.blocks()[0];
  const SourceLocation loc = loop.loc();
  Stmt* done = Add<ir::AllocaStmt>(FlagHome(loop), 0, loc, PrimitiveType::kU1);
  ir::Block* home = loop.parent();
  const size_t at = home->IndexOf(&loop);
  Stmt* no = Add<ir::ConstStmt>(home, at, loc, ir::Constant::Bool(false));
  Add<ir::LocalStoreStmt>(home, at + 1, loc, done, no);

  std::vector<std::unique_ptr<Stmt>> statements = body.TakeAll();
  Stmt* finished = Add<ir::LocalLoadStmt>(&body, 0, loc, done);
  Stmt* running = Add<ir::UnaryOpStmt>(&body, 1, loc,
                                       ir::UnaryOpKind::kLogicalNot, finished);
  running->set_type(ir::DataType::Scalar(PrimitiveType::kU1));
  auto* guard =
      static_cast<ir::IfStmt*>(Add<ir::IfStmt>(&body, 2, loc, running));
  for (auto& stmt : statements)
    guard->true_block()->Append(std::move(stmt));
  RestructureBody(*guard->true_block(), done);
}

}  // namespace

bool StructureContinues(ir::Kernel& kernel) {
  std::vector<ir::Block*> bodies;
  std::vector<Stmt*> loops;
  ir::WalkKernel(kernel, [&](Stmt* s) {
    if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s)) {
      if (task->task_kind() != ir::TaskKind::kSerial)
        bodies.push_back(task->body());
    } else if (ir::IsBreakableLoop(s)) {
      // A while loop's own condition check ends in a break; leave it.
      const bool breaks =
          !ir::Isa<ir::WhileStmt>(s) && HasTopLevelBreak(*s->blocks()[0]);
      if (breaks) {
        loops.push_back(s);  // its continues are structured with its breaks
      } else {
        bodies.push_back(s->blocks()[0]);
      }
    }
  });
  bool changed = false;
  for (ir::Block* body : bodies)
    changed |= RestructureBody(*body, nullptr);
  for (Stmt* loop : loops)
    StructureBreaks(*loop);
  return changed || !loops.empty();
}

}  // namespace quadrants::transforms::autodiff
