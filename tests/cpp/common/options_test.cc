#include "quadrants/common/options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "quadrants/ir/types.h"
#include "quadrants/runtime/compile_config.h"

namespace quadrants::options {
namespace {

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name))
      old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

std::string ParseError(const OptionSpec& spec, const char* text) {
  absl::StatusOr<Value> value = ParseValue(spec, text);
  return value.ok() ? "" : std::string(value.status().message());
}

TEST(OptionsTest, NamesAndVariablesAreUnique) {
  std::set<std::string> names, variables;
  for (const OptionSpec& spec : AllOptions()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    if (spec.env[0] != '\0')
      EXPECT_TRUE(variables.insert(spec.env).second) << spec.env;
    EXPECT_EQ(&Spec(spec.id), &spec) << spec.name;
    EXPECT_EQ(FindSpec(spec.name), &spec) << spec.name;
  }
  EXPECT_EQ(FindSpec("no_such_option"), nullptr);
}

TEST(OptionsTest, EveryDeclarationIsComplete) {
  for (const OptionSpec& spec : AllOptions()) {
    EXPECT_TRUE(ParseValue(spec, spec.default_value).ok())
        << spec.name << " default '" << spec.default_value << "'";
    EXPECT_NE(std::string(spec.doc), "") << spec.name;
    const bool init =
        spec.scope == Scope::kInit || spec.scope == Scope::kInitEnvOff;
    EXPECT_TRUE(init || spec.env[0] != '\0') << spec.name;
    if (spec.type == Type::kEnum || spec.type == Type::kFloatType ||
        spec.type == Type::kIntType)
      EXPECT_FALSE(Choices(spec).empty()) << spec.name;
  }
}

TEST(OptionsTest, BoolsTakeZeroOrOne) {
  const OptionSpec& simd = Spec(Option::kCpuSimd);
  EXPECT_EQ(std::get<bool>(*ParseValue(simd, "0")), false);
  EXPECT_EQ(std::get<bool>(*ParseValue(simd, " 1 ")), true);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*ParseValue(simd, "")));
  EXPECT_EQ(ParseError(simd, "2"),
            "QD_CPU_SIMD='2': QD_CPU_SIMD must be 0 (scalar CPU tasks) or 1 "
            "(SIMD lanes), got '2'");
  EXPECT_TRUE(absl::StrContains(ParseError(Spec(Option::kDumpIr), "yes"),
                                "must be 0 (off) or 1 (on), got 'yes'"));
}

TEST(OptionsTest, EnumsTakeTheirValues) {
  const OptionSpec& sizer = Spec(Option::kVulkanSizer);
  EXPECT_EQ(std::get<std::string>(*ParseValue(sizer, "host")), "host");
  const std::string error = ParseError(sizer, "device");
  EXPECT_TRUE(absl::StartsWith(error, "QD_VULKAN_SIZER='device': ")) << error;
  EXPECT_TRUE(absl::StrContains(error, "auto (")) << error;
  EXPECT_TRUE(absl::StrContains(error, "or host (the host)")) << error;
}

TEST(OptionsTest, NumbersAreParsedAndChecked) {
  const OptionSpec count{
      Option::kAdStackSize, "count", Scope::kInit, "", Type::kInt, "0", "",
      Check::kNonNegative,  "doc"};
  EXPECT_EQ(std::get<int64_t>(*ParseValue(count, " 12")), 12);
  EXPECT_EQ(ParseError(count, "1.5"),
            "count='1.5': count must be an integer >= 0, got '1.5'");
  EXPECT_EQ(ParseError(count, "-1"),
            "count='-1': count must be an integer >= 0, got '-1'");
  const OptionSpec share{Option::kDeviceMemoryFraction,
                         "share",
                         Scope::kInit,
                         "",
                         Type::kFloat,
                         "",
                         "",
                         Check::kFraction,
                         "doc"};
  EXPECT_EQ(std::get<double>(*ParseValue(share, "0.25")), 0.25);
  EXPECT_EQ(ParseError(share, "1.5"),
            "share='1.5': share must be a number in (0, 1], got '1.5'");
  EXPECT_NE(ParseError(share, "nan"), "");
}

TEST(OptionsTest, ListsAreSplitAndChecked) {
  const OptionSpec& targets = Spec(Option::kAmdgpuCodegenOnly);
  EXPECT_EQ(std::get<std::vector<std::string>>(
                *ParseValue(targets, " gfx90a, ,gfx942 ")),
            (std::vector<std::string>{"gfx90a", "gfx942"}));
  const OptionSpec& archs = Spec(Option::kWantedArchs);
  EXPECT_TRUE(ParseValue(archs, "cpu,vulkan").ok());
  EXPECT_TRUE(absl::StrContains(ParseError(archs, "cpu,tpu"),
                                "a comma-separated list of cpu"));
}

TEST(OptionsTest, EnvironmentReads) {
  EXPECT_EQ(EnvString(Option::kDumpIrDir), "/tmp/quadrants_ir");
  {
    ScopedEnv dir("QD_DUMP_IR_DIR", "/x/y ");
    EXPECT_EQ(EnvString(Option::kDumpIrDir), "/x/y ");  // paths keep blanks
  }
  {
    ScopedEnv empty("QD_DUMP_IR_DIR", "");
    EXPECT_EQ(EnvString(Option::kDumpIrDir), "/tmp/quadrants_ir");
    EXPECT_FALSE(EnvText(Option::kDumpIrDir).has_value());
  }
  {
    ScopedEnv flag("QD_DUMP_IR", "0");
    EXPECT_FALSE(EnvFlag(Option::kDumpIr));
  }
  {
    // Rejected at qd.init, read as before: anything but 0 is on.
    ScopedEnv flag("QD_DUMP_IR", "yes");
    EXPECT_TRUE(EnvFlag(Option::kDumpIr));
    EXPECT_FALSE(EnvValue(Option::kDumpIr).ok());
  }
  {
    ScopedEnv level("QD_LOG_LEVEL", " info ");
    EXPECT_EQ(EnvString(Option::kLogLevel), "info");
  }
  {
    ScopedEnv targets("QD_AMDGPU_CODEGEN_ONLY", "gfx90a,gfx1100");
    EXPECT_EQ(EnvList(Option::kAmdgpuCodegenOnly),
              (std::vector<std::string>{"gfx90a", "gfx1100"}));
  }
  EXPECT_TRUE(EnvFlag(Option::kTestConsumer));  // declared default 1
}

// A CompileConfig built in C++ starts from the registry's defaults, except
// that it keeps no offline cache unless asked (qd.init's default is on).
TEST(OptionsTest, CompileConfigDefaultsAgree) {
  const CompileConfig config;
  auto flag = [](Option o) { return std::get<bool>(DefaultValue(Spec(o))); };
  auto integer = [](Option o) {
    return std::get<int64_t>(DefaultValue(Spec(o)));
  };
  EXPECT_EQ(config.debug, flag(Option::kDebug));
  EXPECT_EQ(config.check_out_of_bound, flag(Option::kCheckOutOfBound));
  EXPECT_EQ(ir::PrimitiveTypeName(config.default_fp),
            Spec(Option::kDefaultFp).default_value);
  EXPECT_EQ(ir::PrimitiveTypeName(config.default_ip),
            Spec(Option::kDefaultIp).default_value);
  EXPECT_EQ(config.cpu_max_num_threads, integer(Option::kCpuMaxNumThreads));
  EXPECT_EQ(config.cpu_simd, flag(Option::kCpuSimd));
  EXPECT_EQ(config.print_ir, flag(Option::kPrintIr));
  EXPECT_EQ(config.ad_stack_experimental_enabled,
            flag(Option::kAdStackExperimentalEnabled));
  EXPECT_EQ(config.ad_stack_size, integer(Option::kAdStackSize));
  EXPECT_EQ(config.default_ad_stack_size, integer(Option::kDefaultAdStackSize));
  EXPECT_EQ(config.random_seed, integer(Option::kRandomSeed));
  EXPECT_TRUE(flag(Option::kOfflineCache));
  EXPECT_FALSE(config.offline_cache);
  // 0 stands for "not given" in CompileConfig.
  EXPECT_EQ(Spec(Option::kDeviceMemoryGb).default_value, std::string());
  EXPECT_EQ(config.device_memory_GB, 0);
  EXPECT_EQ(Spec(Option::kDeviceMemoryFraction).default_value, std::string());
  EXPECT_EQ(config.device_memory_fraction, 0);
}

}  // namespace
}  // namespace quadrants::options
