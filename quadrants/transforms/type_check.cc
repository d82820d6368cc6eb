#include "quadrants/transforms/type_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::Block;
using ir::DataType;
using ir::PrimitiveType;
using ir::Stmt;
using ir::StmtKind;
using ir::UnaryOpKind;

class TypeChecker {
 public:
  TypeChecker(ir::Kernel& kernel, const TypeCheckOptions& options)
      : kernel_(kernel), options_(options) {}

  absl::Status Run() {
    CheckBlock(*kernel_.body());
    return error_;
  }

  absl::Status RunOne(Stmt& s) {
    CheckStmt(s);
    return error_;
  }

 private:
  void Fail(const Stmt& s, const std::string& what) {
    if (!error_.ok())
      return;
    error_ =
        MakeError(ErrorKind::kType, s.loc(),
                  absl::StrCat("in kernel '", kernel_.name(), "': ", what));
  }

  void CheckBlock(Block& block) {
    // Indexing by position: casts get inserted before the current statement.
    for (size_t i = 0; i < block.size() && error_.ok(); ++i) {
      Stmt* s = block.at(i);
      CheckStmt(*s);
      if (auto* task = ir::DynCast<ir::OffloadedTaskStmt>(s)) {
        // Bounds live in the prologue and must be typed before loop indices
        // in the body take their type.
        CheckBlock(*task->prologue());
        if (task->num_operands() == 2 && error_.ok())
          CheckBounds(*task);
        CheckBlock(*task->body());
      } else {
        for (Block* child : s->blocks())
          CheckBlock(*child);
      }
      i = block.IndexOf(s);
    }
  }

  // Operand `index` of `s` converted to `to` by a cast placed before `s`.
  void CastOperand(Stmt& s, size_t index, PrimitiveType to) {
    Stmt* value = s.operand(index);
    if (value->type() == DataType::Scalar(to))
      return;
    Block* block = s.parent();
    auto cast =
        std::make_unique<ir::UnaryOpStmt>(UnaryOpKind::kCast, value, to);
    cast->set_loc(s.loc());
    // For task bounds, `s` is the task and the operand lives in its prologue.
    Block* target =
        value->parent() != nullptr && ir::Isa<ir::OffloadedTaskStmt>(&s)
            ? value->parent()
            : block;
    size_t position =
        target == block ? block->IndexOf(&s) : target->IndexOf(value) + 1;
    s.set_operand(index, target->Insert(position, std::move(cast)));
  }

  bool RequireScalar(const Stmt& s, const Stmt* value, const char* what) {
    if (value->type().is_scalar())
      return true;
    Fail(s, absl::StrCat(what, " must be a scalar value, found ",
                         value->type().ToString()));
    return false;
  }

  bool RequireInteger(const Stmt& s, const Stmt* value, const char* what) {
    if (!RequireScalar(s, value, what))
      return false;
    if (value->type().is_integer_scalar())
      return true;
    Fail(s, absl::StrCat(what, " must be an integer, found ",
                         value->type().ToString()));
    return false;
  }

  void CheckIndices(Stmt& s) {
    for (size_t i = 0; i < s.num_operands(); ++i) {
      RequireInteger(s, s.operand(i), "an index");
    }
  }

  void ConvertValue(Stmt& s, size_t value_index, PrimitiveType target) {
    if (RequireScalar(s, s.operand(value_index), "the stored value")) {
      CastOperand(s, value_index, target);
    }
  }

  void CheckStmt(Stmt& s) {
    switch (s.kind()) {
      case StmtKind::kNdarrayPtr:
      case StmtKind::kFieldPtr:
        return CheckIndices(s);
      case StmtKind::kAtomicOp:
        return CheckAtomic(static_cast<ir::AtomicOpStmt&>(s));
      case StmtKind::kGlobalStore:
      case StmtKind::kLocalStore:
      case StmtKind::kAdStackPush:
      case StmtKind::kAdStackAccAdjoint:
        return ConvertValue(s, 1, s.operand(0)->type().element());
      case StmtKind::kUnaryOp:
        return CheckUnary(static_cast<ir::UnaryOpStmt&>(s));
      case StmtKind::kBinaryOp:
        return CheckBinary(static_cast<ir::BinaryOpStmt&>(s));
      case StmtKind::kTernaryOp:
        return CheckSelect(s);
      case StmtKind::kRangeFor:
        return CheckBounds(s);
      case StmtKind::kFuncCall:
        return CheckCall(static_cast<ir::FuncCallStmt&>(s));
      case StmtKind::kIf:
      case StmtKind::kAssert:
        RequireInteger(s, s.operand(0), "a condition");
        return;
      case StmtKind::kLoopIndex:
        return TypeLoopIndex(static_cast<ir::LoopIndexStmt&>(s));
      default:
        return;
    }
  }

  void CheckBounds(Stmt& loop) {
    if (!RequireInteger(loop, loop.operand(0), "a loop bound") ||
        !RequireInteger(loop, loop.operand(1), "a loop bound")) {
      return;
    }
    PrimitiveType common = ir::PromoteTypes(loop.operand(0)->type().element(),
                                            loop.operand(1)->type().element());
    if (common == PrimitiveType::kU1)
      common = options_.default_ip;
    CastOperand(loop, 0, common);
    CastOperand(loop, 1, common);
  }

  void TypeLoopIndex(ir::LoopIndexStmt& index) {
    const Stmt* loop = index.loop();
    if (ir::Isa<ir::RangeForStmt>(loop) ||
        (ir::Isa<ir::OffloadedTaskStmt>(loop) && loop->num_operands() == 2)) {
      index.set_type(loop->operand(0)->type());
    } else {
      index.set_type(DataType::Scalar(PrimitiveType::kI32));
    }
  }

  void CheckAtomic(ir::AtomicOpStmt& a) {
    const PrimitiveType t = a.ptr()->type().element();
    if (a.op() == ir::AtomicOpKind::kCas && ir::IsFloat(t)) {
      return Fail(a, absl::StrCat("atomic_cas needs an integer target, found ",
                                  ir::PrimitiveTypeName(t),
                                  " (compare-and-swap on floats is not "
                                  "supported)"));
    }
    ConvertValue(a, 1, t);
    if (a.expected() != nullptr && error_.ok())
      ConvertValue(a, 2, t);
  }

  // Unary ops whose operand type is restricted or whose result type is not
  // the operand's; false when `u` is not one of them.
  bool CheckSpecialUnary(ir::UnaryOpStmt& u, PrimitiveType in) {
    const std::string op(ir::OpName(u.op()));
    const std::string found =
        absl::StrCat(", found ", ir::PrimitiveTypeName(in));
    switch (u.op()) {
      case UnaryOpKind::kBitCast: {
        const PrimitiveType out = u.type().element();
        if (ir::IsBool(in) || ir::IsBool(out)) {
          Fail(u, absl::StrCat("bit_cast cannot convert ",
                               ir::PrimitiveTypeName(in), " to ",
                               ir::PrimitiveTypeName(out),
                               ": u1 has no bit pattern of its own"));
        } else if (ir::BitWidth(in) != ir::BitWidth(out)) {
          Fail(u, absl::StrCat("bit_cast needs types of the same size, but ",
                               ir::PrimitiveTypeName(in), " has ",
                               ir::BitWidth(in), " bits and ",
                               ir::PrimitiveTypeName(out), " has ",
                               ir::BitWidth(out)));
        }
        return true;
      }
      case UnaryOpKind::kClz:
      case UnaryOpKind::kPopcnt:
      case UnaryOpKind::kFfs:
        if (ir::IsFloat(in) || ir::IsBool(in)) {
          Fail(u, absl::StrCat(op, " takes integral inputs only (i8 to u64)",
                               found));
        }
        u.set_type(DataType::Scalar(PrimitiveType::kI32));
        return true;
      case UnaryOpKind::kRound:
      case UnaryOpKind::kFrexpMantissa:
      case UnaryOpKind::kFrexpExponent:
        if (!ir::IsFloat(in)) {
          Fail(u, absl::StrCat(op == "round" ? op : "frexp",
                               " takes real inputs only", found));
        }
        u.set_type(DataType::Scalar(
            u.op() == UnaryOpKind::kFrexpExponent ? PrimitiveType::kI32 : in));
        return true;
      default:
        return false;
    }
  }

  void CheckUnary(ir::UnaryOpStmt& u) {
    if (!RequireScalar(u, u.input(), "an operand"))
      return;
    if (u.is_cast())
      return;
    if (CheckSpecialUnary(u, u.input()->type().element()))
      return;
    PrimitiveType in = u.input()->type().element();
    if (ir::IsFloatMath(u.op()) && !ir::IsFloat(in)) {
      CastOperand(u, 0, options_.default_fp);
      in = options_.default_fp;
    }
    switch (u.op()) {
      case UnaryOpKind::kBitNot:
      case UnaryOpKind::kLogicalNot:
        // The first words are upstream's.
        if (ir::IsFloat(in)) {
          return Fail(u, absl::StrCat(ir::OpName(u.op()),
                                      " takes integral inputs only: the "
                                      "operand is ",
                                      ir::PrimitiveTypeName(in)));
        }
        if (u.op() == UnaryOpKind::kLogicalNot) {
          u.set_type(DataType::Scalar(PrimitiveType::kU1));
          return;
        }
        break;
      default:
        break;
    }
    u.set_type(DataType::Scalar(in));
  }

  void CheckBinary(ir::BinaryOpStmt& b) {
    if (!RequireScalar(b, b.lhs(), "an operand") ||
        !RequireScalar(b, b.rhs(), "an operand")) {
      return;
    }
    const PrimitiveType l = b.lhs()->type().element();
    const PrimitiveType r = b.rhs()->type().element();
    const std::string op(ir::OpName(b.op()));
    if (ir::IsIntegerOnly(b.op()) && (ir::IsFloat(l) || ir::IsFloat(r))) {
      return Fail(b, absl::StrCat(op, " needs integer operands, found ",
                                  ir::PrimitiveTypeName(l), " and ",
                                  ir::PrimitiveTypeName(r)));
    }
    if (ir::IsLogical(b.op())) {
      if (ir::IsFloat(l) || ir::IsFloat(r)) {
        return Fail(b, absl::StrCat(op,
                                    " needs integer or boolean operands, "
                                    "found ",
                                    ir::PrimitiveTypeName(l), " and ",
                                    ir::PrimitiveTypeName(r)));
      }
      CastOperand(b, 0, PrimitiveType::kU1);
      CastOperand(b, 1, PrimitiveType::kU1);
      b.set_type(DataType::Scalar(PrimitiveType::kU1));
      return;
    }
    PrimitiveType common = ir::PromoteTypes(l, r);
    // Booleans take part in arithmetic as integers (True + True == 2).
    if (common == PrimitiveType::kU1 && !ir::IsComparison(b.op()) &&
        !ir::IsIntegerOnly(b.op())) {
      common = options_.default_ip;
    }
    const bool float_only =
        b.op() == BinaryOpKind::kDiv || b.op() == BinaryOpKind::kAtan2;
    if (float_only && !ir::IsFloat(common))
      common = options_.default_fp;
    CastOperand(b, 0, common);
    CastOperand(b, 1, common);
    b.set_type(DataType::Scalar(ir::IsComparison(b.op()) ? PrimitiveType::kU1
                                                         : common));
  }

  // Scalar arguments convert to the parameter's type; pointer arguments
  // must point to the parameter's type exactly (the callee writes them).
  void CheckCall(ir::FuncCallStmt& call) {
    for (size_t i = 0; i < call.num_operands() && i < call.params().size();
         ++i) {
      const DataType want = call.params()[i];
      if (want.is_scalar()) {
        if (RequireScalar(call, call.operand(i), "an argument"))
          CastOperand(call, i, want.element());
      } else if (call.operand(i)->type() != want) {
        Fail(call, absl::StrCat("argument ", i, " of '", call.name(),
                                "' must be ", want.ToString(), ", found ",
                                call.operand(i)->type().ToString()));
      }
    }
  }

  void CheckSelect(Stmt& s) {
    if (!RequireInteger(s, s.operand(0), "a condition") ||
        !RequireScalar(s, s.operand(1), "an operand") ||
        !RequireScalar(s, s.operand(2), "an operand")) {
      return;
    }
    PrimitiveType common = ir::PromoteTypes(s.operand(1)->type().element(),
                                            s.operand(2)->type().element());
    CastOperand(s, 1, common);
    CastOperand(s, 2, common);
    s.set_type(DataType::Scalar(common));
  }

  ir::Kernel& kernel_;
  const TypeCheckOptions& options_;
  absl::Status error_;
};

}  // namespace

absl::Status TypeCheck(ir::Kernel& kernel, const TypeCheckOptions& options) {
  return TypeChecker(kernel, options).Run();
}

absl::Status TypeCheckStatement(ir::Kernel& kernel, ir::Stmt& stmt,
                                const TypeCheckOptions& options) {
  return TypeChecker(kernel, options).RunOne(stmt);
}

}  // namespace quadrants::transforms
