#include "quadrants/ir/adstack_gate.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace quadrants::ir {
namespace {

template <typename T>
bool Compare(BinaryOpKind op, T a, T b) {
  switch (op) {
    case BinaryOpKind::kLt:
      return a < b;
    case BinaryOpKind::kLe:
      return a <= b;
    case BinaryOpKind::kGt:
      return a > b;
    case BinaryOpKind::kGe:
      return a >= b;
    case BinaryOpKind::kEq:
      return a == b;
    case BinaryOpKind::kNe:
      return a != b;
    default:
      return true;  // never captured; passing keeps the count an upper bound
  }
}

const char* Symbol(BinaryOpKind op) {
  switch (op) {
    case BinaryOpKind::kLt:
      return "<";
    case BinaryOpKind::kLe:
      return "<=";
    case BinaryOpKind::kGt:
      return ">";
    case BinaryOpKind::kGe:
      return ">=";
    case BinaryOpKind::kEq:
      return "==";
    default:
      return "!=";
  }
}

}  // namespace

std::string AdStackGate::ToString() const {
  std::vector<std::string> index;
  for (const AdStackGateIndex& k : indices) {
    switch (k.kind) {
      case AdStackGateIndex::Kind::kConst:
        index.push_back(absl::StrCat(k.value));
        break;
      case AdStackGateIndex::Kind::kArg:
        index.push_back(absl::StrCat("arg", k.value));
        break;
      case AdStackGateIndex::Kind::kLoopDigit: {
        std::string digit = absl::StrCat("i", k.axis);
        if (k.divisor != 1)
          digit = absl::StrCat(digit, " // ", k.divisor);
        if (k.modulus != 0)
          digit = absl::StrCat("(", digit, ") % ", k.modulus);
        index.push_back(digit);
        break;
      }
    }
  }
  const std::string value = IsFloat(dtype) ? absl::StrCat(threshold)
                                           : absl::StrCat(int_threshold);
  return absl::StrCat(label.empty() ? "?" : label, "[",
                      absl::StrJoin(index, ", "), "] ",
                      Symbol(op), " ", value);
}

bool AdStackGate::Passes(double element) const {
  return Compare(op, element, threshold);
}

bool AdStackGate::PassesInt(int64_t element) const {
  if (IsInteger(dtype) && !IsSigned(dtype)) {
    return Compare(op, static_cast<uint64_t>(element),
                   static_cast<uint64_t>(int_threshold));
  }
  return Compare(op, element, int_threshold);
}

}  // namespace quadrants::ir
