#ifndef QUADRANTS_CODEGEN_SPIRV_SPIRV_TOOLS_H_
#define QUADRANTS_CODEGEN_SPIRV_SPIRV_TOOLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quadrants::codegen::spirv {

// SPIRV-Tools for Vulkan 1.2 (SPIR-V 1.5) modules.

// OK, or an internal compilation error naming `what` (kernel and task) with
// the validator's message.
absl::Status ValidateModule(absl::Span<const uint32_t> words,
                            absl::string_view what);
// The module after SPIRV-Tools' performance passes.
absl::StatusOr<std::vector<uint32_t>> OptimizeModule(
    absl::Span<const uint32_t> words, absl::string_view what);
// Text form, for error messages and dumps.
std::string Disassemble(absl::Span<const uint32_t> words);

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_SPIRV_TOOLS_H_
