#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_API_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_API_H_

#include <vulkan/vulkan.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/common/dynamic_library.h"

namespace quadrants::vulkan {

// X(name): the Vulkan entry points Quadrants calls, all resolved through
// vkGetInstanceProcAddr once an instance exists (the global ones before).
#define QD_VULKAN_GLOBAL_FUNCTIONS(X)   \
  X(vkCreateInstance)                   \
  X(vkEnumerateInstanceLayerProperties) \
  X(vkEnumerateInstanceExtensionProperties)

#define QD_VULKAN_INSTANCE_FUNCTIONS(X)       \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkGetBufferDeviceAddress)                 \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkFreeCommandBuffers)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkResetCommandBuffer)                     \
  X(vkCmdBindPipeline)                        \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdDispatchIndirect)                    \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)                          \
  X(vkCmdFillBuffer)                          \
  X(vkQueueSubmit)                            \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkWaitForFences)                          \
  X(vkResetFences)                            \
  X(vkDeviceWaitIdle)

// The Vulkan loader (libvulkan), opened with dlopen so that a machine
// without it gets a clear error instead of a failure to start.
class VulkanApi {
 public:
  // Fails with "Vulkan not available: ..." (kUnavailable) naming the
  // library names tried.
  static absl::StatusOr<std::unique_ptr<VulkanApi>> Load();
  // Resolves the instance-level functions for `instance`.
  absl::Status LoadInstanceFunctions(VkInstance instance);

  // OK, or a kRuntime error naming `what` and the VkResult.
  static absl::Status Check(VkResult result, const char* what);

#define QD_DECLARE_MEMBER(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  QD_VULKAN_GLOBAL_FUNCTIONS(QD_DECLARE_MEMBER)
  QD_VULKAN_INSTANCE_FUNCTIONS(QD_DECLARE_MEMBER)
#undef QD_DECLARE_MEMBER

 private:
  std::unique_ptr<DynamicLibrary> library_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_API_H_
