// SPIRV-Tools from Debian: assemble, validate and optimize a compute shader.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spirv-tools/libspirv.hpp"
#include "spirv-tools/optimizer.hpp"
#include "tests/third_party/fill_compute_spvasm.h"

namespace {

std::string ShaderText() {
  return reinterpret_cast<const char*>(kFillComputeSpvasm);
}

TEST(SpirvToolsSmokeTest, AssemblesAndValidatesComputeShader) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*,
                               const spv_position_t& at, const char* text) {
    messages += std::to_string(at.index) + ": " + text + "\n";
  });
  std::vector<uint32_t> binary;
  ASSERT_TRUE(tools.Assemble(ShaderText(), &binary)) << messages;
  ASSERT_GT(binary.size(), 5u);
  EXPECT_EQ(binary[0], 0x07230203u);  // SPIR-V magic number
  EXPECT_TRUE(tools.Validate(binary)) << messages;

  spvtools::Optimizer optimizer(SPV_ENV_VULKAN_1_1);
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> optimized;
  ASSERT_TRUE(optimizer.Run(binary.data(), binary.size(), &optimized));
  EXPECT_TRUE(tools.Validate(optimized)) << messages;
}

TEST(SpirvToolsSmokeTest, ValidatorRejectsABrokenShader) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  tools.SetMessageConsumer([](spv_message_level_t, const char*,
                              const spv_position_t&, const char*) {});
  std::string broken = ShaderText();
  // A vector-typed add of two scalars assembles but is a type error.
  const std::string add = "OpIAdd %uint %m";
  broken.replace(broken.find(add), add.size(), "OpIAdd %v3uint %m");
  std::vector<uint32_t> binary;
  ASSERT_TRUE(tools.Assemble(broken, &binary));
  EXPECT_FALSE(tools.Validate(binary));
}

}  // namespace
