#include "quadrants/codegen/llvm/elementwise.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"
#include "quadrants/common/errors.h"

namespace quadrants::codegen {

using ir::BinaryOpKind;
using ir::PrimitiveType;
using ir::UnaryOpKind;

llvm::Type* Elementwise::ScalarType(PrimitiveType t) const {
  switch (t) {
    case PrimitiveType::kU1:
      return b_.getInt1Ty();
    case PrimitiveType::kI8:
    case PrimitiveType::kU8:
      return b_.getInt8Ty();
    case PrimitiveType::kI16:
    case PrimitiveType::kU16:
      return b_.getInt16Ty();
    case PrimitiveType::kI32:
    case PrimitiveType::kU32:
      return b_.getInt32Ty();
    case PrimitiveType::kI64:
    case PrimitiveType::kU64:
      return b_.getInt64Ty();
    case PrimitiveType::kF16:
      return b_.getHalfTy();
    case PrimitiveType::kF32:
      return b_.getFloatTy();
    case PrimitiveType::kF64:
      return b_.getDoubleTy();
  }
  return b_.getInt32Ty();
}

llvm::Type* Elementwise::Widen(llvm::Type* type) const {
  if (lanes_ == 0)
    return type;
  return llvm::FixedVectorType::get(type, lanes_);
}

llvm::Type* Elementwise::RegisterType(PrimitiveType t) const {
  return Widen(ScalarType(t));
}

llvm::Value* Elementwise::AsBool(llvm::Value* v, PrimitiveType t) {
  if (t == PrimitiveType::kU1)
    return v;
  if (ir::IsFloat(t))
    return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
  return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
}

llvm::Value* Elementwise::ToI64(llvm::Value* v, PrimitiveType t) {
  if (ir::IsFloat(t))
    return Cast(v, t, PrimitiveType::kI64);
  llvm::Type* i64 = Widen(b_.getInt64Ty());
  return ir::IsSigned(t) ? b_.CreateSExt(v, i64) : b_.CreateZExt(v, i64);
}

llvm::Value* Elementwise::Cast(llvm::Value* v, PrimitiveType from,
                               PrimitiveType to) {
  if (from == to)
    return v;
  llvm::Type* target = RegisterType(to);
  if (to == PrimitiveType::kU1)
    return AsBool(v, from);
  const bool from_float = ir::IsFloat(from), to_float = ir::IsFloat(to);
  if (from_float && to_float)
    return b_.CreateFPCast(v, target);
  if (!from_float && to_float) {
    return ir::IsSigned(from) ? b_.CreateSIToFP(v, target)
                              : b_.CreateUIToFP(v, target);
  }
  if (from_float) {
    // Saturating conversion: out-of-range values clamp, NaN gives 0, as the
    // constant folder does.
    auto id = ir::IsSigned(to) ? llvm::Intrinsic::fptosi_sat
                               : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {target, v->getType()}, {v});
  }
  return b_.CreateIntCast(v, target, ir::IsSigned(from));
}

llvm::Value* Elementwise::Math(const char* name, std::vector<llvm::Value*> args,
                               PrimitiveType t) {
  const bool half = t == PrimitiveType::kF16;
  if (half) {
    for (auto& a : args)
      a = b_.CreateFPExt(a, Widen(b_.getFloatTy()));
  }
  llvm::Value* r = math_(name, std::move(args), half ? PrimitiveType::kF32 : t);
  return half ? b_.CreateFPTrunc(r, Widen(b_.getHalfTy())) : r;
}

llvm::Value* Elementwise::Unary(UnaryOpKind op, llvm::Value* x,
                                PrimitiveType in, PrimitiveType out) {
  const bool is_float = ir::IsFloat(in);
  switch (op) {
    case UnaryOpKind::kCast:
      return Cast(x, in, out);
    case UnaryOpKind::kNeg:
      return is_float ? b_.CreateFNeg(x) : b_.CreateNeg(x);
    case UnaryOpKind::kBitNot:
      return b_.CreateNot(x);
    case UnaryOpKind::kLogicalNot:
      return b_.CreateNot(AsBool(x, in));
    case UnaryOpKind::kAbs:
      if (is_float)
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
      if (!ir::IsSigned(in))
        return x;
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
    case UnaryOpKind::kStopGrad:
      return x;  // the value itself; only autodiff treats it as a constant
    case UnaryOpKind::kFloor:
      return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x) : x;
    case UnaryOpKind::kCeil:
      return is_float ? b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x) : x;
    case UnaryOpKind::kSqrt:
      return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case UnaryOpKind::kRsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0),
                           b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case UnaryOpKind::kSin:
      return Math("sin", {x}, in);
    case UnaryOpKind::kCos:
      return Math("cos", {x}, in);
    case UnaryOpKind::kTan:
      return Math("tan", {x}, in);
    case UnaryOpKind::kTanh:
      return Math("tanh", {x}, in);
    case UnaryOpKind::kExp:
      return Math("exp", {x}, in);
    case UnaryOpKind::kLog:
      return Math("log", {x}, in);
    case UnaryOpKind::kAsin:
      return Math("asin", {x}, in);
    case UnaryOpKind::kAcos:
      return Math("acos", {x}, in);
    case UnaryOpKind::kRound:
      return Round(x);
    case UnaryOpKind::kClz:
    case UnaryOpKind::kPopcnt:
    case UnaryOpKind::kFfs:
      return BitCount(op, x);
    case UnaryOpKind::kBitCast:
      return b_.CreateBitCast(x, RegisterType(out));
    case UnaryOpKind::kFrexpMantissa:
      return Frexp(x, in).first;
    case UnaryOpKind::kFrexpExponent:
      return Frexp(x, in).second;
  }
  return nullptr;
}

llvm::Value* Elementwise::Round(llvm::Value* x) {
  // x - trunc(x) is exact, so comparing it with 1/2 decides; adding 0.5
  // and truncating would round 0.49999997f up.
  llvm::Type* type = x->getType();
  llvm::Value* t = b_.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, x);
  llvm::Value* frac =
      b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, b_.CreateFSub(x, t));
  llvm::Value* away = b_.CreateFAdd(
      t, b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                  llvm::ConstantFP::get(type, 1.0), x));
  return b_.CreateSelect(
      b_.CreateFCmpOGE(frac, llvm::ConstantFP::get(type, 0.5)), away, t);
}

llvm::Value* Elementwise::BitCount(UnaryOpKind op, llvm::Value* x) {
  llvm::Type* type = x->getType();
  llvm::Value* r;
  if (op == UnaryOpKind::kClz) {
    r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, b_.getFalse());
  } else if (op == UnaryOpKind::kPopcnt) {
    r = b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, x);
  } else {
    // ffs: 1-based index of the lowest set bit, 0 when none is.
    llvm::Value* zero = llvm::ConstantInt::get(type, 0);
    llvm::Value* tz =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, x, b_.getFalse());
    r = b_.CreateSelect(b_.CreateICmpEQ(x, zero), zero,
                        b_.CreateAdd(tz, llvm::ConstantInt::get(type, 1)));
  }
  return b_.CreateZExtOrTrunc(r, Widen(b_.getInt32Ty()));
}

std::pair<llvm::Value*, llvm::Value*> Elementwise::Frexp(llvm::Value* x,
                                                         PrimitiveType t) {
  if (t == PrimitiveType::kF16) {
    // Every half is a normal f32; the mantissa narrows back exactly.
    auto [m, e] =
        Frexp(b_.CreateFPExt(x, Widen(b_.getFloatTy())), PrimitiveType::kF32);
    return {b_.CreateFPTrunc(m, Widen(b_.getHalfTy())), e};
  }
  const bool wide = t == PrimitiveType::kF64;
  const int width = wide ? 64 : 32;
  const int mant = wide ? 52 : 23;  // stored fraction bits
  const int bias = wide ? 1023 : 127;
  const uint64_t exp_mask = wide ? 0x7ff : 0xff;
  llvm::Type* it = Widen(wide ? b_.getInt64Ty() : b_.getInt32Ty());
  auto c = [&](uint64_t v) { return llvm::ConstantInt::get(it, v); };
  llvm::Value* bits = b_.CreateBitCast(x, it);
  llvm::Value* field = b_.CreateAnd(b_.CreateLShr(bits, c(mant)), c(exp_mask));
  llvm::Value* frac = b_.CreateAnd(bits, c((uint64_t{1} << mant) - 1));
  llvm::Value* sign = b_.CreateAnd(bits, c(uint64_t{1} << (width - 1)));
  // A subnormal's fraction, of highest set bit p, is normalized by shifting
  // that bit to the implicit one's place; its exponent is p + 2 - bias - mant.
  llvm::Value* lz =
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, frac, b_.getFalse());
  llvm::Value* p = b_.CreateSub(c(width - 1), lz);
  llvm::Value* sub_frac =
      b_.CreateAnd(b_.CreateShl(frac, b_.CreateSub(c(mant), p)),
                   c((uint64_t{1} << mant) - 1));
  llvm::Value* subnormal = b_.CreateICmpEQ(field, c(0));
  llvm::Value* exponent =
      b_.CreateSelect(subnormal, b_.CreateSub(p, c(bias + mant - 2)),
                      b_.CreateSub(field, c(bias - 1)));
  llvm::Value* mantissa_bits =
      b_.CreateOr(b_.CreateOr(sign, c(uint64_t(bias - 1) << mant)),
                  b_.CreateSelect(subnormal, sub_frac, frac));
  // Zero, infinities and NaN: x itself, exponent 0.
  llvm::Value* special =
      b_.CreateOr(b_.CreateICmpEQ(field, c(exp_mask)),
                  b_.CreateAnd(subnormal, b_.CreateICmpEQ(frac, c(0))));
  llvm::Value* mantissa = b_.CreateSelect(
      special, x, b_.CreateBitCast(mantissa_bits, x->getType()));
  exponent = b_.CreateSelect(special, c(0), exponent);
  return {mantissa, b_.CreateTrunc(exponent, Widen(b_.getInt32Ty()))};
}

llvm::Value* Elementwise::Binary(BinaryOpKind op, llvm::Value* x,
                                 llvm::Value* y, PrimitiveType t) {
  const bool f = ir::IsFloat(t);
  const bool sgn = ir::IsSigned(t);
  switch (op) {
    case BinaryOpKind::kAdd:
      return f ? b_.CreateFAdd(x, y) : b_.CreateAdd(x, y);
    case BinaryOpKind::kSub:
      return f ? b_.CreateFSub(x, y) : b_.CreateSub(x, y);
    case BinaryOpKind::kMul:
      return f ? b_.CreateFMul(x, y) : b_.CreateMul(x, y);
    case BinaryOpKind::kDiv:
      return b_.CreateFDiv(x, y);
    case BinaryOpKind::kFloorDiv:
      if (f)
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor,
                                       b_.CreateFDiv(x, y));
      return int_("floordiv", x, y, t);
    case BinaryOpKind::kMod:
      if (f) {
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor,
                                                 b_.CreateFDiv(x, y));
        return b_.CreateFSub(x, b_.CreateFMul(y, q));
      }
      return int_("mod", x, y, t);
    case BinaryOpKind::kPow:
      if (f)
        return Math("pow", {x, y}, t);
      return int_("pow", x, y, t);
    case BinaryOpKind::kAtan2:
      return Math("atan2", {x, y}, t);
    case BinaryOpKind::kMin:
      return b_.CreateBinaryIntrinsic(
          f ? llvm::Intrinsic::minnum
            : (sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin),
          x, y);
    case BinaryOpKind::kMax:
      return b_.CreateBinaryIntrinsic(
          f ? llvm::Intrinsic::maxnum
            : (sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax),
          x, y);
    case BinaryOpKind::kBitAnd:
      return b_.CreateAnd(x, y);
    case BinaryOpKind::kBitOr:
      return b_.CreateOr(x, y);
    case BinaryOpKind::kBitXor:
      return b_.CreateXor(x, y);
    case BinaryOpKind::kShl:
    case BinaryOpKind::kShr: {
      // Shift amounts wrap at the width, as on x86, instead of being poison.
      const int width = ir::BitWidth(t);
      llvm::Value* amount =
          width > 1
              ? b_.CreateAnd(y, llvm::ConstantInt::get(y->getType(), width - 1))
              : y;
      if (op == BinaryOpKind::kShl)
        return b_.CreateShl(x, amount);
      return sgn ? b_.CreateAShr(x, amount) : b_.CreateLShr(x, amount);
    }
    case BinaryOpKind::kLt:
      return f ? b_.CreateFCmpOLT(x, y)
               : (sgn ? b_.CreateICmpSLT(x, y) : b_.CreateICmpULT(x, y));
    case BinaryOpKind::kLe:
      return f ? b_.CreateFCmpOLE(x, y)
               : (sgn ? b_.CreateICmpSLE(x, y) : b_.CreateICmpULE(x, y));
    case BinaryOpKind::kGt:
      return f ? b_.CreateFCmpOGT(x, y)
               : (sgn ? b_.CreateICmpSGT(x, y) : b_.CreateICmpUGT(x, y));
    case BinaryOpKind::kGe:
      return f ? b_.CreateFCmpOGE(x, y)
               : (sgn ? b_.CreateICmpSGE(x, y) : b_.CreateICmpUGE(x, y));
    case BinaryOpKind::kEq:
      return f ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y);
    case BinaryOpKind::kNe:
      return f ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y);
    case BinaryOpKind::kLogicalAnd:
      return b_.CreateAnd(AsBool(x, t), AsBool(y, t));
    case BinaryOpKind::kLogicalOr:
      return b_.CreateOr(AsBool(x, t), AsBool(y, t));
  }
  return nullptr;
}

llvm::Value* Elementwise::Constant(const ir::Constant& c) {
  llvm::Type* type = RegisterType(c.type());
  if (c.is_float())
    return llvm::ConstantFP::get(type, c.as_float());
  return llvm::ConstantInt::get(type, c.as_uint(), ir::IsSigned(c.type()));
}

llvm::Value* Elementwise::FromRandomBits(llvm::Value* bits, PrimitiveType t) {
  // Floats take their top mantissa-many bits: k / 2^p for k < 2^p, exact
  // in the type and never 1.
  auto unit = [&](int precision) {
    llvm::Value* k = b_.CreateLShr(
        bits, llvm::ConstantInt::get(bits->getType(), 64 - precision));
    llvm::Type* type = RegisterType(t);
    return b_.CreateFMul(
        b_.CreateUIToFP(k, type),
        llvm::ConstantFP::get(type, std::ldexp(1.0, -precision)));
  };
  if (ir::IsFloat(t))
    return unit(ir::MantissaBits(t));
  switch (t) {
    case PrimitiveType::kU1:  // the top bit
      return b_.CreateICmpSLT(bits, llvm::ConstantInt::get(bits->getType(), 0));
    default:
      // Integers keep the low bits: every value is equally likely.
      return b_.CreateTrunc(bits, RegisterType(t));
  }
}

llvm::Value* Elementwise::DecodeArgument(llvm::Value* slot, PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF64:
      return b_.CreateBitCast(slot, b_.getDoubleTy());
    case PrimitiveType::kF32:
      return b_.CreateBitCast(b_.CreateTrunc(slot, b_.getInt32Ty()),
                              b_.getFloatTy());
    case PrimitiveType::kF16:
      return b_.CreateBitCast(b_.CreateTrunc(slot, b_.getInt16Ty()),
                              b_.getHalfTy());
    case PrimitiveType::kU1:
      return b_.CreateICmpNE(slot, b_.getInt64(0));
    default:
      return b_.CreateTrunc(slot, ScalarType(t));
  }
}

std::vector<llvm::Value*> Elementwise::DecomposeCell(
    const std::vector<std::pair<int, int64_t>>& axes, llvm::Value* linear) {
  const int num_axes = axes.empty() ? 0 : axes.back().first + 1;
  llvm::Type* i32 = Widen(b_.getInt32Ty());
  std::vector<llvm::Value*> indices(num_axes, llvm::ConstantInt::get(i32, 0));
  // Row-major over the axes in order: the last axis varies fastest.
  for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
    llvm::Value* size =
        llvm::ConstantInt::get(linear->getType(), axes[k].second);
    indices[axes[k].first] = b_.CreateTrunc(b_.CreateSRem(linear, size), i32);
    linear = b_.CreateSDiv(linear, size);
  }
  return indices;
}

absl::StatusOr<llvm::AtomicRMWInst::BinOp> AtomicBinOp(
    const ir::AtomicOpStmt& s, absl::string_view kernel) {
  using Op = llvm::AtomicRMWInst::BinOp;
  const PrimitiveType t = s.type().element();
  const bool f = ir::IsFloat(t);
  const bool sgn = ir::IsSigned(t);
  switch (s.op()) {
    case ir::AtomicOpKind::kAdd:
      return f ? Op::FAdd : Op::Add;
    case ir::AtomicOpKind::kSub:
      return f ? Op::FSub : Op::Sub;
    case ir::AtomicOpKind::kMin:
      return f ? Op::FMin : (sgn ? Op::Min : Op::UMin);
    case ir::AtomicOpKind::kMax:
      return f ? Op::FMax : (sgn ? Op::Max : Op::UMax);
    case ir::AtomicOpKind::kExchange:
      return Op::Xchg;
    case ir::AtomicOpKind::kMul:
    case ir::AtomicOpKind::kCas:
      return MakeError(
          ErrorKind::kCompilation, s.loc(),
          absl::StrCat("in kernel '", kernel, "': ", ir::OpName(s.op()),
                       " has no atomicrmw form"));
    case ir::AtomicOpKind::kBitAnd:
    case ir::AtomicOpKind::kBitOr:
    case ir::AtomicOpKind::kBitXor:
      break;
  }
  if (f) {
    return MakeError(
        ErrorKind::kType, s.loc(),
        absl::StrCat("in kernel '", kernel, "': ", ir::OpName(s.op()),
                     " needs an integer target"));
  }
  switch (s.op()) {
    case ir::AtomicOpKind::kBitAnd:
      return Op::And;
    case ir::AtomicOpKind::kBitOr:
      return Op::Or;
    default:
      return Op::Xor;
  }
}

namespace {

// atomic_mul: a compare-exchange loop on the element's bits.
llvm::Value* AtomicMulLoop(llvm::IRBuilder<>& b, llvm::Value* ptr,
                           llvm::Value* value, bool is_float) {
  llvm::Type* type = value->getType();
  const unsigned bits = type->getPrimitiveSizeInBits();
  llvm::Type* word = b.getIntNTy(bits);
  llvm::BasicBlock* start = b.GetInsertBlock();
  llvm::Function* function = start->getParent();
  llvm::LLVMContext& context = function->getContext();
  auto* loop = llvm::BasicBlock::Create(context, "atomic_mul.loop", function);
  auto* done = llvm::BasicBlock::Create(context, "atomic_mul.done", function);
  llvm::LoadInst* first = b.CreateLoad(word, ptr);
  first->setAtomic(llvm::AtomicOrdering::Monotonic);
  first->setAlignment(llvm::Align(bits / 8));
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* old_bits = b.CreatePHI(word, 2);
  old_bits->addIncoming(first, start);
  llvm::Value* old = b.CreateBitCast(old_bits, type);
  llvm::Value* product =
      is_float ? b.CreateFMul(old, value) : b.CreateMul(old, value);
  llvm::Value* pair = b.CreateAtomicCmpXchg(
      ptr, old_bits, b.CreateBitCast(product, word), llvm::MaybeAlign(),
      llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  old_bits->addIncoming(b.CreateExtractValue(pair, 0), loop);
  b.CreateCondBr(b.CreateExtractValue(pair, 1), done, loop);
  b.SetInsertPoint(done);
  return old;
}

}  // namespace

bool IsCombinableAtomic(ir::AtomicOpKind op) {
  return op != ir::AtomicOpKind::kMul && op != ir::AtomicOpKind::kExchange &&
         op != ir::AtomicOpKind::kCas;
}

absl::StatusOr<llvm::Value*> EmitScalarAtomic(
    llvm::IRBuilder<>& b, const ir::AtomicOpStmt& s, absl::string_view kernel,
    llvm::Value* ptr, llvm::Value* value, llvm::Value* expected) {
  if (s.op() == ir::AtomicOpKind::kCas) {
    llvm::Value* pair = b.CreateAtomicCmpXchg(
        ptr, expected, value, llvm::MaybeAlign(),
        llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
    return b.CreateExtractValue(pair, 0);
  }
  if (s.op() == ir::AtomicOpKind::kMul)
    return AtomicMulLoop(b, ptr, value, ir::IsFloat(s.type().element()));
  absl::StatusOr<llvm::AtomicRMWInst::BinOp> op = AtomicBinOp(s, kernel);
  if (!op.ok())
    return op.status();
  return b.CreateAtomicRMW(*op, ptr, value, llvm::MaybeAlign(),
                           llvm::AtomicOrdering::Monotonic);
}

llvm::Value* CallRuntime(llvm::IRBuilder<>& b, const std::string& name,
                         llvm::Type* result, std::vector<llvm::Value*> args) {
  std::vector<llvm::Type*> params;
  for (llvm::Value* a : args)
    params.push_back(a->getType());
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee callee = module->getOrInsertFunction(
      name, llvm::FunctionType::get(result, params, false));
  return b.CreateCall(callee, args);
}

}  // namespace quadrants::codegen
