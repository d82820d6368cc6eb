#include <string>

#include "gtest/gtest.h"
#include "quadrants/codegen/llvm/compiler_identity.h"
#include "quadrants/codegen/spirv/compiler_identity.h"

namespace quadrants {
namespace {

TEST(CompilerIdentity, LlvmNamesTheVersionAndTheLoweringsFile) {
  const std::string& identity = codegen::LlvmCompilerIdentity();
  ASSERT_FALSE(identity.empty());
  EXPECT_NE(identity.find("llvm 19"), std::string::npos) << identity;
  // This test links each library dynamically: the lowering's file is named.
  EXPECT_NE(identity.find("lowering"), std::string::npos) << identity;
}

TEST(CompilerIdentity, SpirvNamesTheGeneratorsFile) {
  const std::string& identity = codegen::spirv::CompilerIdentity();
  ASSERT_FALSE(identity.empty());
  EXPECT_EQ(identity.rfind("spirv ", 0), 0u) << identity;
  // Dynamically linked here: the generator's library (its path mangled by
  // Bazel) is named.
  EXPECT_NE(identity.find("codegen_Sspirv"), std::string::npos) << identity;
  EXPECT_NE(identity, codegen::LlvmCompilerIdentity());
}

}  // namespace
}  // namespace quadrants
