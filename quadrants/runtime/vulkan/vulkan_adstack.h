#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_ADSTACK_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_ADSTACK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"

namespace quadrants::vulkan {

// Where one task's adstacks live for one launch: per-stack capacities and
// per-invocation offsets into the float or int heap (shader_abi.h), and the
// invocations the heaps are sliced for.
struct VulkanAdStackLayout {
  std::vector<int64_t> capacities;
  std::vector<int64_t> offsets;
  int64_t float_stride = 0;  // bytes per invocation
  int64_t int_stride = 0;
  int64_t invocations = 0;
  std::vector<int64_t> segments;  // see adstack::AdStackLayout
  int64_t threads_at_once = 0;
  // > 0: the heaps hold this many rows, one per iteration passing the
  // task's adstack gate, instead of a slice per invocation.
  int64_t rows = 0;
  int64_t slices() const { return rows > 0 ? rows : invocations; }
};

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

  // Lays out `stacks` with `capacities` for at most `max_invocations`,
  // fewer when a heap would pass 1 GiB or both together `budget` (the
  // others idle); an error naming the kernel, the loop and the budget when
  // one invocation does not fit. Checkpointable loops run in segments first
  // when that lets every invocation fit (adstack::ChooseCheckpoints;
  // `forced`: ad_stack_size is set). `rows` > 0 lays the heaps out for that
  // many gated rows instead, when they fit both budgets unsegmented (else
  // as if 0).
  // The most bytes one heap takes: a launch whose slices would need more
  // runs fewer invocations (grid-stride covers the rest).
  static constexpr int64_t kHeapBudget = int64_t{1} << 30;

  // The offsets and strides of `stacks` with `capacities` (each at least
  // one slot), as Plan lays them out.
  static VulkanAdStackLayout LayOut(const std::vector<AdStackSpec>& stacks,
                                    std::vector<int64_t> capacities);

  absl::StatusOr<VulkanAdStackLayout> Plan(const CompiledKernel& kernel,
                                        int task,
                                        std::vector<int64_t> capacities,
                                        int64_t max_invocations,
                                        int64_t budget, bool forced,
                                        int64_t segment_length,
                                        int64_t rows) const;
  // Whether `layout` needs larger heaps (which replaces the buffers: work
  // recorded against the current ones must finish first).
  bool NeedsGrowth(const VulkanAdStackLayout& layout) const;
  // Makes the records buffer hold `bytes` (replacing it: nothing recorded
  // may read the old one).
  absl::Status EnsureRecords(int64_t bytes);
  uint64_t records_address() const { return records_.address; }
  // The capacities of `stacks` stacks in the record at `record_offset`, as
  // the device wrote them.
  std::vector<int64_t> ReadCapacities(uint32_t record_offset,
                                      size_t stacks) const;
  // Grows the heaps for `layout` and writes its record at `record_offset`.
  absl::Status Publish(const VulkanAdStackLayout& layout, uint32_t record_offset,
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
