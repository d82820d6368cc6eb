#include "quadrants/transforms/simplify.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "quadrants/ir/statements.h"
#include "quadrants/transforms/constant_eval.h"

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::Block;
using ir::Constant;
using ir::ConstStmt;
using ir::DynCast;
using ir::Stmt;

const Constant* ConstOf(const Stmt* s) {
  const auto* c = DynCast<ConstStmt>(s);
  return c ? &c->value() : nullptr;
}

bool IsConst(const Stmt* s, int64_t value) {
  const Constant* c = ConstOf(s);
  if (c == nullptr)
    return false;
  return c->is_float() ? c->as_float() == static_cast<double>(value)
                       : c->as_int() == value;
}

bool IsNegativeZero(const Stmt* s) {
  const Constant* c = ConstOf(s);
  return c && c->is_float() && c->as_float() == 0 &&
         std::signbit(c->as_float());
}

class Simplifier {
 public:
  bool Run(ir::Kernel& kernel) {
    bool any = false;
    for (;;) {
      changed_ = false;
      replaced_.clear();
      SimplifyBlock(*kernel.body());
      dead_.clear();
      if (!changed_)
        return any;
      any = true;
    }
  }

 private:
  // A replacement value that is either an existing statement or a new
  // constant to insert before the statement being simplified.
  struct Replacement {
    Stmt* existing = nullptr;
    absl::optional<Constant> constant;
  };

  Stmt* Resolve(Stmt* s) const {
    for (auto it = replaced_.find(s); it != replaced_.end();
         it = replaced_.find(s)) {
      s = it->second;
    }
    return s;
  }

  void RemapOperands(Stmt& s) {
    for (size_t i = 0; i < s.num_operands(); ++i) {
      s.set_operand(i, Resolve(s.operand(i)));
    }
  }

  void SimplifyBlock(Block& block) {
    for (size_t i = 0; i < block.size(); ++i) {
      Stmt* s = block.at(i);
      RemapOperands(*s);
      if (auto* branch = DynCast<ir::IfStmt>(s)) {
        if (const Constant* cond = ConstOf(branch->cond())) {
          InlineBranch(block, *branch, !cond->is_zero());
          --i;  // revisit the statements spliced in at position i
          continue;
        }
      }
      for (Block* child : s->blocks())
        SimplifyBlock(*child);
      RemapOperands(*s);  // task bounds live in the task's own prologue
      Replacement r = Simplify(*s);
      if (r.existing == nullptr && !r.constant)
        continue;
      Stmt* value = r.existing;
      if (r.constant) {
        auto folded = std::make_unique<ConstStmt>(*r.constant);
        folded->set_loc(s->loc());
        value = block.Insert(i++, std::move(folded));
      }
      replaced_[s] = value;
      dead_.push_back(block.Extract(s));
      --i;
      changed_ = true;
    }
  }

  void InlineBranch(Block& block, ir::IfStmt& branch, bool taken) {
    Block* kept = taken ? branch.true_block() : branch.false_block();
    size_t position = block.IndexOf(&branch);
    for (auto& stmt : kept->TakeAll())
      block.Insert(position++, std::move(stmt));
    dead_.push_back(block.Extract(&branch));
    changed_ = true;
  }

  Replacement Simplify(Stmt& s) {
    if (s.type().is_unknown())
      return {};
    switch (s.kind()) {
      case ir::StmtKind::kUnaryOp:
        return SimplifyUnary(static_cast<ir::UnaryOpStmt&>(s));
      case ir::StmtKind::kBinaryOp:
        return SimplifyBinary(static_cast<ir::BinaryOpStmt&>(s));
      case ir::StmtKind::kTernaryOp: {
        if (const Constant* cond = ConstOf(s.operand(0))) {
          return {cond->is_zero() ? s.operand(2) : s.operand(1), {}};
        }
        return {};
      }
      default:
        return {};
    }
  }

  Replacement SimplifyUnary(ir::UnaryOpStmt& u) {
    if (const Constant* x = ConstOf(u.input())) {
      return {nullptr, EvalUnary(u.op(), *x, u.type().element())};
    }
    if (u.is_cast() && u.input()->type() == u.type())
      return {u.input(), {}};
    return {};
  }

  Replacement SimplifyBinary(ir::BinaryOpStmt& b) {
    Stmt* lhs = b.lhs();
    Stmt* rhs = b.rhs();
    const ir::PrimitiveType t = b.type().element();
    const Constant* x = ConstOf(lhs);
    const Constant* y = ConstOf(rhs);
    if (x && y)
      return {nullptr, EvalBinary(b.op(), *x, *y, t)};
    if (ir::IsComparison(b.op()) || ir::IsLogical(b.op()))
      return {};
    const bool integer = !ir::IsFloat(t);
    auto zero = [&]() { return Replacement{nullptr, Constant::Int(t, 0)}; };
    switch (b.op()) {
      case BinaryOpKind::kAdd:
        if (integer ? IsConst(rhs, 0) : IsNegativeZero(rhs))
          return {lhs, {}};
        if (integer ? IsConst(lhs, 0) : IsNegativeZero(lhs))
          return {rhs, {}};
        return {};
      case BinaryOpKind::kSub:
        if (IsConst(rhs, 0) && !IsNegativeZero(rhs))
          return {lhs, {}};
        if (integer && lhs == rhs)
          return zero();
        return {};
      case BinaryOpKind::kMul:
        if (IsConst(rhs, 1))
          return {lhs, {}};
        if (IsConst(lhs, 1))
          return {rhs, {}};
        if (integer && (IsConst(lhs, 0) || IsConst(rhs, 0)))
          return zero();
        return {};
      case BinaryOpKind::kDiv:
        return IsConst(rhs, 1) ? Replacement{lhs, {}} : Replacement{};
      case BinaryOpKind::kFloorDiv:
        return integer && IsConst(rhs, 1) ? Replacement{lhs, {}}
                                          : Replacement{};
      case BinaryOpKind::kBitAnd:
        return IsConst(lhs, 0) || IsConst(rhs, 0) ? zero() : Replacement{};
      case BinaryOpKind::kBitOr:
      case BinaryOpKind::kBitXor:
        if (IsConst(rhs, 0))
          return {lhs, {}};
        if (IsConst(lhs, 0))
          return {rhs, {}};
        return {};
      case BinaryOpKind::kShl:
      case BinaryOpKind::kShr:
        return IsConst(rhs, 0) ? Replacement{lhs, {}} : Replacement{};
      default:
        return {};
    }
  }

  bool changed_ = false;
  absl::flat_hash_map<Stmt*, Stmt*> replaced_;
  // Removed statements stay alive until the sweep ends, since later
  // operands may still name them until remapped.
  std::vector<std::unique_ptr<Stmt>> dead_;
};

}  // namespace

bool Simplify(ir::Kernel& kernel) {
  return Simplifier().Run(kernel);
}

}  // namespace quadrants::transforms
