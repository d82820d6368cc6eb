#include "quadrants/runtime/compile_config.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "quadrants/common/options.h"

namespace quadrants {
namespace {

void Perturb(bool* v) { *v = !*v; }
void Perturb(int64_t* v) { *v += 1; }
void Perturb(double* v) { *v += 0.5; }
void Perturb(std::string* v) { *v += "x"; }
void Perturb(ir::PrimitiveType* v) {
  *v = *v == ir::PrimitiveType::kF64 ? ir::PrimitiveType::kF32
                                     : ir::PrimitiveType::kF64;
}

// Every member options.def gives CompileConfig is a qd.init option of that
// name.
TEST(CompileConfigTest, EveryOptionMemberIsADeclaredInitOption) {
  std::set<std::string> names;
  CompileConfig::VisitOptionFields([&](const char* name, ConfigRole, auto) {
    const options::OptionSpec* spec = options::FindSpec(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->scope == options::Scope::kInit ||
                  spec->scope == options::Scope::kInitEnvOff,
              true)
        << name;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
  });
  EXPECT_TRUE(names.count("debug"));
  EXPECT_TRUE(names.count("ad_stack_max_bytes"));
}

// The compile-cache hash covers exactly the kCodegen members (and the
// arch): changing one changes it, changing a run-time one does not.
TEST(CompileConfigTest, CodegenHashCoversExactlyTheCodegenOptions) {
  const CompileConfig base;
  int codegen = 0, runtime = 0;
  CompileConfig::VisitOptionFields(
      [&](const char* name, ConfigRole role, auto member) {
        CompileConfig changed = base;
        Perturb(&(changed.*member));
        if (role == ConfigRole::kCodegen) {
          ++codegen;
          EXPECT_NE(changed.CodegenHash(), base.CodegenHash()) << name;
        } else {
          ++runtime;
          EXPECT_EQ(changed.CodegenHash(), base.CodegenHash()) << name;
        }
      });
  EXPECT_GT(codegen, 0);
  EXPECT_GT(runtime, 0);
  CompileConfig vulkan = base;
  vulkan.arch = Arch::kVulkan;
  EXPECT_NE(vulkan.CodegenHash(), base.CodegenHash());
}

}  // namespace
}  // namespace quadrants
