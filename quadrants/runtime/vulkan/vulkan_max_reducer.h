#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_MAX_REDUCER_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_MAX_REDUCER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/common/status_macros.h"
#include "absl/types/span.h"
#include "quadrants/runtime/adstack/max_reducer.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"

namespace quadrants::vulkan {

// The device address of host-mapped memory, 0 when the device cannot
// address it.
using DeviceAddressFn = std::function<uint64_t(const void*)>;

// Max-reduces adstack sizing jobs with the reducer shader
// (codegen/spirv/reducer_shader.h): one dispatch per job, the jobs of a
// Reduce in one submission of its own command buffer, then a wait. Reads go
// through the device addresses of the jobs' pointers: the caller finishes
// the work that writes them first, as it would for a host reducer.
//
// Jobs the shader has no room for (more axes, reads, axis indices per read
// or instructions than reducer_shader.h allows), jobs of more than 2^40
// points, reads of anything but integers of at most 32 bits or of memory
// without a device address, and walks the device ends early (lavapipe
// bounds an invocation's loop trips) go to `fallback`, a host reducer. A
// maximum that does not fit in 32 bits is an error, so that the launch sizer
// walks serially under its guard.
class VulkanMaxReducer : public adstack::MaxReducer {
 public:
  // Builds and validates the shader and creates its pipeline; `fallback`
  // outlives the reducer.
  static absl::StatusOr<std::unique_ptr<VulkanMaxReducer>> Create(
      std::shared_ptr<VulkanDevice> device, DeviceAddressFn address,
      adstack::MaxReducer* fallback);
  ~VulkanMaxReducer() override;
  VulkanMaxReducer(const VulkanMaxReducer&) = delete;
  VulkanMaxReducer& operator=(const VulkanMaxReducer&) = delete;

  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const adstack::ReducerJob> jobs) override;
  // How many jobs ran on the device and how many the fallback took, over
  // the reducer's life.
  int64_t device_jobs() const override { return device_jobs_; }
  int64_t fallback_jobs() const { return fallback_jobs_; }
  // Of device_jobs, those walked as i32 elements straight from memory.
  int64_t fast_jobs() const { return fast_jobs_; }
  // Caps a dispatch's workgroups (65535 by default), so that tests reach
  // long walks per invocation with small jobs.
  void set_max_groups(int64_t groups) { max_groups_ = groups; }

 private:
  // A job as the shader reads it, with its dispatch size.
  struct Encoded {
    std::vector<int64_t> words;
    uint32_t groups = 0;
    // Set when the shader walks one i32 read straight from memory: the
    // job's maximum is this chain applied to the walk's.
    std::optional<adstack::MonotoneRead> fast;
  };

  VulkanMaxReducer(std::shared_ptr<VulkanDevice> device,
                   DeviceAddressFn address, adstack::MaxReducer* fallback)
      : device_(std::move(device)),
        address_(std::move(address)),
        fallback_(fallback) {}
  absl::Status Initialize();
  // Nullopt when the shader cannot take `job`.
  std::optional<Encoded> Encode(const adstack::ReducerJob& job) const;
  // Whether `job` is a monotone function of one i32 read along its only
  // axis; then writes the fast walk's words into `out` (and its points
  // into kWordPoints) and sets out->fast.
  bool EncodeFastRead(const adstack::ReducerJob& job, Encoded* out) const;
  // Runs `encoded` and returns each job's result words.
  absl::StatusOr<std::vector<uint64_t>> Dispatch(
      const std::vector<Encoded>& encoded);

  std::shared_ptr<VulkanDevice> device_;
  DeviceAddressFn address_;
  adstack::MaxReducer* fallback_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VulkanBuffer buffer_;
  int64_t max_groups_ = 65535;
  int64_t device_jobs_ = 0;
  int64_t fallback_jobs_ = 0;
  int64_t fast_jobs_ = 0;
};

// A host reducer over memory whose host copies must first be brought up to
// date (`refresh`; the staging buffers of device-local memory): the
// fallback of the reducer shader, and the reducer of QD_VULKAN_SIZER=host.
class HostViewReducer : public adstack::MaxReducer {
 public:
  HostViewReducer(std::function<absl::Status()> refresh,
                  std::unique_ptr<adstack::MaxReducer> host)
      : refresh_(std::move(refresh)), host_(std::move(host)) {}
  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const adstack::ReducerJob> jobs) override {
    if (!jobs.empty())
      QD_RETURN_IF_ERROR(refresh_());
    return host_->Reduce(jobs);
  }

 private:
  std::function<absl::Status()> refresh_;
  std::unique_ptr<adstack::MaxReducer> host_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_MAX_REDUCER_H_
