#include "quadrants/codegen/spirv/sizer_bytecode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace quadrants::codegen::spirv::sizer {
namespace {

using ir::SizeExpr;
using ir::SizeExprKind;

// Keeps a shared DAG that expands enormously from making a huge program.
constexpr size_t kMaxWords = size_t{1} << 20;

absl::Status TooMuch(absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat("the adstack sizer shader does not take ", what));
}

// Emits one stack's program, tracking the evaluation stack's depth and the
// bound variables of the enclosing ranges.
class Encoder {
 public:
  Encoder(const ir::SNodeTree& snodes,
          const std::vector<ir::KernelParam>& params,
          std::vector<int64_t>& words)
      : snodes_(snodes), params_(params), words_(words) {}

  absl::Status Emit(const SizeExpr& e) {
    if (words_.size() > kMaxWords)
      return TooMuch("programs this large");
    switch (e.kind()) {
      case SizeExprKind::kConst:
        return Push({kConst, e.value()});
      case SizeExprKind::kArgValue:
        return Push({kArg, e.arg()});
      case SizeExprKind::kNdarrayShape:
        return Push({kShape, e.arg(), e.axis()});
      case SizeExprKind::kBoundVar:
        return EmitVar(e.var_id());
      case SizeExprKind::kFieldLoad:
        return EmitField(e);
      case SizeExprKind::kNdarrayRead:
        return EmitNdRead(e);
      case SizeExprKind::kLoopIndexMax:
        return Unary(e, kLoopIndexMax);
      case SizeExprKind::kStackLoadTopMax:
        return Emit(*e.children()[0]);
      case SizeExprKind::kAdd:
        return Binary(e, kAdd);
      case SizeExprKind::kSub:
        return Binary(e, kSub);
      case SizeExprKind::kMul:
        return Binary(e, kMul);
      case SizeExprKind::kMax:
        return Binary(e, kMax);
      case SizeExprKind::kFloorDiv:
        return Binary(e, kFloorDiv);
      case SizeExprKind::kMod:
        return Binary(e, kMod);
      case SizeExprKind::kMaxOverRange:
        return EmitRange(e);
    }
    return absl::InvalidArgumentError("adstack sizing: an unknown node");
  }

 private:
  // Appends an instruction that leaves one more value on the stack.
  absl::Status Push(std::initializer_list<int64_t> instruction) {
    words_.insert(words_.end(), instruction);
    return Grow(1);
  }
  absl::Status Grow(int by) {
    depth_ += by;
    if (depth_ > kStackDepth)
      return TooMuch("expressions this deep");
    return absl::OkStatus();
  }

  absl::Status EmitVar(int var_id) {
    auto it = std::find(vars_.begin(), vars_.end(), var_id);
    if (it == vars_.end())
      return absl::InvalidArgumentError(
          "adstack sizing: malformed expression (an unbound variable)");
    // The innermost binding of a variable wins, as in the host evaluator.
    const auto slot =
        vars_.rend() - std::find(vars_.rbegin(), vars_.rend(), var_id) - 1;
    return Push({kVar, static_cast<int64_t>(slot)});
  }

  absl::Status Children(const SizeExpr& e) {
    if (e.children().size() > static_cast<size_t>(kMaxAxes))
      return TooMuch("reads of more than 8 axes");
    for (const SizeExpr::Ptr& child : e.children()) {
      if (absl::Status s = Emit(*child); !s.ok())
        return s;
    }
    return absl::OkStatus();
  }

  absl::Status EmitField(const SizeExpr& e) {
    if (absl::Status s = Children(e); !s.ok())
      return s;
    const int n = static_cast<int>(e.children().size());
    auto layout = snodes_.Layout(e.snode_id());
    if (layout.ok() && !layout->affine()) {
      // The shader addresses fields by per-axis strides; the host sizes
      // tasks that read a blocked layout.
      return absl::UnimplementedError("a field with a blocked layout");
    }
    ir::PrimitiveType dtype = ir::PrimitiveType::kI32;
    if (layout.ok())
      dtype = snodes_.node(e.snode_id()).dtype;
    absl::StatusOr<int64_t> type = TypeCode(dtype);
    if (!type.ok())
      return type.status();
    // A place that has no layout, or indices that do not match its axes,
    // reads nothing: extents of 0 make every index out of range.
    const bool valid =
        layout.ok() && layout->shape.size() == static_cast<size_t>(n);
    words_.insert(words_.end(), {kField, n, *type, valid ? layout->offset : 0});
    for (int a = 0; a < n; ++a) {
      words_.push_back(valid ? layout->axis_stride[a] : 0);
      words_.push_back(valid ? layout->shape[a] : 0);
    }
    return Grow(1 - n);
  }

  absl::Status EmitNdRead(const SizeExpr& e) {
    if (absl::Status s = Children(e); !s.ok())
      return s;
    const int n = static_cast<int>(e.children().size());
    const bool known =
        e.arg() >= 0 && e.arg() < static_cast<int>(params_.size());
    const ir::PrimitiveType dtype =
        known ? params_[e.arg()].dtype : ir::PrimitiveType::kI32;
    absl::StatusOr<int64_t> type = TypeCode(dtype);
    if (!type.ok())
      return type.status();
    const bool valid = known && params_[e.arg()].ndim == n;
    words_.insert(words_.end(), {kNdRead, e.arg(), n, *type, valid ? 1 : 0});
    return Grow(1 - n);
  }

  absl::Status Unary(const SizeExpr& e, Op op) {
    if (absl::Status s = Emit(*e.children()[0]); !s.ok())
      return s;
    words_.push_back(op);
    return absl::OkStatus();
  }

  absl::Status Binary(const SizeExpr& e, Op op) {
    for (int k = 0; k < 2; ++k) {
      if (absl::Status s = Emit(*e.children()[k]); !s.ok())
        return s;
    }
    words_.push_back(op);
    return Grow(-1);
  }

  absl::Status EmitRange(const SizeExpr& e) {
    for (int k = 0; k < 2; ++k) {
      if (absl::Status s = Emit(*e.children()[k]); !s.ok())
        return s;
    }
    if (vars_.size() >= static_cast<size_t>(kMaxVars))
      return TooMuch("ranges nested more than 8 deep");
    const int64_t slot = static_cast<int64_t>(vars_.size());
    const size_t begin_at = words_.size();
    words_.insert(words_.end(), {kRangeBegin, slot, 0});
    // end and the running maximum stay below the body's value.
    const int64_t body = static_cast<int64_t>(words_.size());
    vars_.push_back(e.var_id());
    absl::Status s = Emit(*e.children()[2]);
    vars_.pop_back();
    if (!s.ok())
      return s;
    words_.insert(words_.end(), {kRangeNext, slot, body});
    words_[begin_at + 2] = static_cast<int64_t>(words_.size());
    // Two in (begin, end), one out; the body ran on top of end and the
    // maximum.
    return Grow(-1);
  }

  const ir::SNodeTree& snodes_;
  const std::vector<ir::KernelParam>& params_;
  std::vector<int64_t>& words_;
  int depth_ = 0;
  std::vector<int> vars_;  // bound variable per slot
};

}  // namespace

absl::StatusOr<int64_t> TypeCode(ir::PrimitiveType type) {
  auto code = [](int64_t bytes, bool is_signed, TypeKind kind) {
    return bytes | int64_t{is_signed} << 4 | int64_t{kind} << 8;
  };
  switch (type) {
    case ir::PrimitiveType::kU1:
      return code(1, false, kBool);
    case ir::PrimitiveType::kF16:
      return code(2, false, kZero);  // not a trip count type
    case ir::PrimitiveType::kF32:
      return code(4, true, kF32);
    case ir::PrimitiveType::kF64:
      return TooMuch("f64 reads");
    default:
      return code(std::max(1, ir::BitWidth(type) / 8), ir::IsSigned(type),
                  kInt);
  }
}

absl::StatusOr<std::vector<int64_t>> EncodeSizer(
    absl::Span<const AdStackSpec> stacks, const ir::SNodeTree& snodes,
    const std::vector<ir::KernelParam>& params, int64_t default_capacity) {
  std::vector<int64_t> words = {static_cast<int64_t>(stacks.size())};
  words.resize(kHeaderWords + kStackWords * stacks.size());
  for (size_t k = 0; k < stacks.size(); ++k) {
    const AdStackSpec& stack = stacks[k];
    int64_t* header = &words[kHeaderWords + kStackWords * k];
    header[0] = ir::IsFloat(stack.dtype) ? 1 : 0;
    header[1] = stack.slot_bytes;
    header[2] = static_cast<int64_t>(words.size());
    header[3] = 0;
    // Checkpoint stacks take one slot until the host segments their loop
    // (it lays out a segmented launch itself).
    if (stack.checkpoints || stack.static_capacity > 0 || !stack.size_expr) {
      const int64_t capacity =
          stack.checkpoints              ? 1
          : stack.static_capacity > 0 ? stack.static_capacity
                                        : default_capacity;
      words.insert(words.end(), {kConst, capacity, kEnd});
      continue;
    }
    words[kHeaderWords + kStackWords * k + 3] = 2;  // the setup slots
    Encoder encoder(snodes, params, words);
    if (absl::Status s = encoder.Emit(*stack.size_expr); !s.ok())
      return s;
    words.push_back(kEnd);
  }
  words.resize(words.size() + kPadWords, 0);
  return words;
}

bool ReadsData(const ir::SizeExpr& expr) {
  if (expr.kind() == ir::SizeExprKind::kFieldLoad ||
      expr.kind() == ir::SizeExprKind::kNdarrayRead)
    return true;
  return std::any_of(expr.children().begin(), expr.children().end(),
                     [](const ir::SizeExpr::Ptr& c) { return ReadsData(*c); });
}

}  // namespace quadrants::codegen::spirv::sizer
