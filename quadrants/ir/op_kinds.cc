#include "quadrants/ir/op_kinds.h"

namespace quadrants::ir {

#define QD_OP_NAME_CASE(name, text) \
  case Kind::name:                  \
    return text;

absl::string_view OpName(UnaryOpKind op) {
  using Kind = UnaryOpKind;
  switch (op) { QD_FOR_EACH_UNARY_OP(QD_OP_NAME_CASE) }
  return "?";
}

absl::string_view OpName(BinaryOpKind op) {
  using Kind = BinaryOpKind;
  switch (op) { QD_FOR_EACH_BINARY_OP(QD_OP_NAME_CASE) }
  return "?";
}

absl::string_view OpName(AtomicOpKind op) {
  using Kind = AtomicOpKind;
  switch (op) { QD_FOR_EACH_ATOMIC_OP(QD_OP_NAME_CASE) }
  return "?";
}

absl::string_view OpName(SimtOpKind op) {
  switch (op) {
#define QD_SIMT_NAME_CASE(name, text, operands) \
  case SimtOpKind::name:                        \
    return text;
    QD_FOR_EACH_SIMT_OP(QD_SIMT_NAME_CASE)
#undef QD_SIMT_NAME_CASE
  }
  return "?";
}

int OperandCount(SimtOpKind op) {
  switch (op) {
#define QD_SIMT_COUNT_CASE(name, text, operands) \
  case SimtOpKind::name:                         \
    return operands;
    QD_FOR_EACH_SIMT_OP(QD_SIMT_COUNT_CASE)
#undef QD_SIMT_COUNT_CASE
  }
  return 0;
}

bool ParseSimtOp(absl::string_view text, SimtOpKind* op) {
#define QD_SIMT_PARSE_CASE(name, spelling, operands) \
  if (text == spelling) {                            \
    *op = SimtOpKind::name;                          \
    return true;                                     \
  }
  QD_FOR_EACH_SIMT_OP(QD_SIMT_PARSE_CASE)
#undef QD_SIMT_PARSE_CASE
  return false;
}

#undef QD_OP_NAME_CASE

bool IsComparison(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::kLt:
    case BinaryOpKind::kLe:
    case BinaryOpKind::kGt:
    case BinaryOpKind::kGe:
    case BinaryOpKind::kEq:
    case BinaryOpKind::kNe:
      return true;
    default:
      return false;
  }
}

bool IsIntegerOnly(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::kBitAnd:
    case BinaryOpKind::kBitOr:
    case BinaryOpKind::kBitXor:
    case BinaryOpKind::kShl:
    case BinaryOpKind::kShr:
      return true;
    default:
      return false;
  }
}

bool IsLogical(BinaryOpKind op) {
  return op == BinaryOpKind::kLogicalAnd || op == BinaryOpKind::kLogicalOr;
}

bool IsFloatMath(UnaryOpKind op) {
  switch (op) {
    case UnaryOpKind::kSqrt:
    case UnaryOpKind::kRsqrt:
    case UnaryOpKind::kSin:
    case UnaryOpKind::kCos:
    case UnaryOpKind::kTan:
    case UnaryOpKind::kTanh:
    case UnaryOpKind::kExp:
    case UnaryOpKind::kLog:
    case UnaryOpKind::kAsin:
    case UnaryOpKind::kAcos:
      return true;
    default:
      return false;
  }
}

bool IsBitCount(UnaryOpKind op) {
  return op == UnaryOpKind::kClz || op == UnaryOpKind::kPopcnt ||
         op == UnaryOpKind::kFfs;
}

bool HasExplicitType(UnaryOpKind op) {
  return op == UnaryOpKind::kCast || op == UnaryOpKind::kBitCast;
}

absl::string_view TaskKindName(TaskKind kind) {
  switch (kind) {
    case TaskKind::kSerial:
      return "serial";
    case TaskKind::kRangeFor:
      return "range_for";
    case TaskKind::kStructFor:
      return "struct_for";
  }
  return "?";
}

}  // namespace quadrants::ir
