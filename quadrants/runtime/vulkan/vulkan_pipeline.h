#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_PIPELINE_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"

namespace quadrants::vulkan {

// A compute pipeline of the SPIR-V module `words` (entry point "main");
// compilation errors name `what`.
absl::StatusOr<VkPipeline> CreatePipeline(const VulkanDevice& device,
                                          VkPipelineLayout layout,
                                          const std::vector<uint32_t>& words,
                                          const std::string& what);

// The layout of every compute pipeline here: an 8-byte push constant (the
// address of what the shader reads) and no descriptor sets.
absl::StatusOr<VkPipelineLayout> CreatePipelineLayout(
    const VulkanDevice& device);

// A primary command buffer of the device's pool and an unsignaled fence,
// for submissions that are waited for one at a time.
absl::Status CreateCommands(const VulkanDevice& device,
                            VkCommandBuffer* commands, VkFence* fence);
void DestroyCommands(const VulkanDevice& device, VkCommandBuffer* commands,
                     VkFence* fence);
// Records a global memory barrier from `src` stages' `src_access` to
// `dst` stages' `dst_access`.
void RecordBarrier(const VulkanDevice& device, VkCommandBuffer commands,
                   VkPipelineStageFlags src, VkAccessFlags src_access,
                   VkPipelineStageFlags dst, VkAccessFlags dst_access);
// Resets `commands` and begins a one-time recording.
absl::Status BeginCommands(const VulkanDevice& device,
                           VkCommandBuffer commands);
// Ends `commands`, submits them, waits on `fence` and resets it.
absl::Status SubmitAndWait(const VulkanDevice& device, VkCommandBuffer commands,
                           VkFence fence);

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_PIPELINE_H_
