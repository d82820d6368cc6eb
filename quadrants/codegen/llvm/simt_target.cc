#include "quadrants/codegen/llvm/simt_target.h"

namespace quadrants::codegen {

absl::StatusOr<llvm::Value*> FitSimtResult(llvm::IRBuilder<>& b,
                                           absl::StatusOr<llvm::Value*> value,
                                           llvm::Type* result) {
  if (!value.ok() || result->isVoidTy() || *value == nullptr)
    return value;
  if ((*value)->getType()->isIntegerTy() && result->isIntegerTy())
    return b.CreateZExtOrTrunc(*value, result);
  return value;
}

llvm::Value* ShuffleWords(
    llvm::IRBuilder<>& b, llvm::Value* value,
    const std::function<llvm::Value*(llvm::Value*)>& shuffle32) {
  llvm::Type* type = value->getType();
  const unsigned bits = type->getPrimitiveSizeInBits();
  llvm::Type* as_int = b.getIntNTy(bits);
  llvm::Value* v = type->isIntegerTy() ? value : b.CreateBitCast(value, as_int);
  if (bits <= 32) {
    llvm::Value* word = shuffle32(b.CreateZExt(v, b.getInt32Ty()));
    llvm::Value* back = b.CreateTrunc(word, as_int);
    return type->isIntegerTy() ? back : b.CreateBitCast(back, type);
  }
  llvm::Value* out = llvm::ConstantInt::get(as_int, 0);
  for (unsigned shift = 0; shift < bits; shift += 32) {
    llvm::Value* word = b.CreateTrunc(
        b.CreateLShr(v, llvm::ConstantInt::get(as_int, shift)), b.getInt32Ty());
    llvm::Value* moved = b.CreateZExt(shuffle32(word), as_int);
    out = b.CreateOr(out, b.CreateShl(moved, llvm::ConstantInt::get(as_int, shift)));
  }
  return type->isIntegerTy() ? out : b.CreateBitCast(out, type);
}

}  // namespace quadrants::codegen
