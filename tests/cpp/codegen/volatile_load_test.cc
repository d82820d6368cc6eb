// qd.volatile_load: a GlobalLoadStmt marked volatile keeps the mark through
// cloning, offloading and printing, and the LLVM lowering emits it as a
// volatile load (which LLVM neither hoists nor merges); plain loads stay
// plain.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen {
namespace {

using ir::PrimitiveType;

// for i in range(a.shape[0]): b[i] = load(a[0], volatile) + load(a[i])
std::unique_ptr<ir::Kernel> SpinKernel() {
  auto k = std::make_unique<ir::Kernel>("spin", SourceLocation{"s.py", 1});
  k->AddParam(ir::KernelParam::Ndarray("a", PrimitiveType::kI32, 1));
  k->AddParam(ir::KernelParam::Ndarray("b", PrimitiveType::kI32, 1));
  ir::IRBuilder b(k.get());
  b.SetLocation(SourceLocation{"s.py", 2});
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  auto body = b.EnterBlock(loop->body());
  ir::Stmt* i = b.LoopIndex(loop);
  ir::Stmt* flag = b.GlobalLoad(b.NdarrayPtr(0, {b.ConstI32(0)}), true);
  ir::Stmt* own = b.GlobalLoad(b.NdarrayPtr(0, {i}));
  b.GlobalStore(b.NdarrayPtr(1, {i}),
                b.Binary(ir::BinaryOpKind::kAdd, flag, own));
  return k;
}

TEST(VolatileLoadTest, TheMarkSurvivesAndLowersToAVolatileLoad) {
  std::unique_ptr<ir::Kernel> kernel = ir::CloneKernel(*SpinKernel());
  transforms::PipelineOptions options;
  options.snodes = &ir::samples::SampleTree();
  ASSERT_TRUE(transforms::LowerToTasks(*kernel, options).ok());
  const std::string printed = ir::PrintKernel(*kernel);
  EXPECT_NE(printed.find("global_load volatile"), std::string::npos) << printed;
  llvm::LLVMContext context;
  auto lowered = LowerKernel(*kernel, ir::samples::SampleTree(),
                             LoweringOptions(), context);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  int volatile_loads = 0, plain_i32_loads = 0;
  for (llvm::Function& fn : *lowered->module) {
    if (!fn.getName().starts_with("qd_task"))
      continue;
    for (llvm::Instruction& inst : llvm::instructions(fn)) {
      auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
      if (load == nullptr || !load->getType()->isIntegerTy(32))
        continue;
      volatile_loads += load->isVolatile();
      plain_i32_loads += !load->isVolatile();
    }
  }
  EXPECT_EQ(volatile_loads, 1);
  EXPECT_GE(plain_i32_loads, 1);
}

}  // namespace
}  // namespace quadrants::codegen
