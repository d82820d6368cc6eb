#ifndef QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_
#define QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_

#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"

namespace quadrants::amdgpu {

// The amdgpu arch's backend: codegen-only when QD_AMDGPU_CODEGEN_ONLY names
// targets (see codegen_only.h), else the shared driver backend
// (gpu::DriverBackend) over HIP's hooks (dlopen'd libamdhip64) and the
// HSACO compiler for the device's gfx target. There are no graphs:
// graph=True launches plainly.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const CompileConfig& config);
// OK when HIP, a device and the code generator's tools are present (or the
// codegen-only targets compile); else the Unavailable error
// "AMDGPU not available: ..." saying which is missing.
absl::Status ProbeBackend();

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_
