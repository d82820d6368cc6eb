#include "quadrants/codegen/llvm/graph_loop_kernels.h"

#include "llvm/IR/IRBuilder.h"

namespace quadrants::codegen {

std::unique_ptr<llvm::Module> BuildGraphLoopKernels(
    const GpuEntryTarget& target, llvm::LLVMContext& context,
    const std::string& triple, const std::string& data_layout,
    const std::string& set_condition) {
  auto module = std::make_unique<llvm::Module>("qd_graph_loop", context);
  module->setTargetTriple(triple);
  module->setDataLayout(data_layout);
  llvm::IRBuilder<> b(context);
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Type* global = b.getPtrTy(target.global_address_space);
  llvm::FunctionCallee set = module->getOrInsertFunction(
      set_condition, llvm::FunctionType::get(b.getVoidTy(), {i64, i32}, false));

  auto entry = [&](const char* name, std::vector<llvm::Type*> params) {
    auto* fn = llvm::Function::Create(
        llvm::FunctionType::get(b.getVoidTy(), params, false),
        llvm::Function::ExternalLinkage, name, *module);
    target.mark_kernel(fn);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", fn));
    return fn;
  };

  llvm::Function* arm = entry(kGraphLoopArmEntry, {i64});
  b.CreateCall(set, {arm->getArg(0), b.getInt32(1)});
  b.CreateRetVoid();

  llvm::Function* check = entry(kGraphLoopCheckEntry, {i64, global});
  // Volatile: the counter was written by the body's kernels, and each
  // iteration must read it again.
  llvm::Value* counter = b.CreateAlignedLoad(global, check->getArg(1),
                                             llvm::MaybeAlign(8), true);
  llvm::Value* value = b.CreateAlignedLoad(i32, counter, llvm::MaybeAlign(4), true);
  llvm::Value* again = b.CreateZExt(b.CreateICmpNE(value, b.getInt32(0)), i32);
  b.CreateCall(set, {check->getArg(0), again});
  b.CreateRetVoid();
  return module;
}

}  // namespace quadrants::codegen
