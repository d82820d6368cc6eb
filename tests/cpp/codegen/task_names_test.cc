// A loop named by qd.loop_config(name=...) keeps its name through
// offloading (the task's IR shows it) and names the task's compiled
// function, so profilers show it; unnamed tasks keep their plain names.
#include <gtest/gtest.h>

#include <string>

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen {
namespace {

// The names of the module's task functions (qd_task...), in module order.
std::vector<std::string> TaskFunctions(const llvm::Module& module) {
  std::vector<std::string> names;
  for (const llvm::Function& fn : module) {
    const std::string name = fn.getName().str();
    if (name.rfind("qd_task", 0) == 0 &&
        name.find("_bounds") == std::string::npos)
      names.push_back(name);
  }
  return names;
}

std::vector<std::string> LowerControlFlowKernel(const std::string& loop_name,
                                                std::string* ir) {
  std::unique_ptr<ir::Kernel> kernel =
      ir::CloneKernel(*ir::samples::BuildControlFlowKernel());
  for (const auto& stmt : *kernel->body()) {
    if (stmt->kind() == ir::StmtKind::kRangeFor) {
      stmt->set_loop_name(loop_name);
      break;
    }
  }
  transforms::PipelineOptions options;
  options.snodes = &ir::samples::SampleTree();
  EXPECT_TRUE(transforms::LowerToTasks(*kernel, options).ok());
  *ir = ir::PrintKernel(*kernel);
  llvm::LLVMContext context;
  auto lowered = LowerKernel(*kernel, ir::samples::SampleTree(),
                             LoweringOptions(), context);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  return lowered.ok() ? TaskFunctions(*lowered->module)
                      : std::vector<std::string>{};
}

TEST(TaskNamesTest, ANamedLoopNamesItsTaskAndItsFunction) {
  std::string ir;
  const std::vector<std::string> names =
      LowerControlFlowKernel("fill a/b", &ir);
  EXPECT_NE(ir.find("offloaded range_for"), std::string::npos) << ir;
  EXPECT_NE(ir.find("loop_name=fill a/b"), std::string::npos) << ir;
  int named = 0;
  for (const std::string& name : names)
    named += name.size() > 9 && name.substr(name.size() - 9) == "_fill_a_b";
  EXPECT_EQ(named, 1) << ::testing::PrintToString(names);
}

TEST(TaskNamesTest, UnnamedTasksKeepTheirPlainNames) {
  std::string ir;
  const std::vector<std::string> names = LowerControlFlowKernel("", &ir);
  EXPECT_EQ(ir.find("loop_name="), std::string::npos) << ir;
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names)
    EXPECT_EQ(name.find("fill"), std::string::npos) << name;
}

}  // namespace
}  // namespace quadrants::codegen
