// Registers the Vulkan backend with the backend registry.
#include "quadrants/runtime/backend_registry.h"
#include "quadrants/runtime/vulkan/vulkan_backend.h"

namespace quadrants::vulkan {
namespace {

// data64 needs a device with shaderInt64/shaderFloat64, which kernels check
// when they compile.
const BackendRegistrar kRegistrar({
    .arch = Arch::kVulkan,
    .create = [](const CompileConfig& config)
        -> absl::StatusOr<std::unique_ptr<Backend>> {
      return VulkanBackend::Create(config);
    },
    .probe = &VulkanBackend::Probe,
    .capabilities = {Capability::kAdStack, Capability::kData64,
                     Capability::kDeviceReducer},
});

}  // namespace
}  // namespace quadrants::vulkan
