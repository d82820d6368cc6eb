// Registers the CUDA backend with the backend registry.
#include "quadrants/runtime/backend_registry.h"
#include "quadrants/runtime/cuda/cuda_backend.h"

namespace quadrants::cuda {
namespace {

const BackendRegistrar kRegistrar({
    .arch = Arch::kCuda,
    .create = [](const CompileConfig& config)
        -> absl::StatusOr<std::unique_ptr<Backend>> {
      return CudaBackend::Create(config);
    },
    .probe = &CudaBackend::Probe,
    .capabilities = {Capability::kAdStack, Capability::kData64,
                     Capability::kGraph, Capability::kDeviceReducer,
                     Capability::kSparse, Capability::kDlpack},
    .dlpack_device_type = 2,
});

}  // namespace
}  // namespace quadrants::cuda
