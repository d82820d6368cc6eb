#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_ADSTACK_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_ADSTACK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"

namespace quadrants::vulkan {

// The adstack storage of the Vulkan runtime: the float and int heaps, grown
// by amortized doubling and reused across launches, and the host-mapped
// buffer of per-task records that generated code reads.
class VulkanAdStacks {
 public:
  explicit VulkanAdStacks(std::shared_ptr<VulkanDevice> device)
      : device_(std::move(device)) {}
  ~VulkanAdStacks();
  VulkanAdStacks(const VulkanAdStacks&) = delete;
  VulkanAdStacks& operator=(const VulkanAdStacks&) = delete;

  // Lays out (adstack::LayOutByKind) `stacks` with `capacities` for at
  // most `max_invocations`, fewer when a heap would pass
  // adstack::kVulkanHeapBytes or both together `budget` (the others idle);
  // an error naming the kernel, the loop and the budget when one invocation
  // does not fit. Checkpointable loops run in segments first when that
  // lets every invocation fit (adstack::ChooseCheckpoints; `forced`:
  // ad_stack_size is set). `rows` > 0 lays the heaps out for that many
  // gated rows instead, when they fit both budgets unsegmented (else as
  // if 0).
  absl::StatusOr<adstack::AdStackLayout> Plan(const CompiledKernel& kernel,
                                        int task,
                                        std::vector<int64_t> capacities,
                                        int64_t max_invocations,
                                        int64_t budget, bool forced,
                                        int64_t segment_length,
                                        int64_t rows) const;
  // Whether `layout` needs larger heaps (which replaces the buffers: work
  // recorded against the current ones must finish first).
  bool NeedsGrowth(const adstack::AdStackLayout& layout) const;
  // Makes the records buffer hold `bytes` (replacing it: nothing recorded
  // may read the old one).
  absl::Status EnsureRecords(int64_t bytes);
  uint64_t records_address() const { return records_.address; }
  // The capacities of `stacks` stacks in the record at `record_offset`, as
  // the device wrote them.
  std::vector<int64_t> ReadCapacities(uint32_t record_offset,
                                      size_t stacks) const;
  // Grows the heaps for `layout` and writes its record at `record_offset`.
  absl::Status Publish(const adstack::AdStackLayout& layout, uint32_t record_offset,
                       AdStackStats* stats);

 private:
  absl::Status Grow(VulkanBuffer* heap, int64_t need, AdStackStats* stats);

  std::shared_ptr<VulkanDevice> device_;
  VulkanBuffer float_heap_;
  VulkanBuffer int_heap_;
  VulkanBuffer records_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_ADSTACK_H_
