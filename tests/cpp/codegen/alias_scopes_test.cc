// The alias scopes the LLVM lowering gives memory accesses: adstack slots
// and field/ndarray data are told apart, so LLVM moves a field load out of
// a loop that pushes, and nothing else is claimed.
#include "quadrants/codegen/llvm/alias_scopes.h"

#include <gtest/gtest.h>

#include <string>

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/codegen/llvm/optimize.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen {
namespace {

std::unique_ptr<llvm::TargetMachine> HostMachine() {
  llvm::InitializeNativeTarget();
  const std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  EXPECT_NE(target, nullptr) << error;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), std::nullopt));
}

// void f(ptr stack, ptr data, i64 n, ptr out): for k < n:
//   sum += data[0]; stack[k] = sum;  then *out = sum
// with the stores and loads tagged as `tag` says; returns the number of
// loads left in the loop after O3.
int LoadsLeftInLoop(bool tag) {
  llvm::LLVMContext context;
  llvm::Module module("m", context);
  auto machine = HostMachine();
  module.setDataLayout(machine->createDataLayout());
  llvm::IRBuilder<> b(context);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* ptr = b.getPtrTy();
  auto* fn = llvm::Function::Create(
      llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, b.getInt64Ty(), ptr},
                              false),
      llvm::Function::ExternalLinkage, "f", module);
  auto* entry = llvm::BasicBlock::Create(context, "entry", fn);
  auto* loop = llvm::BasicBlock::Create(context, "loop", fn);
  auto* exit = llvm::BasicBlock::Create(context, "exit", fn);
  b.SetInsertPoint(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2);
  llvm::PHINode* sum = b.CreatePHI(f32, 2);
  AliasScopes scopes(context);
  llvm::LoadInst* value = b.CreateLoad(f32, fn->getArg(1));
  llvm::Value* next_sum = b.CreateFAdd(sum, value);
  llvm::StoreInst* push =
      b.CreateStore(next_sum, b.CreateGEP(f32, fn->getArg(0), k));
  if (tag) {
    scopes.MarkData(value);
    scopes.MarkAdStack(push);
  }
  llvm::Value* next = b.CreateAdd(k, b.getInt64(1));
  b.CreateCondBr(b.CreateICmpSLT(next, fn->getArg(2)), loop, exit);
  k->addIncoming(b.getInt64(0), entry);
  k->addIncoming(next, loop);
  sum->addIncoming(llvm::ConstantFP::get(f32, 0.0), entry);
  sum->addIncoming(next_sum, loop);
  b.SetInsertPoint(exit);
  b.CreateStore(next_sum, fn->getArg(3));
  b.CreateRetVoid();
  OptimizeModule(module, *machine, {.loop = false, .slp = false});
  int loads = 0;
  for (const llvm::BasicBlock& block : *fn) {
    bool in_loop = false;
    for (const llvm::BasicBlock* successor : llvm::successors(&block))
      in_loop |= successor == &block;
    for (const llvm::Instruction& inst : block)
      loads += in_loop && llvm::isa<llvm::LoadInst>(inst);
  }
  return loads;
}

TEST(AliasScopesTest, FieldLoadLeavesALoopThatOnlyPushes) {
  EXPECT_EQ(LoadsLeftInLoop(/*tag=*/true), 0);
  // Untagged, the push may overwrite the data: the load stays.
  EXPECT_GT(LoadsLeftInLoop(/*tag=*/false), 0);
}

// The lowering tags every access of the adstack sample's pushes and loads,
// and the params sample's field and ndarray accesses, with their scopes.
TEST(AliasScopesTest, LoweringTagsAdStackAndDataAccesses) {
  int adstack = 0, data = 0;
  for (auto build :
       {&ir::samples::BuildAdStackKernel, &ir::samples::BuildParamsKernel}) {
    std::unique_ptr<ir::Kernel> kernel = ir::CloneKernel(*build());
    transforms::PipelineOptions options;
    options.snodes = &ir::samples::SampleTree();
    options.adstack_enabled = true;
    ASSERT_TRUE(transforms::LowerToTasks(*kernel, options).ok());
    llvm::LLVMContext context;
    auto lowered = LowerKernel(*kernel, ir::samples::SampleTree(),
                               LoweringOptions(), context);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    for (const llvm::Function& fn : *lowered->module) {
      for (const llvm::Instruction& inst : llvm::instructions(fn)) {
        const llvm::MDNode* scope =
            inst.getMetadata(llvm::LLVMContext::MD_alias_scope);
        if (scope == nullptr)
          continue;
        const auto* name = llvm::cast<llvm::MDString>(
            llvm::cast<llvm::MDNode>(scope->getOperand(0))->getOperand(0));
        adstack += name->getString() == "quadrants.adstack";
        data += name->getString() == "quadrants.data";
        EXPECT_NE(inst.getMetadata(llvm::LLVMContext::MD_noalias), nullptr);
      }
    }
  }
  EXPECT_GT(adstack, 0);
  EXPECT_GT(data, 0);
}

}  // namespace
}  // namespace quadrants::codegen
