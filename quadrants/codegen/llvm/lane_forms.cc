#include "quadrants/codegen/llvm/lane_forms.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen {

using ir::Stmt;
using ir::StmtKind;

LaneForms::LaneForms(const ir::OffloadedTaskStmt& task, int linear_struct_axis)
    : task_(task), linear_struct_axis_(linear_struct_axis) {
  // Forms only move from uniform towards varying, so this terminates.
  while (true) {
    uniform_.clear();
    linear_.clear();
    varying_control_.clear();
    per_lane_stacks_.clear();
    if (!Visit(*task.body(), !divergent_exits_.contains(&task), true, &task))
      break;
  }
}

LaneForm LaneForms::Form(const Stmt* s) const {
  if (uniform_.contains(s))
    return LaneForm::kUniform;
  if (linear_.contains(s))
    return LaneForm::kLinear;
  return LaneForm::kVarying;
}

bool LaneForms::LastIndexLinear(const Stmt* ptr) const {
  const size_t n = ptr->num_operands();
  if (n == 0 || Form(ptr->operand(n - 1)) != LaneForm::kLinear)
    return false;
  for (size_t k = 0; k + 1 < n; ++k) {
    if (!Uniform(ptr->operand(k)))
      return false;
  }
  return true;
}

LaneForm LaneForms::Compute(const Stmt& s) const {
  auto all_uniform = [&] {
    for (const Stmt* operand : s.operands()) {
      if (!Uniform(operand))
        return false;
    }
    return true;
  };
  switch (s.kind()) {
    case StmtKind::kConst:
    case StmtKind::kArgLoad:
    case StmtKind::kNdarrayShape:
    case StmtKind::kAlloca:
    case StmtKind::kThreadIndex:      // the thread's, shared by its lanes
    case StmtKind::kAdStackCapacity:  // the launch's, shared by every lane
    case StmtKind::kAdStackRow:       // lanes keep their thread's slices
      return LaneForm::kUniform;
    case StmtKind::kLoopIndex: {
      const auto& index = static_cast<const ir::LoopIndexStmt&>(s);
      const Stmt* loop = index.loop();
      if (loop == &task_) {
        if (task_.task_kind() == ir::TaskKind::kRangeFor)
          return LaneForm::kLinear;
        if (linear_struct_axis_ < 0)
          return LaneForm::kVarying;  // cells decompose per lane
        return index.axis() == linear_struct_axis_ ? LaneForm::kLinear
                                                   : LaneForm::kUniform;
      }
      if (const auto* range = ir::DynCast<ir::RangeForStmt>(loop)) {
        return Uniform(range->begin()) ? LaneForm::kUniform
                                       : LaneForm::kVarying;
      }
      return LaneForm::kUniform;  // inner struct-for: constant bounds
    }
    case StmtKind::kUnaryOp: {
      const auto& unary = static_cast<const ir::UnaryOpStmt&>(s);
      const LaneForm in = Form(unary.input());
      if (in != LaneForm::kLinear)
        return in;
      const ir::PrimitiveType from = unary.input()->type().element();
      const ir::PrimitiveType to = unary.type().element();
      // Widening integer casts keep consecutive values consecutive.
      const bool keeps = unary.op() == ir::UnaryOpKind::kCast &&
                         ir::IsInteger(from) && ir::IsInteger(to) &&
                         !ir::IsBool(to) &&
                         ir::BitWidth(to) >= ir::BitWidth(from);
      return keeps ? LaneForm::kLinear : LaneForm::kVarying;
    }
    case StmtKind::kBinaryOp: {
      const auto& binary = static_cast<const ir::BinaryOpStmt&>(s);
      const LaneForm l = Form(binary.lhs()), r = Form(binary.rhs());
      if (l == LaneForm::kUniform && r == LaneForm::kUniform)
        return LaneForm::kUniform;
      if (ir::IsFloat(binary.lhs()->type().element()))
        return LaneForm::kVarying;
      if (binary.op() == ir::BinaryOpKind::kAdd &&
          ((l == LaneForm::kLinear && r == LaneForm::kUniform) ||
           (l == LaneForm::kUniform && r == LaneForm::kLinear))) {
        return LaneForm::kLinear;
      }
      if (binary.op() == ir::BinaryOpKind::kSub && l == LaneForm::kLinear &&
          r == LaneForm::kUniform) {
        return LaneForm::kLinear;
      }
      return LaneForm::kVarying;
    }
    case StmtKind::kGlobalLoad:
      // A volatile load is read by every iteration, never shared by lanes.
      if (static_cast<const ir::GlobalLoadStmt&>(s).is_volatile())
        return LaneForm::kVarying;
      return all_uniform() ? LaneForm::kUniform : LaneForm::kVarying;
    case StmtKind::kTernaryOp:
    case StmtKind::kFieldPtr:
    case StmtKind::kNdarrayPtr:
      return all_uniform() ? LaneForm::kUniform : LaneForm::kVarying;
    case StmtKind::kLocalLoad: {
      const Stmt* alloca = s.operand(0);
      return varying_allocas_.contains(alloca) ? LaneForm::kVarying
                                               : LaneForm::kUniform;
    }
    default:
      return LaneForm::kVarying;
  }
}

bool LaneForms::Visit(const ir::Block& block, bool uniform_control,
                      bool uniform_since_loop, const Stmt* loop) {
  bool dropped = false;
  for (size_t i = 0; i < block.size(); ++i) {
    const Stmt* s = block.at(i);
    switch (Compute(*s)) {
      case LaneForm::kUniform:
        uniform_.insert(s);
        break;
      case LaneForm::kLinear:
        linear_.insert(s);
        break;
      case LaneForm::kVarying:
        break;
    }
    if (!uniform_control)
      varying_control_.insert(s);
    switch (s->kind()) {
      case StmtKind::kLocalStore:
        if ((!uniform_control || !Uniform(s->operand(1))) &&
            varying_allocas_.insert(s->operand(0)).second) {
          dropped = true;
        }
        break;
      case StmtKind::kBreak:
      case StmtKind::kContinue:
        if (!uniform_since_loop && divergent_exits_.insert(loop).second)
          dropped = true;
        break;
      case StmtKind::kAdStackPush:
      case StmtKind::kAdStackPop:
        if (!uniform_control)
          per_lane_stacks_.insert(s->operand(0));
        break;
      case StmtKind::kIf: {
        const auto& branch = static_cast<const ir::IfStmt&>(*s);
        const bool same = Uniform(branch.cond());
        for (const ir::Block* child : s->blocks()) {
          dropped |= Visit(*child, uniform_control && same,
                           uniform_since_loop && same, loop);
        }
        break;
      }
      case StmtKind::kRangeFor: {
        const auto& range = static_cast<const ir::RangeForStmt&>(*s);
        const bool bounds = Uniform(range.begin()) && Uniform(range.end());
        dropped |=
            Visit(*range.body(),
                  uniform_control && bounds && !HasDivergentExits(s), true, s);
        break;
      }
      case StmtKind::kStructFor:
      case StmtKind::kWhile:
        dropped |= Visit(*s->blocks()[0],
                         uniform_control && !HasDivergentExits(s), true, s);
        break;
      default:
        break;
    }
  }
  return dropped;
}

std::string LaneLoweringObstacle(const ir::OffloadedTaskStmt& task,
                                 bool bounds_checks, bool debug) {
  if (task.task_kind() == ir::TaskKind::kSerial)
    return "a serial task runs one iteration";
  if (bounds_checks)
    return "bounds checks are on (debug or check_out_of_bound)";
  if (debug)
    return "debug mode checks every adstack push";
  std::string obstacle;
  // A break straight in the task body leaves the thread's whole chunk.
  std::function<void(const ir::Block&, bool)> visit =
      [&](const ir::Block& block, bool in_loop) {
        for (size_t i = 0; i < block.size() && obstacle.empty(); ++i) {
          const Stmt* s = block.at(i);
          const std::string where = absl::StrCat(" at ", s->loc().ToString());
          switch (s->kind()) {
            case StmtKind::kDebugPrint:
              obstacle = "print() in the body" + where;
              break;
            case StmtKind::kOffloadedTask:
              obstacle = "a nested task";
              break;
            case StmtKind::kFuncCall:
              obstacle = absl::StrCat(
                  "a call of qd.real_func '",
                  static_cast<const ir::FuncCallStmt*>(s)->name(), "'", where);
              break;
            case StmtKind::kSNodeOp:
              obstacle = "a sparse SNode's pool operation" + where;
              break;
            case StmtKind::kSharedArray:
            case StmtKind::kSimtOp:
              obstacle = "a qd.simt primitive" + where;
              break;
            case StmtKind::kFieldPtr:
              if (static_cast<const ir::FieldPtrStmt*>(s)->block() != nullptr)
                obstacle =
                    "a field in a pointer or dynamic SNode's pool" + where;
              break;
            case StmtKind::kBreak:
              if (!in_loop)
                obstacle = "a break out of the parallel loop" + where;
              break;
            default:
              break;
          }
          const bool loop = s->kind() == StmtKind::kRangeFor ||
                            s->kind() == StmtKind::kStructFor ||
                            s->kind() == StmtKind::kWhile;
          for (const ir::Block* child : s->blocks())
            visit(*child, in_loop || loop);
        }
      };
  visit(*task.body(), false);
  return obstacle;
}

}  // namespace quadrants::codegen
