#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

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

// The allocator of fields and ndarrays on Vulkan: device-local buffers.
// Where the device can map them (integrated GPUs, lavapipe) the host reads
// and writes them in place. Where it cannot (discrete GPUs), the memory is
// not host-addressable: the device copy is the only current one, and each
// host copy moves bytes through the buffer's staging buffer in a transfer
// of its own. Either way a host access first drains the launches queued on
// the device (set_drain), as does Free.
class VulkanMemory : public ArrayMemory {
 public:
  explicit VulkanMemory(std::shared_ptr<VulkanDevice> device)
      : device_(std::move(device)) {}
  ~VulkanMemory() override;

  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
  bool host_addressable() const override {
    return device_->device_memory_mappable();
  }
  absl::Status WaitForQueuedWork() override { return Drain(); }
  absl::Status CopyToHost(void* host, const void* data, int64_t bytes) override;
  absl::Status CopyFromHost(void* data, const void* host,
                            int64_t bytes) override;

  // The device address of pointer `p` (from Allocate, at any offset); 0
  // when it is in no allocation.
  uint64_t DeviceAddress(const void* p) const;
  // Brings every staging buffer up to date with its device buffer, so that
  // host code may read the pointers Allocate gave in place; nothing where
  // the memory is host-addressable.
  absl::Status RefreshHostCopies();
  // What finishes the device work queued so far (the backend's), run
  // before any host access; empty by default.
  void set_drain(std::function<absl::Status()> drain) {
    std::lock_guard<std::mutex> lock(mutex_);
    drain_ = std::move(drain);
  }

 private:
  struct Transfer {
    const VulkanBuffer* buffer;
    int64_t offset;  // from the usable range's start
    int64_t bytes;
  };
  absl::Status Drain();
  // The buffer holding [p, p + bytes), or null.
  const VulkanBuffer* Find(const void* p, int64_t bytes) const;
  // Copies each range between the device buffer and its staging buffer
  // (to the device with `upload`), or fills it with zeros, and waits.
  absl::Status RunTransfers(const std::vector<Transfer>& transfers,
                            bool upload, bool fill_zero);

  std::shared_ptr<VulkanDevice> device_;
  mutable std::mutex mutex_;
  std::map<const char*, VulkanBuffer> buffers_;  // by host pointer
  std::function<absl::Status()> drain_;
  std::mutex transfer_mutex_;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;  // made at the first transfer
  VkFence fence_ = VK_NULL_HANDLE;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_MEMORY_H_
