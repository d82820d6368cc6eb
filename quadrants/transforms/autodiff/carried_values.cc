#include "quadrants/transforms/autodiff/carried_values.h"

#include "absl/strings/str_cat.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::BinaryOpKind;
using ir::Stmt;
using ir::UnaryOpKind;

bool IsLinearUnary(UnaryOpKind op) {
  return op == UnaryOpKind::kNeg || op == UnaryOpKind::kCast ||
         op == UnaryOpKind::kFloor || op == UnaryOpKind::kCeil ||
         op == UnaryOpKind::kStopGrad || op == UnaryOpKind::kBitNot ||
         op == UnaryOpKind::kLogicalNot;
}

// Why using tainted operand `index` of `user` needs its primal value.
absl::optional<std::string> PrimalUse(const Stmt& user, size_t index) {
  switch (user.kind()) {
    case ir::StmtKind::kUnaryOp: {
      const auto& u = static_cast<const ir::UnaryOpStmt&>(user);
      if (IsLinearUnary(u.op()))
        return absl::nullopt;
      return absl::StrCat("feeds the non-linear op ", ir::OpName(u.op()));
    }
    case ir::StmtKind::kBinaryOp: {
      const auto& b = static_cast<const ir::BinaryOpStmt&>(user);
      const Stmt* other = user.operand(1 - index);
      switch (b.op()) {
        case BinaryOpKind::kAdd:
        case BinaryOpKind::kSub:
          return absl::nullopt;
        case BinaryOpKind::kMul:
          if (ir::Isa<ir::ConstStmt>(other))
            return absl::nullopt;
          return std::string("is multiplied by a non-constant value");
        case BinaryOpKind::kDiv:
          if (index == 0 && ir::Isa<ir::ConstStmt>(other))
            return absl::nullopt;
          return std::string("takes part in a division");
        default:
          if (ir::IsComparison(b.op()) || ir::IsLogical(b.op()) ||
              ir::IsIntegerOnly(b.op())) {
            return absl::nullopt;  // the result is tainted and checked at its
                                   // uses
          }
          return absl::StrCat("feeds the non-linear op ", ir::OpName(b.op()));
      }
    }
    case ir::StmtKind::kTernaryOp:
      if (index == 0)
        return std::string("decides a branch (select)");
      return absl::nullopt;
    case ir::StmtKind::kIf:
      return std::string("decides a branch (if)");
    case ir::StmtKind::kNdarrayPtr:
    case ir::StmtKind::kFieldPtr:
      return std::string("is used as an index");
    case ir::StmtKind::kRangeFor:
      return std::string("bounds an inner loop");
    case ir::StmtKind::kAssert:
      return absl::nullopt;
    default:
      return absl::nullopt;
  }
}

const Stmt* InnermostBreakable(const Stmt& s) {
  for (const Stmt* c = s.enclosing(); c != nullptr; c = c->enclosing()) {
    if (ir::IsBreakableLoop(c))
      return c;
  }
  return nullptr;
}

}  // namespace

absl::flat_hash_set<const Stmt*> WrittenVariables(const Stmt& loop) {
  absl::flat_hash_set<const Stmt*> written;
  for (const ir::Block* block : loop.blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* s) {
      if (ir::Isa<ir::LocalStoreStmt>(s) && !s->operand(0)->IsInside(&loop)) {
        written.insert(s->operand(0));
      }
    });
  }
  return written;
}

namespace {

// Walks `block` in program order: a load of a variable of `written` that is
// not yet definitely assigned this iteration reads the previous iteration's
// value (`carried`). A store at this level assigns; an if assigns what both
// of its branches assign; a nested loop, which may run no iteration,
// assigns nothing past its end.
void ScanAssignments(const ir::Block& block,
                     const absl::flat_hash_set<const Stmt*>& written,
                     absl::flat_hash_set<const Stmt*>* assigned,
                     absl::flat_hash_set<const Stmt*>* carried) {
  for (const auto& owned : block) {
    const Stmt* s = owned.get();
    if (ir::Isa<ir::LocalLoadStmt>(s) && written.contains(s->operand(0)) &&
        !assigned->contains(s->operand(0))) {
      carried->insert(s->operand(0));
    } else if (ir::Isa<ir::LocalStoreStmt>(s)) {
      assigned->insert(s->operand(0));
    } else if (const auto* branch = ir::DynCast<ir::IfStmt>(s)) {
      absl::flat_hash_set<const Stmt*> then_assigned = *assigned;
      absl::flat_hash_set<const Stmt*> else_assigned = *assigned;
      ScanAssignments(*branch->true_block(), written, &then_assigned, carried);
      ScanAssignments(*branch->false_block(), written, &else_assigned, carried);
      for (const Stmt* var : then_assigned) {
        if (else_assigned.contains(var))
          assigned->insert(var);
      }
    } else {
      for (const ir::Block* child : s->blocks()) {
        absl::flat_hash_set<const Stmt*> inner = *assigned;
        ScanAssignments(*child, written, &inner, carried);
      }
    }
  }
}

// Whether `var` is loaded anywhere outside `loop`: its value at the loop's
// exit may then be read.
bool ReadOutside(const Stmt& loop, const Stmt* var) {
  // The block holding the variable holds every use of it.
  const ir::Block* scope = var->parent();
  if (scope == nullptr)
    return true;
  bool read = false;
  ir::WalkBlock(*scope, [&](const Stmt* s) {
    read = read || (ir::Isa<ir::LocalLoadStmt>(s) && s->operand(0) == var &&
                    !s->IsInside(&loop));
  });
  return read;
}

}  // namespace

absl::flat_hash_set<const Stmt*> CarriedVariables(const Stmt& loop) {
  const auto written = WrittenVariables(loop);
  // Variables definitely assigned in the body before any read are fresh
  // each iteration (an if/else that assigns in both branches counts, as an
  // inlined function's locals often are).
  absl::flat_hash_set<const Stmt*> assigned;
  absl::flat_hash_set<const Stmt*> carried;
  ScanAssignments(*loop.blocks()[0], written, &assigned, &carried);
  // A variable not definitely assigned keeps an older value across
  // iterations on the paths that do not assign it; that matters only when
  // something reads it: in the body before assigning it (found above) or
  // after the loop. A temporary assigned at the top of an inner loop's
  // iterations, say, carries nothing through this one.
  for (const Stmt* var : written) {
    if (!assigned.contains(var) && ReadOutside(loop, var))
      carried.insert(var);
  }
  return carried;
}

absl::optional<std::string> NeedsPerIterationPrimals(const Stmt& loop) {
  if (ir::Isa<ir::WhileStmt>(&loop)) {
    return std::string(
        "a while loop's iteration count depends on the values it carries");
  }
  const auto carried = CarriedVariables(loop);
  absl::flat_hash_set<const Stmt*> tainted;
  // Locals that hold carried-derived values (temporaries assigned from
  // them); their loads are tainted too.
  absl::flat_hash_set<const Stmt*> tainted_vars(carried.begin(), carried.end());
  absl::optional<std::string> reason;
  for (const ir::Block* block : loop.blocks()) {
    ir::WalkBlock(*block, [&](const Stmt* s) {
      if (reason)
        return;
      if (ir::Isa<ir::BreakStmt>(s) && InnermostBreakable(*s) == &loop) {
        reason = "its trip count depends on a break";
        return;
      }
      if (ir::Isa<ir::LocalLoadStmt>(s) &&
          tainted_vars.contains(s->operand(0))) {
        tainted.insert(s);
        return;
      }
      for (size_t i = 0; i < s->num_operands(); ++i) {
        if (!tainted.contains(s->operand(i)))
          continue;
        if (ir::Isa<ir::LocalStoreStmt>(s)) {
          tainted_vars.insert(s->operand(0));
          continue;  // linear in the stored value
        }
        if (ir::Isa<ir::GlobalStoreStmt>(s) || ir::Isa<ir::AtomicOpStmt>(s)) {
          continue;  // linear in the stored value
        }
        if (auto why = PrimalUse(*s, i)) {
          reason = absl::StrCat("a value carried across iterations ", *why);
          return;
        }
        tainted.insert(s);
      }
    });
  }
  return reason;
}

}  // namespace quadrants::transforms::autodiff
