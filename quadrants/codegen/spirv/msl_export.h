#ifndef QUADRANTS_CODEGEN_SPIRV_MSL_EXPORT_H_
#define QUADRANTS_CODEGEN_SPIRV_MSL_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace quadrants::codegen::spirv {

// Metal Shading Language for a SPIR-V compute module, through SPIRV-Cross's
// C API (libspirv-cross-c-shared, loaded at the first call so that builds
// and machines without it lose only this). Targets MSL 2.3 (buffer device
// addresses become device pointers; f64 stays `double`, which Metal lacks,
// so kernels using f64 need a device with it). Errors are kUnavailable when
// the library is missing and kCompilation when SPIRV-Cross rejects the
// module.
absl::StatusOr<std::string> CrossCompileToMsl(absl::Span<const uint32_t> words);

}  // namespace quadrants::codegen::spirv

#endif  // QUADRANTS_CODEGEN_SPIRV_MSL_EXPORT_H_
