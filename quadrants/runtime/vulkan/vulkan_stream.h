#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_STREAM_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_STREAM_H_

#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"

namespace quadrants::vulkan {

// Launches queued on the device without waiting: each is recorded into the
// open batch (a command buffer, with a barrier after the batch's earlier
// launches) with a launch context of its own. A full batch is submitted
// and recording goes on in the other batch, so the host runs at most one
// batch ahead of the device; Drain submits what is open and waits for all.
class VulkanStream {
 public:
  // A launch's place in the open batch.
  struct Slot {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    char* context = nullptr;  // kCtxBytes for the launch to fill
    uint64_t context_address = 0;
  };
  static constexpr int kLaunchesPerBatch = 64;

  static absl::StatusOr<std::unique_ptr<VulkanStream>> Create(
      std::shared_ptr<VulkanDevice> device);
  ~VulkanStream();
  VulkanStream(const VulkanStream&) = delete;
  VulkanStream& operator=(const VulkanStream&) = delete;

  // Opens the next launch of the batch; Commit ends it.
  absl::StatusOr<Slot> Next();
  absl::Status Commit();
  // Submits the open batch and waits for every submitted one.
  absl::Status Drain();
  // Launches queued since the stream was made.
  int64_t queued() const { return queued_; }
  // Batches submitted since the stream was made.
  int64_t submissions() const { return submissions_; }

 private:
  struct Batch {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VulkanBuffer contexts;
    int launches = 0;
    bool open = false;
    bool in_flight = false;
  };
  explicit VulkanStream(std::shared_ptr<VulkanDevice> device)
      : device_(std::move(device)) {}
  absl::Status Submit(Batch& batch);
  absl::Status Wait(Batch& batch);

  std::shared_ptr<VulkanDevice> device_;
  std::array<Batch, 2> batches_;
  int current_ = 0;
  int64_t queued_ = 0;
  int64_t submissions_ = 0;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_STREAM_H_
