#include "quadrants/codegen/llvm/warp_atomics.h"

#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

namespace quadrants::codegen {
namespace {

// value summed over the 32 lanes (every lane gets the sum); all lanes must
// be active.
llvm::Value* WarpSum(llvm::IRBuilder<>& b, llvm::Value* value) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::Type* type = value->getType();
  const bool f64 = type->isDoubleTy();
  llvm::Function* shuffle = llvm::Intrinsic::getDeclaration(
      module, f64 ? llvm::Intrinsic::nvvm_shfl_sync_bfly_i32
                  : llvm::Intrinsic::nvvm_shfl_sync_bfly_f32);
  llvm::Value* all = b.getInt32(-1);
  for (int offset = 16; offset >= 1; offset /= 2) {
    llvm::Value* other = nullptr;
    if (f64) {
      // 64-bit values cross lanes as two 32-bit halves.
      llvm::Value* bits = b.CreateBitCast(value, b.getInt64Ty());
      llvm::Value* lo = b.CreateTrunc(bits, b.getInt32Ty());
      llvm::Value* hi = b.CreateTrunc(b.CreateLShr(bits, 32), b.getInt32Ty());
      lo = b.CreateCall(shuffle, {all, lo, b.getInt32(offset), b.getInt32(31)});
      hi = b.CreateCall(shuffle, {all, hi, b.getInt32(offset), b.getInt32(31)});
      llvm::Value* joined =
          b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()),
                     b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
      other = b.CreateBitCast(joined, type);
    } else {
      other = b.CreateCall(shuffle,
                           {all, value, b.getInt32(offset), b.getInt32(31)});
    }
    value = b.CreateFAdd(value, other);
  }
  return value;
}

}  // namespace

void EmitWarpAggregatedAdd(llvm::IRBuilder<>& b, llvm::Value* ptr,
                           llvm::Value* value) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& context = b.getContext();
  auto* full = llvm::BasicBlock::Create(context, "warp.full", fn);
  auto* leader = llvm::BasicBlock::Create(context, "warp.leader", fn);
  auto* partial = llvm::BasicBlock::Create(context, "warp.partial", fn);
  auto* done = llvm::BasicBlock::Create(context, "warp.done", fn);
  llvm::Value* active = b.CreateCall(llvm::Intrinsic::getDeclaration(
      module, llvm::Intrinsic::nvvm_activemask));
  b.CreateCondBr(b.CreateICmpEQ(active, b.getInt32(-1)), full, partial);

  b.SetInsertPoint(full);
  llvm::Value* sum = WarpSum(b, value);
  llvm::Value* lane = b.CreateCall(llvm::Intrinsic::getDeclaration(
      module, llvm::Intrinsic::nvvm_read_ptx_sreg_laneid));
  b.CreateCondBr(b.CreateICmpEQ(lane, b.getInt32(0)), leader, done);

  b.SetInsertPoint(leader);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, ptr, sum, llvm::MaybeAlign(),
                    llvm::AtomicOrdering::Monotonic);
  b.CreateBr(done);

  b.SetInsertPoint(partial);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::FAdd, ptr, value, llvm::MaybeAlign(),
                    llvm::AtomicOrdering::Monotonic);
  b.CreateBr(done);

  b.SetInsertPoint(done);
}

}  // namespace quadrants::codegen
