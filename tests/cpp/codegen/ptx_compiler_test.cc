// PTX generation without a GPU: every sample kernel (and its gradient) goes
// through the shared LLVM lowering and the NVPTX pipeline, and the PTX is
// checked for entry points, nothing left unresolved and, when the toolkit's
// ptxas is installed, accepted by it for sm_90.
#include "quadrants/codegen/cuda/ptx_compiler.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "llvm/IR/LLVMContext.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen {
namespace {

constexpr int kSm90 = 90;
constexpr int kDriver12_4 = 12040;

std::unique_ptr<GpuCompiler> MakeCompiler() {
  auto compiler = CreatePtxCompiler(kSm90, kDriver12_4);
  if (!compiler.ok()) {
    EXPECT_EQ(GetErrorKind(compiler.status()), ErrorKind::kUnavailable);
    return nullptr;
  }
  return *std::move(compiler);
}

const char* Ptxas() {
  static const char* const kPaths[] = {"/usr/local/cuda/bin/ptxas",
                                       "/usr/bin/ptxas"};
  for (const char* path : kPaths) {
    if (std::ifstream(path).good())
      return path;
  }
  return nullptr;
}

// Lowers `kernel` (offloaded, with tasks) and compiles it to PTX.
std::string CompileToPtx(GpuCompiler& compiler, const ir::Kernel& kernel,
                         bool debug,
                         const ir::SNodeTree& tree = ir::samples::SampleTree()) {
  llvm::LLVMContext context;
  LoweringOptions options;
  options.debug = debug;
  options.check_out_of_bound = debug;
  options.interleave_adstacks = true;  // as the CUDA backend lowers
  options.warp_aggregate_atomics = compiler.warp_aggregate_atomics();
  options.simt = &compiler.simt();
  options.triple = compiler.triple();
  options.data_layout = compiler.data_layout();
  auto lowered = LowerKernel(kernel, tree, options, context);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok())
    return "";
  const std::vector<std::string> entries =
      GpuCompiler::EntryNames(lowered->data.tasks);
  auto ptx = compiler.Compile(*lowered);
  EXPECT_TRUE(ptx.ok()) << ptx.status();
  if (!ptx.ok())
    return "";
  for (const std::string& entry : entries)
    EXPECT_NE(ptx->find(".entry " + entry), std::string::npos) << entry;
  return *ptx;
}

void ExpectPtxasAccepts(const std::string& ptx, const std::string& name) {
  const char* ptxas = Ptxas();
  if (ptxas == nullptr)
    return;
  const std::string path = ::testing::TempDir() + "/quadrants_" + name + ".ptx";
  std::ofstream(path) << ptx;
  const std::string command =
      std::string(ptxas) + " -arch=sm_90 " + path + " -o /dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << name << ":\n" << ptx;
}

TEST(PtxCompilerTest, EverySampleKernelAndGradientCompilesForSm90) {
  auto compiler = MakeCompiler();
  if (compiler == nullptr)
    GTEST_SKIP() << "CUDA toolkit's libdevice.10.bc not found";
  EXPECT_EQ(compiler->target_description(), "sm_90 +ptx84");
  int compiled = 0;
  for (auto& sample : ir::samples::AllSampleKernels()) {
    for (auto mode :
         {transforms::AutodiffMode::kNone, transforms::AutodiffMode::kReverse,
          transforms::AutodiffMode::kForward}) {
      std::unique_ptr<ir::Kernel> kernel = ir::CloneKernel(*sample.kernel);
      transforms::PipelineOptions options;
      options.snodes = &ir::samples::SampleTree();
      options.autodiff = mode;
      options.adstack_enabled = true;
      if (!transforms::LowerToTasks(*kernel, options).ok())
        continue;  // not every sample is differentiable
      for (bool debug : {false, true}) {
        const std::string ptx = CompileToPtx(*compiler, *kernel, debug);
        ASSERT_FALSE(ptx.empty());
        EXPECT_NE(ptx.find(".target sm_90"), std::string::npos);
        // Math and runtime helpers are linked and inlined, not left to the
        // driver to resolve.
        EXPECT_EQ(ptx.find("__nv_"), std::string::npos) << ptx;
        EXPECT_EQ(ptx.find(".extern .func"), std::string::npos) << ptx;
        ExpectPtxasAccepts(ptx,
                           sample.kernel->name() + std::to_string(compiled));
        ++compiled;
      }
    }
  }
  EXPECT_GE(compiled, 10);
}

// A field under pointer, bitmasked and dynamic levels: the struct-for's
// list tasks, block lookups and the pool allocator's atomics all select on
// NVPTX.
TEST(PtxCompilerTest, SparseFieldAccessAndStructForCompileForSm90) {
  auto compiler = MakeCompiler();
  if (compiler == nullptr)
    GTEST_SKIP() << "CUDA toolkit's libdevice.10.bc not found";
  ir::SNodeTree tree;
  const int ptr =
      *tree.AddSparse(0, ir::SNode::Kind::kPointer, {0}, {8});
  const int bits = *tree.AddSparse(ptr, ir::SNode::Kind::kBitmasked, {0}, {4});
  const int x = *tree.AddPlace(bits, ir::PrimitiveType::kF32, "x");
  const int lists = *tree.AddDense(0, {0}, {3});
  const int dyn =
      *tree.AddSparse(lists, ir::SNode::Kind::kDynamic, {1}, {64}, 16);
  const int y = *tree.AddPlace(dyn, ir::PrimitiveType::kI32, "y");
  ASSERT_TRUE(tree.Finalize().ok());
  for (auto [level, place] : {std::pair{bits, x}, std::pair{dyn, y}}) {
    ir::Kernel kernel("sparse_step");
    ir::IRBuilder b(&kernel, &tree);
    auto* loop = b.StructFor(level);
    {
      auto scope = b.EnterBlock(loop->body());
      std::vector<ir::Stmt*> index;
      for (int axis = 0; axis < tree.NumAxes(place); ++axis)
        index.push_back(b.LoopIndex(loop, axis));
      ir::Stmt* ptr_x = b.FieldPtr(place, index);
      ir::Stmt* one = place == x ? static_cast<ir::Stmt*>(b.ConstF32(1))
                                 : b.ConstI32(1);
      b.Atomic(ir::AtomicOpKind::kAdd, ptr_x, one);
    }
    transforms::PipelineOptions options;
    options.snodes = &tree;
    ASSERT_TRUE(transforms::LowerToTasks(kernel, options).ok());
    for (bool debug : {false, true}) {
      const std::string ptx = CompileToPtx(*compiler, kernel, debug, tree);
      ASSERT_FALSE(ptx.empty());
      EXPECT_EQ(ptx.find(".extern .func"), std::string::npos) << ptx;
      ExpectPtxasAccepts(ptx, "sparse" + std::to_string(place));
    }
  }
}

TEST(PtxCompilerTest, PtxIsaFollowsTheDriver) {
  auto old_driver = CreatePtxCompiler(kSm90, 12000);
  if (!old_driver.ok())
    GTEST_SKIP() << old_driver.status();
  EXPECT_EQ((*old_driver)->target_description(), "sm_90 +ptx80");
  auto new_driver = CreatePtxCompiler(kSm90, 13000);
  ASSERT_TRUE(new_driver.ok());
  EXPECT_EQ((*new_driver)->target_description(), "sm_90 +ptx85");
}

}  // namespace
}  // namespace quadrants::codegen
