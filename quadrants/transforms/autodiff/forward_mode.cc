#include "quadrants/transforms/autodiff/forward_mode.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/statements.h"
#include "quadrants/transforms/autodiff/companion_params.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms::autodiff {
namespace {

using ir::BinaryOpKind;
using ir::Block;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;
using Map = absl::flat_hash_map<const Stmt*, Stmt*>;

// Rebuilds one task body with a tangent next to every float value. A value
// whose tangent is known to be zero has none (null), so code that does not
// depend on a dual field costs nothing extra.
class TangentBuilder {
 public:
  TangentBuilder(ir::Kernel& kernel, const ir::SNodeTree& snodes,
                 ir::OffloadedTaskStmt* task, Map primal,
                 const absl::flat_hash_map<int, int>& dual_args)
      : kernel_(kernel),
        snodes_(snodes),
        task_(task),
        primal_(std::move(primal)),
        dual_args_(dual_args),
        b_(&kernel, &snodes) {}

  absl::Status Build(const ir::OffloadedTaskStmt& forward) {
    primal_[&forward] = task_;
    b_.SetInsertPointToEnd(task_->body());
    return Visit(*forward.body());
  }

 private:
  absl::Status Visit(const Block& block) {
    for (const auto& stmt : block)
      QD_RETURN_IF_ERROR(VisitStmt(*stmt));
    return absl::OkStatus();
  }

  absl::Status VisitStmt(const Stmt& s) {
    b_.SetLocation(s.loc());
    Stmt* copy = nullptr;
    switch (s.kind()) {
      case StmtKind::kIf: {
        const auto& branch = static_cast<const ir::IfStmt&>(s);
        auto* copy_if = b_.If(P(branch.cond()));
        primal_[&s] = copy_if;
        {
          auto scope = b_.EnterBlock(copy_if->true_block());
          QD_RETURN_IF_ERROR(Visit(*branch.true_block()));
        }
        auto scope = b_.EnterBlock(copy_if->false_block());
        return Visit(*branch.false_block());
      }
      case StmtKind::kRangeFor: {
        const auto& range = static_cast<const ir::RangeForStmt&>(s);
        copy = b_.RangeFor(P(range.begin()), P(range.end()));
        break;
      }
      case StmtKind::kStructFor:
        copy =
            b_.StructFor(static_cast<const ir::StructForStmt&>(s).snode_id());
        break;
      case StmtKind::kWhile:
        copy = b_.While();
        break;
      default:
        primal_[&s] = b_.Insert(ir::CloneStmt(s, &primal_));
        return Tangent(s);
    }
    primal_[&s] = copy;
    auto scope = b_.EnterBlock(copy->blocks()[0]);
    return Visit(*s.blocks()[0]);
  }

  Stmt* P(const Stmt* s) const { return primal_.at(s); }

  Stmt* T(const Stmt* s) const {
    auto it = tangent_.find(s);
    return it == tangent_.end() ? nullptr : it->second;
  }
  // The tangent of `s`, materializing a zero when it has none.
  Stmt* TOrZero(const Stmt* s, PrimitiveType t) {
    Stmt* d = T(s);
    return d != nullptr ? d : Zero(t);
  }

  Stmt* Const(PrimitiveType t, double value) {
    return b_.Const(ir::Constant::Float(t, value));
  }
  Stmt* Zero(PrimitiveType t) { return Const(t, 0); }
  Stmt* Neg(Stmt* x) { return b_.Unary(UnaryOpKind::kNeg, x); }

  // The tangent storage of a field or float ndarray element: the field's
  // dual, or the element of the ndarray's dual parameter; null for a field
  // without a dual and for block-shared memory.
  Stmt* DualPtr(const Stmt& ptr) {
    std::vector<Stmt*> indices;
    for (const Stmt* index : ptr.operands())
      indices.push_back(P(index));
    if (const auto* array = ir::DynCast<ir::NdarrayPtrStmt>(&ptr)) {
      auto it = dual_args_.find(array->arg());
      if (it == dual_args_.end())
        return nullptr;
      return b_.NdarrayPtr(it->second, std::move(indices));
    }
    const auto* field = ir::DynCast<ir::FieldPtrStmt>(&ptr);
    if (field == nullptr)
      return nullptr;
    const ir::SNode& place = snodes_.node(field->snode_id());
    if (place.dual_snode < 0)
      return nullptr;
    return b_.FieldPtr(place.dual_snode, place.dtype, std::move(indices));
  }

  absl::Status Tangent(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kAlloca: {
        const PrimitiveType t = s.type().element();
        if (ir::IsFloat(t)) {
          Stmt* dual = b_.Alloca(t);
          b_.LocalStore(dual, Zero(t));
          dual_alloca_[&s] = dual;
        }
        return absl::OkStatus();
      }
      case StmtKind::kLocalLoad:
        if (auto it = dual_alloca_.find(s.operand(0));
            it != dual_alloca_.end()) {
          tangent_[&s] = b_.LocalLoad(it->second);
        }
        return absl::OkStatus();
      case StmtKind::kLocalStore:
        if (auto it = dual_alloca_.find(s.operand(0));
            it != dual_alloca_.end()) {
          b_.LocalStore(it->second,
                        TOrZero(s.operand(1), s.operand(0)->type().element()));
        }
        return absl::OkStatus();
      case StmtKind::kGlobalLoad:
        if (s.type().is_float_scalar()) {
          if (Stmt* dual = DualPtr(*s.operand(0)))
            tangent_[&s] = b_.GlobalLoad(dual);
        }
        return absl::OkStatus();
      case StmtKind::kGlobalStore:
        if (ir::Isa<ir::SharedPtrStmt>(s.operand(0)) && T(s.operand(1)) != nullptr)
          return SharedTangentError(s);
        if (s.operand(1)->type().is_float_scalar()) {
          if (Stmt* dual = DualPtr(*s.operand(0))) {
            b_.GlobalStore(dual, TOrZero(s.operand(1), dual->type().element()));
          }
        }
        return absl::OkStatus();
      case StmtKind::kAtomicOp:
        if (ir::Isa<ir::SharedPtrStmt>(s.operand(0)) && T(s.operand(1)) != nullptr)
          return SharedTangentError(s);
        return AtomicTangent(static_cast<const ir::AtomicOpStmt&>(s));
      case StmtKind::kSimtOp:
        return SimtTangent(static_cast<const ir::SimtOpStmt&>(s));
      case StmtKind::kUnaryOp:
        if (s.type().is_float_scalar() && T(s.operand(0)) != nullptr)
          UnaryTangent(static_cast<const ir::UnaryOpStmt&>(s));
        return absl::OkStatus();
      case StmtKind::kBinaryOp:
        if (s.type().is_float_scalar() &&
            (T(s.operand(0)) != nullptr || T(s.operand(1)) != nullptr)) {
          BinaryTangent(static_cast<const ir::BinaryOpStmt&>(s));
        }
        return absl::OkStatus();
      case StmtKind::kTernaryOp:
        if (s.type().is_float_scalar() &&
            (T(s.operand(1)) != nullptr || T(s.operand(2)) != nullptr)) {
          const PrimitiveType t = s.type().element();
          tangent_[&s] = b_.Select(P(s.operand(0)), TOrZero(s.operand(1), t),
                                   TOrZero(s.operand(2), t));
        }
        return absl::OkStatus();
      case StmtKind::kAdStackAlloca:
      case StmtKind::kAdStackPush:
      case StmtKind::kAdStackPop:
      case StmtKind::kAdStackLoadTop:
      case StmtKind::kAdStackLoadTopAdj:
      case StmtKind::kAdStackAccAdjoint:
        return AdStackTangent(s);
      default:
        return absl::OkStatus();  // constants, arguments, integers, control
    }
  }

  // A float adstack of a reverse-mode kernel (forward mode over it: hvp)
  // gets a twin of the same shape and checkpoint role that mirrors every
  // push and pop: its slots hold the tangents of the primal values and of
  // the adjoints accumulated beside them.
  absl::Status AdStackTangent(const Stmt& s) {
    const Stmt* stack = ir::Isa<ir::AdStackAllocaStmt>(&s) ? &s : s.operand(0);
    if (!ir::IsFloat(stack->type().element()))
      return absl::OkStatus();
    const PrimitiveType t = stack->type().element();
    switch (s.kind()) {
      case StmtKind::kAdStackAlloca: {
        Map operands;
        auto twin = ir::CloneStmt(s, &operands);
        twin->set_loc(s.loc());
        twin_stack_[&s] = b_.Insert(std::move(twin));
        return absl::OkStatus();
      }
      case StmtKind::kAdStackPush:
        b_.AdStackPush(Twin(stack), TOrZero(s.operand(1), t));
        return absl::OkStatus();
      case StmtKind::kAdStackPop:
        b_.AdStackPop(Twin(stack));
        return absl::OkStatus();
      case StmtKind::kAdStackLoadTop:
        tangent_[&s] = b_.AdStackLoadTop(Twin(stack));
        return absl::OkStatus();
      case StmtKind::kAdStackLoadTopAdj:
        tangent_[&s] = b_.AdStackLoadTopAdj(Twin(stack));
        return absl::OkStatus();
      case StmtKind::kAdStackAccAdjoint:
        if (Stmt* d = T(s.operand(1)))
          b_.AdStackAccAdjoint(Twin(stack), d);
        return absl::OkStatus();
      default:
        return absl::OkStatus();
    }
  }

  Stmt* Twin(const Stmt* stack) const { return twin_stack_.at(stack); }

  // Block-shared memory carries no tangents: a value with one stored there
  // would lose it.
  absl::Status SharedTangentError(const Stmt& s) {
    return MakeError(
        ErrorKind::kGradient, s.loc(),
        absl::StrCat("in kernel '", kernel_.name(), "': forward mode cannot "
                     "carry a tangent through qd.simt.block.SharedArray; "
                     "compute the value in a kernel that is not differentiated"));
  }

  // Moving a value between lanes is linear: its tangent moves the same way.
  // Other primitives take or give integers (lanes, votes, masks).
  absl::Status SimtTangent(const ir::SimtOpStmt& s) {
    switch (s.op()) {
      case ir::SimtOpKind::kSubgroupShuffle:
      case ir::SimtOpKind::kSubgroupShuffleXor:
      case ir::SimtOpKind::kSubgroupShuffleUp:
      case ir::SimtOpKind::kSubgroupShuffleDown:
      case ir::SimtOpKind::kSubgroupBroadcast:
      case ir::SimtOpKind::kSubgroupBroadcastFirst: {
        if (!s.type().is_float_scalar() || T(s.operand(0)) == nullptr)
          return absl::OkStatus();
        std::vector<Stmt*> operands = {T(s.operand(0))};
        for (size_t k = 1; k < s.num_operands(); ++k)
          operands.push_back(P(s.operand(k)));
        tangent_[&s] = b_.SimtOp(s.op(), s.type(), std::move(operands));
        return absl::OkStatus();
      }
      case ir::SimtOpKind::kWarpShuffle:
      case ir::SimtOpKind::kWarpShuffleUp:
      case ir::SimtOpKind::kWarpShuffleDown:
      case ir::SimtOpKind::kWarpShuffleXor: {
        if (!s.type().is_float_scalar() || T(s.operand(1)) == nullptr)
          return absl::OkStatus();
        tangent_[&s] = b_.SimtOp(s.op(), s.type(),
                                 {P(s.operand(0)), T(s.operand(1)), P(s.operand(2))});
        return absl::OkStatus();
      }
      default:
        return absl::OkStatus();
    }
  }

  absl::Status AtomicTangent(const ir::AtomicOpStmt& s) {
    if (!s.value()->type().is_float_scalar())
      return absl::OkStatus();
    Stmt* dual = DualPtr(*s.ptr());
    if (dual == nullptr)
      return absl::OkStatus();
    if (s.op() != ir::AtomicOpKind::kAdd && s.op() != ir::AtomicOpKind::kSub) {
      return MakeError(
          ErrorKind::kCompilation, s.loc(),
          absl::StrCat("in kernel '", kernel_.name(), "': ", ir::OpName(s.op()),
                       " into a field with a dual is not differentiable in "
                       "forward mode"));
    }
    // The old value an atomic returns has the old tangent as its tangent.
    tangent_[&s] =
        b_.Atomic(s.op(), dual, TOrZero(s.value(), dual->type().element()));
    return absl::OkStatus();
  }

  void UnaryTangent(const ir::UnaryOpStmt& s) {
    const PrimitiveType t = s.type().element();
    Stmt* x = P(s.input());
    Stmt* z = P(&s);
    Stmt* dx = T(s.input());
    auto one = [&] { return Const(t, 1); };
    Stmt* out = nullptr;
    switch (s.op()) {
      case UnaryOpKind::kNeg:
        out = Neg(dx);
        break;
      case UnaryOpKind::kCast:
        out = b_.Cast(dx, t);
        break;
      case UnaryOpKind::kAbs: {
        Stmt* sign =
            b_.Select(b_.Binary(BinaryOpKind::kGt, x, Zero(t)), one(),
                      b_.Select(b_.Lt(x, Zero(t)), Const(t, -1), Zero(t)));
        out = b_.Mul(dx, sign);
        break;
      }
      case UnaryOpKind::kSqrt:
        out = b_.Div(dx, b_.Mul(Const(t, 2), z));
        break;
      case UnaryOpKind::kRsqrt:
        out = b_.Div(b_.Mul(b_.Mul(dx, Const(t, -0.5)), z), x);
        break;
      case UnaryOpKind::kSin:
        out = b_.Mul(dx, b_.Unary(UnaryOpKind::kCos, x));
        break;
      case UnaryOpKind::kCos:
        out = Neg(b_.Mul(dx, b_.Unary(UnaryOpKind::kSin, x)));
        break;
      case UnaryOpKind::kTan:
        out = b_.Mul(dx, b_.Add(one(), b_.Mul(z, z)));
        break;
      case UnaryOpKind::kTanh:
        out = b_.Mul(dx, b_.Sub(one(), b_.Mul(z, z)));
        break;
      case UnaryOpKind::kExp:
        out = b_.Mul(dx, z);
        break;
      case UnaryOpKind::kLog:
        out = b_.Div(dx, x);
        break;
      case UnaryOpKind::kAsin:
      case UnaryOpKind::kAcos: {
        Stmt* d = b_.Div(
            dx, b_.Unary(UnaryOpKind::kSqrt, b_.Sub(one(), b_.Mul(x, x))));
        out = s.op() == UnaryOpKind::kAsin ? d : Neg(d);
        break;
      }
      case UnaryOpKind::kFrexpMantissa:
        // mantissa = x * 2^-e with e piecewise constant: the slope is
        // mantissa / x (exactly 2^-e), taken as 0 at x = 0.
        out = b_.Mul(dx, b_.Select(b_.Binary(BinaryOpKind::kEq, x, Zero(t)),
                                   Zero(t), b_.Div(z, x)));
        break;
      default:
        return;  // floor, ceil, round: zero almost everywhere
    }
    tangent_[&s] = out;
  }

  void BinaryTangent(const ir::BinaryOpStmt& s) {
    const PrimitiveType t = s.type().element();
    Stmt* x = P(s.lhs());
    Stmt* y = P(s.rhs());
    Stmt* z = P(&s);
    Stmt* dx = TOrZero(s.lhs(), t);
    Stmt* dy = TOrZero(s.rhs(), t);
    Stmt* out = nullptr;
    switch (s.op()) {
      case BinaryOpKind::kAdd:
        out = b_.Add(dx, dy);
        break;
      case BinaryOpKind::kSub:
        out = b_.Sub(dx, dy);
        break;
      case BinaryOpKind::kMul:
        out = b_.Add(b_.Mul(dx, y), b_.Mul(x, dy));
        break;
      case BinaryOpKind::kDiv:
        out = b_.Div(b_.Sub(dx, b_.Mul(z, dy)), y);
        break;
      case BinaryOpKind::kPow: {
        Stmt* power = b_.Binary(BinaryOpKind::kPow, x, b_.Sub(y, Const(t, 1)));
        Stmt* by_base = b_.Mul(b_.Mul(dx, y), power);
        // d/dy x^y = x^y log x, defined for x > 0.
        Stmt* by_exponent = b_.Select(
            b_.Binary(BinaryOpKind::kGt, x, Zero(t)),
            b_.Mul(b_.Mul(dy, z), b_.Unary(UnaryOpKind::kLog, x)), Zero(t));
        out = b_.Add(by_base, by_exponent);
        break;
      }
      case BinaryOpKind::kAtan2: {  // atan2(x = y-coordinate, y = x-coordinate)
        Stmt* r = b_.Add(b_.Mul(x, x), b_.Mul(y, y));
        out = b_.Div(b_.Sub(b_.Mul(y, dx), b_.Mul(x, dy)), r);
        break;
      }
      case BinaryOpKind::kMin:
      case BinaryOpKind::kMax: {
        Stmt* left_wins =
            b_.Binary(s.op() == BinaryOpKind::kMin ? BinaryOpKind::kLe
                                                   : BinaryOpKind::kGe,
                      x, y);
        out = b_.Select(left_wins, dx, dy);
        break;
      }
      case BinaryOpKind::kMod:
        out = b_.Sub(dx, b_.Mul(dy, b_.Binary(BinaryOpKind::kFloorDiv, x, y)));
        break;
      default:
        return;  // floordiv: zero almost everywhere
    }
    tangent_[&s] = out;
  }

  ir::Kernel& kernel_;
  const ir::SNodeTree& snodes_;
  ir::OffloadedTaskStmt* task_;
  Map primal_;
  const absl::flat_hash_map<int, int>& dual_args_;
  Map tangent_;
  Map dual_alloca_;
  Map twin_stack_;
  ir::IRBuilder b_;
};

}  // namespace

absl::Status MakeForwardKernel(ir::Kernel& kernel,
                               const ir::SNodeTree& snodes) {
  const absl::flat_hash_map<int, int> dual_args =
      AddCompanionNdarrayParams(kernel, "_dual");
  std::vector<std::unique_ptr<Stmt>> forward = kernel.body()->TakeAll();
  for (const auto& stmt : forward) {
    const auto& task = static_cast<const ir::OffloadedTaskStmt&>(*stmt);
    auto copy = std::make_unique<ir::OffloadedTaskStmt>(task.task_kind(),
                                                        task.snode_id());
    copy->set_loc(task.loc());
    Map primal;
    for (const auto& s : *task.prologue())
      copy->prologue()->Append(ir::CloneStmt(*s, &primal));
    if (task.num_operands() == 2)
      copy->SetBounds(primal.at(task.begin()), primal.at(task.end()));
    ir::OffloadedTaskStmt* target = copy.get();
    kernel.body()->Append(std::move(copy));
    QD_RETURN_IF_ERROR(
        TangentBuilder(kernel, snodes, target, std::move(primal), dual_args)
            .Build(task));
  }
  return TypeCheck(kernel);
}

}  // namespace quadrants::transforms::autodiff
