#include "quadrants/codegen/spirv/spirv_tools.h"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::codegen::spirv {
namespace {
constexpr spv_target_env kEnv = SPV_ENV_VULKAN_1_2;
}  // namespace

absl::Status ValidateModule(absl::Span<const uint32_t> words,
                            absl::string_view what) {
  spvtools::SpirvTools tools(kEnv);
  std::string messages;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*,
                               const spv_position_t& position,
                               const char* message) {
    absl::StrAppend(&messages, "\n  word ", position.index, ": ", message);
  });
  if (tools.Validate(words.data(), words.size()))
    return absl::OkStatus();
  return MakeError(ErrorKind::kCompilation,
                   absl::StrCat("internal compiler error: invalid SPIR-V for ",
                                what, ":", messages));
}

absl::StatusOr<std::vector<uint32_t>> OptimizeModule(
    absl::Span<const uint32_t> words, absl::string_view what) {
  spvtools::Optimizer optimizer(kEnv);
  std::string messages;
  optimizer.SetMessageConsumer([&](spv_message_level_t level, const char*,
                                   const spv_position_t&, const char* message) {
    if (level <= SPV_MSG_ERROR)
      absl::StrAppend(&messages, "\n  ", message);
  });
  optimizer.RegisterPerformancePasses();
  std::vector<uint32_t> out;
  spvtools::ValidatorOptions validator;
  spvtools::OptimizerOptions options;
  options.set_run_validator(false);
  if (!optimizer.Run(words.data(), words.size(), &out, options)) {
    return MakeError(ErrorKind::kCompilation,
                     absl::StrCat("internal compiler error: the SPIR-V "
                                  "optimizer failed on ",
                                  what, ":", messages));
  }
  return out;
}

std::string Disassemble(absl::Span<const uint32_t> words) {
  spvtools::SpirvTools tools(kEnv);
  std::string text;
  if (!tools.Disassemble(words.data(), words.size(), &text,
                         SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES |
                             SPV_BINARY_TO_TEXT_OPTION_INDENT)) {
    return "<the module cannot be disassembled>";
  }
  return text;
}

}  // namespace quadrants::codegen::spirv
