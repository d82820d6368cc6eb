// Registers the CPU backend with the backend registry.
#include "quadrants/runtime/backend_registry.h"
#include "quadrants/runtime/cpu/cpu_backend.h"

namespace quadrants::cpu {
namespace {

// The host max-reducer sizes adstacks on host threads: no device reducer.
const BackendRegistrar kRegistrar({
    .arch = Arch::kCpu,
    .create = [](const CompileConfig& config)
        -> absl::StatusOr<std::unique_ptr<Backend>> {
      return CpuBackend::Create(config);
    },
    .capabilities = {Capability::kAdStack, Capability::kData64,
                     Capability::kSparse, Capability::kHostMemory,
                     Capability::kDlpack},
    .dlpack_device_type = 1,
});

}  // namespace
}  // namespace quadrants::cpu
