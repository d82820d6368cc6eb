// HSACO generation without a GPU: every sample kernel (and its gradient)
// goes through the shared LLVM lowering and the AMDGPU pipeline for CDNA
// and RDNA targets, and each code object is checked with LLVM's object
// reader (an AMDGPU ELF for the target, with a kernel descriptor and
// metadata for every entry).
#include "quadrants/codegen/amdgpu/hsaco_compiler.h"

#include <gtest/gtest.h>

#include <string>

#include "llvm/IR/LLVMContext.h"
#include "quadrants/codegen/amdgpu/code_object.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen {
namespace {

// The code object of `kernel` and the entries it must define.
struct Compiled {
  std::string hsaco;
  std::vector<std::string> entries;
};

Compiled CompileToHsaco(GpuCompiler& compiler, const ir::Kernel& kernel,
                        bool debug) {
  llvm::LLVMContext context;
  LoweringOptions options;
  options.debug = debug;
  options.check_out_of_bound = debug;
  options.interleave_adstacks = true;  // as the AMDGPU backend lowers
  options.simt = &compiler.simt();
  options.triple = compiler.triple();
  options.data_layout = compiler.data_layout();
  auto lowered =
      LowerKernel(kernel, ir::samples::SampleTree(), options, context);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok())
    return {};
  Compiled compiled;
  compiled.entries = GpuCompiler::EntryNames(lowered->data.tasks);
  auto hsaco = compiler.Compile(*lowered);
  EXPECT_TRUE(hsaco.ok()) << hsaco.status();
  if (hsaco.ok())
    compiled.hsaco = *std::move(hsaco);
  return compiled;
}

class HsacoCompilerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(HsacoCompilerTest, EverySampleKernelAndGradientCompiles) {
  auto compiler = CreateHsacoCompiler(GetParam());
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  EXPECT_EQ((*compiler)->target_description(),
            std::string(GetParam()) + " wave64 cov5");
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
        Compiled object = CompileToHsaco(**compiler, *kernel, debug);
        ASSERT_FALSE(object.hsaco.empty()) << sample.kernel->name();
        absl::Status valid =
            CheckCodeObject(object.hsaco, GetParam(), object.entries);
        EXPECT_TRUE(valid.ok()) << sample.kernel->name() << ": " << valid;
        ++compiled;
      }
    }
  }
  EXPECT_GE(compiled, 10);
}

// The adstack sizing reduction (two axes, a read, a missing-value constant)
// compiles to a valid code object whose kernel is the reducer's entry.
TEST_P(HsacoCompilerTest, MaxReduceKernelCompiles) {
  auto compiler = CreateHsacoCompiler(GetParam());
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  adstack::ReducerJob job;
  job.begin = {0, 0};
  job.end = {64, 32};
  job.code = {{adstack::BodyOp::kRead, 0, -1, 0},
              {adstack::BodyOp::kConst, -1, -1, 3},
              {adstack::BodyOp::kAdd, 0, 1, 0}};
  adstack::BodyRead read;
  read.indices = {{true, 0}, {true, 1}};
  job.reads = {read};
  adstack::ResolvedRead where;
  where.dtype = ir::PrimitiveType::kU16;
  where.extents = {64, 32};
  where.byte_strides = {64, 2};
  job.resolved = {where};
  for (bool narrow : {true, false}) {
    MaxReduceShape shape = MaxReduceShape::Of(job);
    shape.narrow = narrow;
    auto hsaco = (*compiler)->CompileMaxReduce(shape);
    ASSERT_TRUE(hsaco.ok()) << hsaco.status();
    absl::Status valid = CheckCodeObject(*hsaco, GetParam(), {kMaxReduceEntry});
    EXPECT_TRUE(valid.ok()) << valid;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, HsacoCompilerTest,
                         ::testing::Values("gfx90a", "gfx942", "gfx1100"));

TEST(CodeObjectTest, RejectsWhatIsNotAValidCodeObject) {
  auto compiler = CreateHsacoCompiler("gfx942");
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto kernel = ir::CloneKernel(*ir::samples::AllSampleKernels()[0].kernel);
  transforms::PipelineOptions options;
  options.snodes = &ir::samples::SampleTree();
  ASSERT_TRUE(transforms::LowerToTasks(*kernel, options).ok());
  Compiled object = CompileToHsaco(**compiler, *kernel, false);
  ASSERT_TRUE(CheckCodeObject(object.hsaco, "gfx942", object.entries).ok());

  absl::Status garbage = CheckCodeObject("not an ELF", "gfx942", {});
  EXPECT_EQ(GetErrorKind(garbage), ErrorKind::kCompilation);
  absl::Status other_target =
      CheckCodeObject(object.hsaco, "gfx90a", object.entries);
  EXPECT_NE(other_target.message().find("not gfx90a"), absl::string_view::npos)
      << other_target;
  absl::Status missing =
      CheckCodeObject(object.hsaco, "gfx942", {"qd_no_such_task_entry"});
  EXPECT_NE(missing.message().find("qd_no_such_task_entry.kd"),
            absl::string_view::npos)
      << missing;
  std::string truncated = object.hsaco.substr(0, object.hsaco.size() / 2);
  EXPECT_FALSE(CheckCodeObject(truncated, "gfx942", object.entries).ok());
}

TEST(HsacoCompilerTest, UnknownTargetsAreUnavailable) {
  auto compiler = CreateHsacoCompiler("gfx9999");
  ASSERT_FALSE(compiler.ok());
  EXPECT_EQ(GetErrorKind(compiler.status()), ErrorKind::kUnavailable);
  EXPECT_NE(compiler.status().message().find("AMDGPU not available"),
            absl::string_view::npos);
}

TEST(HsacoCompilerTest, IsaVersions) {
  EXPECT_EQ(AmdgpuIsaVersion("gfx90a"), 9010);
  EXPECT_EQ(AmdgpuIsaVersion("gfx942"), 9402);
  EXPECT_EQ(AmdgpuIsaVersion("gfx1100"), 11000);
  EXPECT_EQ(AmdgpuIsaVersion("sm_90"), -1);
}

}  // namespace
}  // namespace quadrants::codegen
