#include "quadrants/codegen/llvm/adstack_slots.h"

#include <algorithm>

#include "llvm/IR/Intrinsics.h"
#include "quadrants/ir/walk.h"

namespace quadrants::codegen {

absl::flat_hash_set<const ir::Stmt*> StacksWithAdjoints(
    const ir::Kernel& kernel) {
  absl::flat_hash_set<const ir::Stmt*> stacks;
  ir::WalkKernel(kernel, [&](const ir::Stmt* stmt) {
    if (ir::Isa<ir::AdStackLoadTopAdjStmt>(stmt) ||
        ir::Isa<ir::AdStackAccAdjointStmt>(stmt)) {
      stacks.insert(stmt->operand(0));
    }
  });
  return stacks;
}

PushTarget EmitCheckedPushTarget(llvm::IRBuilder<>& b, llvm::Value* count,
                                 llvm::Value* capacity, llvm::Value* fits,
                                 llvm::Value* any_full,
                                 const std::function<void()>& report_overflow) {
  llvm::Function* function = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& context = b.getContext();
  auto* overflow =
      llvm::BasicBlock::Create(context, "adstack.overflow", function);
  auto* merge = llvm::BasicBlock::Create(context, "adstack.push", function);
  b.CreateCondBr(any_full, overflow, merge);
  b.SetInsertPoint(overflow);
  report_overflow();
  b.CreateBr(merge);
  b.SetInsertPoint(merge);
  llvm::Value* one = llvm::ConstantInt::get(count->getType(), 1);
  llvm::Value* zero = llvm::ConstantInt::get(count->getType(), 0);
  llvm::Value* last = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                              b.CreateSub(capacity, one), zero);
  return {b.CreateSelect(fits, count, last),
          b.CreateSelect(fits, b.CreateAdd(count, one), capacity)};
}

}  // namespace quadrants::codegen
