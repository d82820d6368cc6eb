#ifndef QUADRANTS_RUNTIME_GFX_VULKAN_PIPELINE_H_
#define QUADRANTS_RUNTIME_GFX_VULKAN_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/runtime/gfx/vulkan_device.h"

namespace quadrants::gfx {

// A compute pipeline of the SPIR-V module `words` (entry point "main");
// compilation errors name `what`.
absl::StatusOr<VkPipeline> CreatePipeline(const VulkanDevice& device,
                                          VkPipelineLayout layout,
                                          const std::vector<uint32_t>& words,
                                          const std::string& what);

}  // namespace quadrants::gfx

#endif  // QUADRANTS_RUNTIME_GFX_VULKAN_PIPELINE_H_
