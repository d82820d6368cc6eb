// SPIRV-Cross C API from Debian: translate a SPIR-V compute shader to Metal
// Shading Language (how the Metal backend is produced and tested here).
#include <gtest/gtest.h>
#include <spirv_cross/spirv_cross_c.h>

#include <string>
#include <vector>

#include "spirv-tools/libspirv.hpp"
#include "tests/third_party/fill_compute_spvasm.h"

namespace {

TEST(SpirvCrossSmokeTest, TranslatesComputeShaderToMsl) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::vector<uint32_t> binary;
  ASSERT_TRUE(tools.Assemble(reinterpret_cast<const char*>(kFillComputeSpvasm),
                             &binary));

  spvc_context context = nullptr;
  ASSERT_EQ(spvc_context_create(&context), SPVC_SUCCESS);
  spvc_parsed_ir ir = nullptr;
  ASSERT_EQ(
      spvc_context_parse_spirv(context, binary.data(), binary.size(), &ir),
      SPVC_SUCCESS)
      << spvc_context_get_last_error_string(context);
  spvc_compiler compiler = nullptr;
  ASSERT_EQ(
      spvc_context_create_compiler(context, SPVC_BACKEND_MSL, ir,
                                   SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler),
      SPVC_SUCCESS);
  const char* source = nullptr;
  ASSERT_EQ(spvc_compiler_compile(compiler, &source), SPVC_SUCCESS)
      << spvc_context_get_last_error_string(context);
  std::string msl(source);
  spvc_context_destroy(context);

  EXPECT_NE(msl.find("#include <metal_stdlib>"), std::string::npos) << msl;
  EXPECT_NE(msl.find("kernel void main0("), std::string::npos) << msl;
  EXPECT_NE(msl.find("thread_position_in_grid"), std::string::npos) << msl;
  EXPECT_NE(msl.find("device "), std::string::npos) << msl;
}

}  // namespace
