// SPIR-V generation without a device: every sample kernel (and its
// gradient and forward-mode variant) lowers to modules that spirv-val
// accepts for Vulkan 1.2, with and without checks, for a device with every
// optional feature and for one with none; SPIRV-Tools' optimizer keeps them
// valid, and SPIRV-Cross turns each into MSL. Kernels needing the adstack
// and types the device lacks fail with errors that say so.
#include <gtest/gtest.h>

#include <string>

#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/codegen/spirv/module_builder.h"
#include "quadrants/codegen/spirv/msl_export.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::codegen::spirv {
namespace {

DeviceCaps FullCaps() {
  DeviceCaps caps;
  caps.int8 = caps.int16 = caps.float16 = caps.float64 = true;
  caps.int64_atomics = caps.float32_atomic_add = caps.float64_atomic_add = true;
  caps.device_name = "test device";
  return caps;
}

DeviceCaps MinimalCaps() {
  DeviceCaps caps;
  caps.device_name = "minimal device";
  return caps;
}

TEST(SpirvCodegenTest, EverySampleKernelValidatesOptimizesAndCrossCompiles) {
  int modules = 0, msl = 0, adstack_tasks = 0, type_errors = 0;
  for (auto& sample : ir::samples::AllSampleKernels()) {
    for (auto mode :
         {transforms::AutodiffMode::kNone, transforms::AutodiffMode::kReverse,
          transforms::AutodiffMode::kForward, transforms::AutodiffMode::kHvp}) {
      std::unique_ptr<ir::Kernel> kernel = ir::CloneKernel(*sample.kernel);
      transforms::PipelineOptions options;
      options.snodes = &ir::samples::SampleTree();
      options.autodiff = mode;
      options.adstack_enabled = true;
      if (!transforms::LowerToTasks(*kernel, options).ok())
        continue;  // not every sample is differentiable
      if (!kernel->functions().empty()) {
        // Shaders have no call stack: real functions are refused by name.
        auto spirv = GenerateSpirv(*kernel, ir::samples::SampleTree(), {});
        ASSERT_FALSE(spirv.ok());
        EXPECT_EQ(GetErrorKind(spirv.status()), ErrorKind::kCompilation);
        EXPECT_NE(std::string(spirv.status().message())
                      .find("calls qd.real_func 'tri'"),
                  std::string::npos)
            << spirv.status();
        continue;
      }
      if (sample.kernel->name() == "sparse") {
        // Sparse SNodes are lowered by the LLVM backends only (Vulkan
        // refuses them at layout time): the generator names the statement.
        auto spirv = GenerateSpirv(*kernel, ir::samples::SampleTree(), {});
        ASSERT_FALSE(spirv.ok());
        EXPECT_EQ(GetErrorKind(spirv.status()), ErrorKind::kCompilation)
            << spirv.status();
        continue;
      }
      for (const DeviceCaps& caps : {FullCaps(), MinimalCaps()}) {
        for (bool checks : {false, true}) {
          CodegenOptions codegen;
          codegen.caps = caps;
          codegen.check_out_of_bound = checks;
          codegen.debug = checks;
          auto spirv =
              GenerateSpirv(*kernel, ir::samples::SampleTree(), codegen);
          if (!spirv.ok()) {
            const std::string message(spirv.status().message());
            ASSERT_EQ(GetErrorKind(spirv.status()), ErrorKind::kType)
                << spirv.status();
            EXPECT_NE(message.find("minimal device"), std::string::npos)
                << message;
            ++type_errors;
            continue;
          }
          for (const CompiledTask& task : spirv->data.tasks)
            adstack_tasks += task.adstacks.empty() ? 0 : 1;
          for (const SpirvTask& task : spirv->tasks) {
            for (const auto* words : {&task.code, &task.bounds_code}) {
              if (words->empty())
                continue;
              const std::string what = kernel->name();
              ASSERT_TRUE(ValidateModule(*words, what).ok())
                  << ValidateModule(*words, what) << "\n"
                  << Disassemble(*words);
              auto optimized = OptimizeModule(*words, what);
              ASSERT_TRUE(optimized.ok()) << optimized.status();
              EXPECT_TRUE(ValidateModule(*optimized, what).ok())
                  << ValidateModule(*optimized, what);
              ++modules;
              auto metal = CrossCompileToMsl(*words);
              if (!metal.ok() &&
                  GetErrorKind(metal.status()) == ErrorKind::kUnavailable) {
                continue;  // SPIRV-Cross is not installed here
              }
              ASSERT_TRUE(metal.ok()) << metal.status();
              EXPECT_NE(metal->find("kernel void"), std::string::npos);
              ++msl;
            }
          }
        }
      }
    }
  }
  EXPECT_GE(modules, 20);
  // Reverse-mode samples through dynamic loops lower with their adstacks.
  EXPECT_GE(adstack_tasks, 1);
  std::printf("%d modules valid, %d MSL, %d adstack tasks, %d type errors\n",
              modules, msl, adstack_tasks, type_errors);
}

TEST(ModuleBuilderTest, TypesAndConstantsAreDeduplicated) {
  ModuleBuilder b;
  EXPECT_EQ(b.IntType(32, true), b.IntType(32, true));
  EXPECT_NE(b.IntType(32, true), b.IntType(32, false));
  EXPECT_EQ(b.ConstI32(-1), b.ConstI32(-1));
  EXPECT_NE(b.ConstI32(-1), b.ConstU32(0xffffffffu));
  EXPECT_EQ(b.ConstFloat(b.FloatType(64), 0.5),
            b.ConstFloat(b.FloatType(64), 0.5));
  EXPECT_EQ(b.IntInfo(b.IntType(16, false)), std::make_pair(16, false));
  EXPECT_EQ(b.FloatWidth(b.FloatType(16)), 16);
}

TEST(ModuleBuilderTest, AnEmptyComputeShaderValidates) {
  ModuleBuilder b;
  b.Capability(spv::CapabilityShader);
  b.Capability(spv::CapabilityPhysicalStorageBufferAddresses);
  const Id void_type = b.VoidType();
  const Id main = b.BeginFunction(void_type, b.FunctionType(void_type, {}), {});
  b.EntryPoint(main, "main", {});
  b.LocalSize(main, 1, 1, 1);
  b.Return();
  b.EndFunction();
  const std::vector<uint32_t> words = b.Finish();
  EXPECT_TRUE(ValidateModule(words, "empty").ok())
      << ValidateModule(words, "empty");
}

}  // namespace
}  // namespace quadrants::codegen::spirv
