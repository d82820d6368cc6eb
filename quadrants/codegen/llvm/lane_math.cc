// Vector math calls of SIMD lanes: whole-vector runtime functions where
// they exist, per-lane scalar calls otherwise, and fused sin/cos pairs.
#include "quadrants/codegen/llvm/lane_emitter_internal.h"

namespace quadrants::codegen::lanes {
namespace {

// Float ops with whole-vector f32 versions in the runtime module
// (qd_<op>_f32x<N>, simd_math.h); the others call the scalar function per
// lane.
bool HasVectorMath(absl::string_view name, PrimitiveType t, int lanes) {
  static const absl::flat_hash_set<absl::string_view> kOps = {
      "sin",  "cos", "tan",  "exp",  "log",
      "tanh", "pow", "asin", "acos", "atan2"};
  return t == PrimitiveType::kF32 &&
         (lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32 ||
          lanes == 64) &&
         kOps.contains(name);
}

// Whether `a` and `b`, operands of statements in `block`, hold one value:
// one statement, or loads of one local with no store to it between them
// (nor a statement with blocks, which might hold one).
bool SameValue(const ir::Block& block, const Stmt* a, const Stmt* b) {
  if (a == b)
    return true;
  if (!ir::Isa<ir::LocalLoadStmt>(a) || !ir::Isa<ir::LocalLoadStmt>(b) ||
      a->operand(0) != b->operand(0) || a->parent() != &block ||
      b->parent() != &block) {
    return false;
  }
  int seen = 0;
  for (const auto& stmt : block) {
    const Stmt* s = stmt.get();
    if (s == a || s == b) {
      if (++seen == 2)
        return true;
      continue;
    }
    const bool stores =
        ir::Isa<ir::LocalStoreStmt>(s) && s->operand(0) == a->operand(0);
    if (seen == 1 && (stores || !s->blocks().empty()))
      return false;
  }
  return false;
}

}  // namespace

llvm::Value* LaneEmitter::PerLane(const std::string& name, llvm::Type* result,
                                  std::vector<llvm::Value*> args) {
  llvm::Value* out = llvm::PoisonValue::get(ops_.Widen(result));
  for (int l = 0; l < lanes_; ++l) {
    std::vector<llvm::Value*> scalars;
    for (llvm::Value* a : args)
      scalars.push_back(b_.CreateExtractElement(a, uint64_t(l)));
    out = b_.CreateInsertElement(out, Call(name, result, scalars), uint64_t(l));
  }
  return out;
}

llvm::Value* LaneEmitter::MathCall(const char* name,
                                   std::vector<llvm::Value*> args,
                                   PrimitiveType t) {
  const bool f64 = t == PrimitiveType::kF64;
  llvm::Type* scalar = f64 ? b_.getDoubleTy() : b_.getFloatTy();
  if (!HasVectorMath(name, t, lanes_)) {
    return PerLane(absl::StrCat("qd_", name, f64 ? "_f64" : "_f32"), scalar,
                   std::move(args));
  }
  // void qd_<op>_f32x<N>(float* out, const float* in...), through
  // vector-aligned slots that SROA turns back into registers.
  llvm::Type* vector = ops_.Widen(scalar);
  std::vector<llvm::Value*> pointers = {EntryAlloca(vector, "math.out")};
  for (llvm::Value* a : args) {
    llvm::AllocaInst* slot = EntryAlloca(vector, "math.in");
    b_.CreateStore(a, slot);
    pointers.push_back(slot);
  }
  Call(absl::StrCat("qd_", name, "_f32x", lanes_), b_.getVoidTy(), pointers);
  return b_.CreateLoad(vector, pointers[0]);
}

const Stmt* LaneEmitter::TrigPartner(const ir::UnaryOpStmt& s) {
  const bool is_sin = s.op() == ir::UnaryOpKind::kSin;
  if (!is_sin && s.op() != ir::UnaryOpKind::kCos)
    return nullptr;
  if (!HasVectorMath("sin", s.input()->type().element(), lanes_))
    return nullptr;
  const auto wanted = is_sin ? ir::UnaryOpKind::kCos : ir::UnaryOpKind::kSin;
  const ir::Block& block = *s.parent();
  bool after = false;
  for (const auto& stmt : block) {
    if (stmt.get() == &s) {
      after = true;
      continue;
    }
    const auto* other = ir::DynCast<ir::UnaryOpStmt>(stmt.get());
    if (after && other != nullptr && other->op() == wanted && IsUsed(other) &&
        !values_.contains(other) &&
        SameValue(block, s.input(), other->input())) {
      return other;
    }
  }
  return nullptr;
}

std::pair<llvm::Value*, llvm::Value*> LaneEmitter::SinCos(llvm::Value* x) {
  llvm::Type* vector = x->getType();
  llvm::AllocaInst* sin_out = EntryAlloca(vector, "sincos.sin");
  llvm::AllocaInst* cos_out = EntryAlloca(vector, "sincos.cos");
  llvm::AllocaInst* in = EntryAlloca(vector, "sincos.in");
  b_.CreateStore(x, in);
  Call(absl::StrCat("qd_sincos_f32x", lanes_), b_.getVoidTy(),
       {sin_out, cos_out, in});
  return {b_.CreateLoad(vector, sin_out), b_.CreateLoad(vector, cos_out)};
}

llvm::Value* LaneEmitter::IntCall(const char* name, llvm::Value* a,
                                  llvm::Value* b, PrimitiveType t) {
  // Narrow integers run in 32 bits with their signedness, then truncate;
  // per lane, so a zero divisor in an idle lane stays harmless.
  const bool wide = ir::BitWidth(t) == 64;
  const bool is_signed = ir::IsSigned(t);
  llvm::Type* work = wide ? b_.getInt64Ty() : b_.getInt32Ty();
  llvm::Value* x = b_.CreateIntCast(a, ops_.Widen(work), is_signed);
  llvm::Value* y = b_.CreateIntCast(b, ops_.Widen(work), is_signed);
  llvm::Value* r = nullptr;
  const absl::string_view op = name;
  if (!wide && (op == "floordiv" || op == "mod")) {
    r = DivideThroughF64(op == "mod", x, y, is_signed);
  } else {
    const char* suffix =
        wide ? (is_signed ? "_i64" : "_u64") : (is_signed ? "_i32" : "_u32");
    r = PerLane(absl::StrCat("qd_", name, suffix), work, {x, y});
  }
  return b_.CreateIntCast(r, ops_.RegisterType(t), is_signed);
}

// 32-bit floor division and modulo with the runtime's semantics (Python's
// signs; a zero divisor gives 0), in vector f64 arithmetic: CPUs divide no
// integer vectors, and per-lane divisions are slow to run and to compile.
// For |a|, |b| < 2^32 the rounded f64 quotient q differs from a / b by at
// most 2^-21 / |b|, less than its distance 1 / |b| from the next integer,
// so floor(q) is exact.
llvm::Value* LaneEmitter::DivideThroughF64(bool modulo, llvm::Value* x,
                                           llvm::Value* y, bool is_signed) {
  llvm::Type* f64 = ops_.Widen(b_.getDoubleTy());
  llvm::Type* i64 = ops_.Widen(b_.getInt64Ty());
  llvm::Type* i32 = x->getType();
  auto to_f64 = [&](llvm::Value* v) {
    return is_signed ? b_.CreateSIToFP(v, f64) : b_.CreateUIToFP(v, f64);
  };
  llvm::Value* zero = llvm::Constant::getNullValue(i32);
  llvm::Value* by_zero = b_.CreateICmpEQ(y, zero);
  // A zero divisor divides by 1 instead: no infinity reaches the conversion.
  llvm::Value* divisor =
      b_.CreateSelect(by_zero, llvm::ConstantInt::get(i32, 1), y);
  llvm::Value* quotient = b_.CreateUnaryIntrinsic(
      llvm::Intrinsic::floor, b_.CreateFDiv(to_f64(x), to_f64(divisor)));
  // Through i64: INT_MIN / -1 = 2^31 wraps as the runtime's division does.
  llvm::Value* q = b_.CreateTrunc(b_.CreateFPToSI(quotient, i64), i32);
  if (!modulo)
    return b_.CreateSelect(by_zero, zero, q);
  // a - b q; a divisor of -1 (signed) leaves 0, as the runtime's modulo.
  return b_.CreateSelect(by_zero, zero, b_.CreateSub(x, b_.CreateMul(y, q)));
}

}  // namespace quadrants::codegen::lanes
