#include "quadrants/runtime/adstack/size_expr_evaluator.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::adstack {
namespace {

using ir::SizeExpr;
using ir::SizeExprKind;

// Nothing is smaller than an empty maximum.
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

class Evaluator {
 public:
  explicit Evaluator(const SizeExprInputs& inputs) : inputs_(inputs) {}

  absl::StatusOr<int64_t> Eval(const SizeExpr& e) {
    switch (e.kind()) {
      case SizeExprKind::kConst:
        return e.value();
      case SizeExprKind::kArgValue:
        return inputs_.ArgValue(e.arg());
      case SizeExprKind::kBoundVar: {
        auto it = vars_.find(e.var_id());
        if (it == vars_.end())
          return Malformed("an unbound variable");
        return it->second;
      }
      case SizeExprKind::kNdarrayShape:
        return inputs_.NdarrayShape(e.arg(), e.axis());
      case SizeExprKind::kFieldLoad:
      case SizeExprKind::kNdarrayRead: {
        std::vector<int64_t> index;
        for (const SizeExpr::Ptr& child : e.children()) {
          absl::StatusOr<int64_t> v = Eval(*child);
          if (!v.ok())
            return v;
          if (*v == kNone)
            return kNone;
          index.push_back(*v);
        }
        absl::optional<int64_t> value =
            e.kind() == SizeExprKind::kFieldLoad
                ? inputs_.FieldValue(e.snode_id(), index)
                : inputs_.NdarrayValue(e.arg(), index);
        return value ? *value : kNone;
      }
      case SizeExprKind::kLoopIndexMax: {
        absl::StatusOr<int64_t> end = Eval(*e.children()[0]);
        if (!end.ok() || *end == kNone)
          return end;
        return *end - 1;
      }
      case SizeExprKind::kStackLoadTopMax:
        return Eval(*e.children()[0]);
      case SizeExprKind::kAdd:
      case SizeExprKind::kSub:
      case SizeExprKind::kMul:
      case SizeExprKind::kMax:
      case SizeExprKind::kFloorDiv:
      case SizeExprKind::kMod:
        return Binary(e);
      case SizeExprKind::kMaxOverRange:
        return MaxOverRange(e);
    }
    return Malformed("an unknown node");
  }

 private:
  absl::Status Malformed(absl::string_view what) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("adstack sizing: malformed expression (", what, ")"));
  }

  absl::StatusOr<int64_t> Binary(const SizeExpr& e) {
    absl::StatusOr<int64_t> a = Eval(*e.children()[0]);
    if (!a.ok())
      return a;
    absl::StatusOr<int64_t> b = Eval(*e.children()[1]);
    if (!b.ok())
      return b;
    if (e.kind() == SizeExprKind::kMax)
      return std::max(*a, *b);
    if (*a == kNone || *b == kNone)
      return kNone;
    switch (e.kind()) {
      case SizeExprKind::kAdd:
        return *a + *b;
      case SizeExprKind::kSub:
        return *a - *b;
      case SizeExprKind::kFloorDiv:
      case SizeExprKind::kMod: {
        // Python semantics, as generated code computes them; 0 for a zero
        // divisor, as generated code yields.
        if (*b == 0)
          return int64_t{0};
        int64_t q = *a / *b;
        if ((*a % *b != 0) && ((*a < 0) != (*b < 0)))
          --q;
        return e.kind() == SizeExprKind::kFloorDiv ? q : *a - q * *b;
      }
      default:
        return *a * *b;
    }
  }

  absl::StatusOr<int64_t> MaxOverRange(const SizeExpr& e) {
    absl::StatusOr<int64_t> begin = Eval(*e.children()[0]);
    if (!begin.ok())
      return begin;
    absl::StatusOr<int64_t> end = Eval(*e.children()[1]);
    if (!end.ok())
      return end;
    if (*begin == kNone || *end == kNone)
      return kNone;
    const int64_t count = std::max<int64_t>(0, *end - *begin);
    if (count > kMaxSizerIterations - iterations_) {
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat("adstack sizing needs ", iterations_ + count,
                       " serial iterations, which exceeds the ",
                       kMaxSizerIterations, " (1 << 24) guard"));
    }
    iterations_ += count;
    int64_t best = kNone;
    for (int64_t v = *begin; v < *end; ++v) {
      vars_[e.var_id()] = v;
      absl::StatusOr<int64_t> value = Eval(*e.children()[2]);
      if (!value.ok())
        return value;
      best = std::max(best, *value);
    }
    vars_.erase(e.var_id());
    return best;
  }

  const SizeExprInputs& inputs_;
  absl::flat_hash_map<int, int64_t> vars_;
  int64_t iterations_ = 0;
};

}  // namespace

int64_t ReadAsInteger(const void* address, ir::PrimitiveType type) {
  auto load = [&](auto sample) {
    decltype(sample) value;
    std::memcpy(&value, address, sizeof(value));
    return value;
  };
  switch (type) {
    case ir::PrimitiveType::kU1:
      return load(uint8_t{}) != 0;
    case ir::PrimitiveType::kI8:
      return load(int8_t{});
    case ir::PrimitiveType::kI16:
      return load(int16_t{});
    case ir::PrimitiveType::kI32:
      return load(int32_t{});
    case ir::PrimitiveType::kI64:
      return load(int64_t{});
    case ir::PrimitiveType::kU8:
      return load(uint8_t{});
    case ir::PrimitiveType::kU16:
      return load(uint16_t{});
    case ir::PrimitiveType::kU32:
      return load(uint32_t{});
    case ir::PrimitiveType::kU64:
      return static_cast<int64_t>(load(uint64_t{}));
    case ir::PrimitiveType::kF32:
      return static_cast<int64_t>(load(float{}));
    case ir::PrimitiveType::kF64:
      return static_cast<int64_t>(load(double{}));
    case ir::PrimitiveType::kF16:
      return 0;  // not a trip count type
  }
  return 0;
}

absl::StatusOr<int64_t> EvaluateSizeExpr(const SizeExpr& expr,
                                         const SizeExprInputs& inputs) {
  absl::StatusOr<int64_t> value = Evaluator(inputs).Eval(expr);
  if (!value.ok())
    return value;
  // An empty maximum (no iteration runs) needs no slots beyond the setup.
  return *value == kNone ? 0 : *value;
}

absl::StatusOr<int64_t> EvaluateSizeExprValue(const SizeExpr& expr,
                                              const SizeExprInputs& inputs) {
  return Evaluator(inputs).Eval(expr);
}

}  // namespace quadrants::adstack
