#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants::vulkan {

// One VkBuffer with its own memory, addressed by kernels through its
// buffer device address. `host` is where the host reads and writes it: the
// buffer's own mapping, or, for a device-local buffer that cannot be
// mapped, the mapping of a host-visible staging buffer of the same size.
// Bytes of padding before and after every buffer's usable range: a load
// a kernel speculates past an array's end (both sides of `a if c else b`
// are evaluated) reads mapped memory, as it does in a CUDA allocation,
// instead of faulting the device.
constexpr int64_t kGuardBytes = int64_t{64} << 10;

// `address`, `host` and `bytes` describe the usable range, which starts
// kGuardBytes into `buffer` (and into `staging`).
struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer staging = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory = VK_NULL_HANDLE;
  uint64_t address = 0;
  int64_t bytes = 0;
  char* host = nullptr;
};

// Creates and destroys VulkanBuffers on one device.
absl::StatusOr<VulkanBuffer> CreateBuffer(const VulkanDevice& device,
                                       int64_t bytes, bool device_local);
void DestroyBuffer(const VulkanDevice& device, VulkanBuffer* buffer);

// The allocator of fields and ndarrays on Vulkan: device-local buffers,
// mapped where the device allows it, else staged. The host sees the same
// bytes as kernels once a launch has finished (launches copy staged
// buffers in before their tasks and out after them).
class VulkanMemory : public ArrayMemory {
 public:
  explicit VulkanMemory(std::shared_ptr<VulkanDevice> device)
      : device_(std::move(device)) {}
  ~VulkanMemory() override;

  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;

  // The device address of host pointer `p` inside an allocation; 0 when it
  // is in none.
  uint64_t DeviceAddress(const void* p) const;
  // Records copies of every staged buffer from its staging buffer to the
  // device (uploads) or back (downloads); nothing when none is staged.
  void RecordCopies(VkCommandBuffer commands, bool upload) const;
  bool has_staged() const;

 private:
  std::shared_ptr<VulkanDevice> device_;
  mutable std::mutex mutex_;
  std::map<const char*, VulkanBuffer> buffers_;  // by host pointer
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_
