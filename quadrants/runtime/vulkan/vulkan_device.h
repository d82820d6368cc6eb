#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_DEVICE_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "quadrants/codegen/spirv/device_caps.h"
#include "quadrants/runtime/vulkan/vulkan_api.h"

namespace quadrants::vulkan {

// Features a test can take away from the device, to exercise the paths of
// devices that lack them (set from QD_VULKAN_* environment variables).
struct FeatureOverrides {
  bool no_int64_atomics = false;  // QD_VULKAN_NO_INT64_ATOMICS
  bool no_float_atomics = false;  // QD_VULKAN_NO_FLOAT_ATOMICS
  bool no_float64 = false;        // QD_VULKAN_NO_FLOAT64
  bool force_staging = false;     // QD_VULKAN_FORCE_STAGING
  bool no_subgroup_ops = false;   // QD_VULKAN_NO_SUBGROUP_OPS
  static FeatureOverrides FromEnvironment();
};

// A Vulkan instance, the chosen physical device (one with a compute queue,
// buffer device addresses and 64-bit integers; a GPU before a CPU device)
// and a logical device with one compute queue and a command pool.
class VulkanDevice {
 public:
  // Fails with kUnavailable "Vulkan not available: <what is missing>".
  static absl::StatusOr<std::unique_ptr<VulkanDevice>> Create(
      const FeatureOverrides& overrides);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  const VulkanApi& api() const { return *api_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return command_pool_; }
  const codegen::spirv::DeviceCaps& caps() const { return caps_; }
  // Invocations per subgroup, and bytes of Workgroup memory per workgroup.
  int subgroup_size() const { return subgroup_size_; }
  int64_t max_shared_bytes() const { return max_shared_bytes_; }
  // Name, driver and API version: what compiled code may depend on.
  std::string Description() const;
  // The device's name and its driver's version as its vendor writes it
  // (NVIDIA: 580.159.04), for people to read.
  std::string ReadableDescription() const;
  const std::string& name() const { return caps_.device_name; }

  // The most workgroups a dispatch uses. A CPU device (lavapipe) runs one
  // workgroup per thread at a time, so a few hundred keep it busy while
  // each invocation runs several iterations, spreading the per-invocation
  // work (context loads, the loop's setup) over them.
  uint32_t max_groups() const { return max_groups_; }
  // Whether the device runs on the host's CPU (lavapipe).
  bool cpu_device() const { return cpu_device_; }
  // About how many invocations the device runs at once: a CPU device one
  // workgroup per hardware thread; a GPU, whose core count Vulkan does not
  // report, taken as a large discrete one (an H100 keeps 132 x 2048).
  int64_t concurrent_invocations() const;

  // A memory type for buffers: host-visible and coherent (always exists),
  // or device-local (preferred for fields and ndarrays).
  uint32_t host_memory_type() const { return host_memory_type_; }
  uint32_t device_memory_type() const { return device_memory_type_; }
  // Whether device_memory_type() can be mapped; if not, host access goes
  // through staging copies.
  bool device_memory_mappable() const { return device_memory_mappable_; }

  VulkanDevice() = default;  // for std::make_unique; use Create()

 private:
  absl::Status Initialize(const FeatureOverrides& overrides);

  std::unique_ptr<VulkanApi> api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  codegen::spirv::DeviceCaps caps_;
  int subgroup_size_ = 0;
  int64_t max_shared_bytes_ = 0;
  uint32_t driver_version_ = 0;
  uint32_t vendor_id_ = 0;
  uint32_t api_version_ = 0;
  uint32_t host_memory_type_ = 0;
  uint32_t device_memory_type_ = 0;
  bool device_memory_mappable_ = true;
  bool cpu_device_ = false;
  uint32_t max_groups_ = 65535;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_DEVICE_H_
