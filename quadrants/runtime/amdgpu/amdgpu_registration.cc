// Registers the AMDGPU backend with the backend registry, and the
// codegen-only check (QD_AMDGPU_CODEGEN_ONLY) as a wrapper of every backend
// of another arch.
#include "quadrants/runtime/amdgpu/amdgpu_backend.h"
#include "quadrants/runtime/amdgpu/codegen_only.h"
#include "quadrants/runtime/backend_registry.h"

namespace quadrants::amdgpu {
namespace {

// No graphs: graph=True launches plainly (see AmdgpuBackend).
const BackendRegistrar kRegistrar({
    .arch = Arch::kAmdgpu,
    .create = &CreateBackend,
    .probe = &ProbeBackend,
    .capabilities = {Capability::kAdStack, Capability::kData64,
                     Capability::kDeviceReducer, Capability::kDlpack},
    .dlpack_device_type = 10,
});

const BackendWrapperRegistrar kCodegenOnlyCheck(&WithCodegenOnlyCheck);

}  // namespace
}  // namespace quadrants::amdgpu
