#include "quadrants/codegen/llvm/gpu_entries.h"

namespace quadrants::codegen {
namespace {

llvm::Function* CreateEntry(llvm::Module& module, const std::string& name,
                            llvm::ArrayRef<llvm::Type*> params) {
  llvm::LLVMContext& context = module.getContext();
  auto* type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(context), params, false);
  return llvm::Function::Create(type, llvm::Function::ExternalLinkage, name,
                                module);
}

// Calls `task` for i = begin + thread, stepping by the threads launched,
// and returns from `entry`.
void EmitGridStride(llvm::IRBuilder<>& b, const GpuEntryTarget& target,
                    llvm::Function* entry, llvm::Function* task,
                    llvm::Value* begin, llvm::Value* end) {
  llvm::LLVMContext& context = entry->getContext();
  llvm::Value* thread = target.thread_index(b);
  llvm::Value* step = target.thread_count(b);
  llvm::BasicBlock* head = llvm::BasicBlock::Create(context, "head", entry);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(context, "body", entry);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(context, "done", entry);
  llvm::BasicBlock* start = b.GetInsertBlock();
  llvm::Value* first = b.CreateAdd(begin, thread);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(first, start);
  b.CreateCondBr(b.CreateICmpSLT(i, end), body, done);
  b.SetInsertPoint(body);
  b.CreateCall(task, {entry->getArg(0), i, b.CreateAdd(i, b.getInt64(1)),
                      b.CreateTrunc(thread, b.getInt32Ty())});
  i->addIncoming(b.CreateAdd(i, step), body);
  b.CreateBr(head);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

// void <fn>_entry(ptr ctx, i64 begin, i64 end): grid-stride over the range.
void AddTaskEntry(llvm::Module& module, const std::string& function,
                  const GpuEntryTarget& target) {
  llvm::LLVMContext& context = module.getContext();
  auto* i64 = llvm::Type::getInt64Ty(context);
  llvm::Function* entry =
      CreateEntry(module, GpuEntryName(function),
                  {llvm::PointerType::get(context, 0), i64, i64});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", entry));
  EmitGridStride(b, target, entry, module.getFunction(function),
                 entry->getArg(1), entry->getArg(2));
  target.mark_kernel(entry);
}

// void <fn>_device_range_entry(ptr ctx): every thread evaluates the bounds
// function, then runs its share of the range grid-stride. The launch needs
// no range from the host, so it can be queued or replayed in a graph.
void AddDeviceRangeEntry(llvm::Module& module, const std::string& function,
                         const std::string& bounds_function,
                         const GpuEntryTarget& target) {
  llvm::LLVMContext& context = module.getContext();
  llvm::Function* entry = CreateEntry(module, GpuDeviceRangeEntryName(function),
                                      {llvm::PointerType::get(context, 0)});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", entry));
  llvm::Type* pair = llvm::ArrayType::get(b.getInt64Ty(), 2);
  llvm::Value* range = b.CreateAlloca(pair);
  b.CreateCall(module.getFunction(bounds_function), {entry->getArg(0), range});
  llvm::Value* begin = b.CreateLoad(b.getInt64Ty(), range);
  llvm::Value* end = b.CreateLoad(
      b.getInt64Ty(), b.CreateConstInBoundsGEP2_32(pair, range, 0, 1));
  EmitGridStride(b, target, entry, module.getFunction(function), begin, end);
  target.mark_kernel(entry);
}

// void <bounds>_entry(ptr ctx, ptr out): the bounds function, one thread.
void AddBoundsEntry(llvm::Module& module, const std::string& function,
                    const GpuEntryTarget& target) {
  llvm::LLVMContext& context = module.getContext();
  auto* ptr = llvm::PointerType::get(context, 0);
  llvm::Function* entry =
      CreateEntry(module, GpuEntryName(function), {ptr, ptr});
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", entry));
  b.CreateCall(module.getFunction(function),
               {entry->getArg(0), entry->getArg(1)});
  b.CreateRetVoid();
  target.mark_kernel(entry);
}

}  // namespace

std::vector<std::string> AddGpuEntries(llvm::Module& module,
                                       const std::vector<CompiledTask>& tasks,
                                       const GpuEntryTarget& target) {
  std::vector<std::string> entries;
  for (const CompiledTask& task : tasks) {
    AddTaskEntry(module, task.function, target);
    entries.push_back(GpuEntryName(task.function));
    if (!task.bounds_function.empty()) {
      AddBoundsEntry(module, task.bounds_function, target);
      entries.push_back(GpuEntryName(task.bounds_function));
      AddDeviceRangeEntry(module, task.function, task.bounds_function, target);
      entries.push_back(GpuDeviceRangeEntryName(task.function));
    }
  }
  return entries;
}

}  // namespace quadrants::codegen
