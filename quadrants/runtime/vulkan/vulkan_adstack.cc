#include "quadrants/runtime/vulkan/vulkan_adstack.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/adstack/launch_sizer.h"

namespace quadrants::vulkan {
namespace abi = codegen::spirv::abi;

VulkanAdStacks::~VulkanAdStacks() {
  for (VulkanBuffer* buffer : {&float_heap_, &int_heap_, &records_})
    DestroyBuffer(*device_, buffer);
}

absl::StatusOr<adstack::AdStackLayout> VulkanAdStacks::Plan(
    const CompiledKernel& kernel, int task, std::vector<int64_t> capacities,
    int64_t max_invocations, int64_t budget, bool forced,
    int64_t segment_length, int64_t rows) const {
  const std::vector<AdStackSpec>& stacks = kernel.task_adstacks()[task];
  const std::vector<int64_t> sized = capacities;
  // Every row of a gated heap is live at once.
  const int64_t at_once =
      rows > 0 ? rows
               : std::min(max_invocations, device_->concurrent_invocations());
  std::vector<int64_t> segments = adstack::ChooseCheckpoints(
      stacks, &capacities, at_once, budget, forced, segment_length);
  adstack::AdStackLayout layout =
      adstack::LayOutByKind(stacks, std::move(capacities));
  layout.segments = std::move(segments);
  layout.threads_at_once = at_once;
  const int64_t widest = std::max(layout.float_stride(), layout.int_stride);
  int64_t invocations = max_invocations;
  if (rows > 0 && widest * rows <= adstack::kVulkanHeapBytes &&
      layout.stride * rows <= budget) {
    layout.rows = rows;
    layout.threads = invocations;
    return layout;
  }
  if (rows > 0) {
    return Plan(kernel, task, sized, max_invocations, budget, forced,
                segment_length, 0);
  }
  if (widest > adstack::kVulkanHeapBytes) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(), "' task ", task,
                     ": its adstacks need ", widest,
                     " bytes per invocation, more than the ",
                     adstack::kVulkanHeapBytes, "-byte adstack heap budget"));
  }
  if (widest > 0)
    invocations = std::min(invocations, adstack::kVulkanHeapBytes / widest);
  QD_ASSIGN_OR_RETURN(invocations,
                      adstack::ThreadsWithinBudget(kernel, task, layout,
                                                   invocations, 1, budget));
  layout.threads = invocations;
  return layout;
}

bool VulkanAdStacks::NeedsGrowth(const adstack::AdStackLayout& layout) const {
  return layout.float_stride() * layout.slices() > float_heap_.bytes ||
         layout.int_stride * layout.slices() > int_heap_.bytes;
}

absl::Status VulkanAdStacks::Grow(VulkanBuffer* heap, int64_t need,
                                  AdStackStats* stats) {
  if (need <= heap->bytes)
    return absl::OkStatus();
  const int64_t grown = std::max(need, 2 * heap->bytes);
  DestroyBuffer(*device_, heap);
  QD_ASSIGN_OR_RETURN(*heap, CreateBuffer(*device_, grown, true));
  ++stats->heap_grows;
  stats->heap_bytes = float_heap_.bytes + int_heap_.bytes;
  return absl::OkStatus();
}

absl::Status VulkanAdStacks::EnsureRecords(int64_t bytes) {
  if (records_.buffer != VK_NULL_HANDLE && records_.bytes >= bytes)
    return absl::OkStatus();
  DestroyBuffer(*device_, &records_);
  QD_ASSIGN_OR_RETURN(
      records_, CreateBuffer(*device_, std::max<int64_t>(bytes, 256), false));
  return absl::OkStatus();
}

std::vector<int64_t> VulkanAdStacks::ReadCapacities(uint32_t record_offset,
                                                    size_t stacks) const {
  std::vector<int64_t> capacities(stacks);
  for (size_t k = 0; k < stacks; ++k) {
    std::memcpy(&capacities[k],
                records_.host + record_offset + abi::kAdHeaderBytes +
                    abi::kAdStackBytes * k + abi::kAdStackCapacity,
                8);
  }
  return capacities;
}

absl::Status VulkanAdStacks::Publish(const adstack::AdStackLayout& layout,
                                     uint32_t record_offset,
                                     AdStackStats* stats) {
  QD_RETURN_IF_ERROR(
      Grow(&float_heap_, layout.float_stride() * layout.slices(), stats));
  QD_RETURN_IF_ERROR(
      Grow(&int_heap_, layout.int_stride * layout.slices(), stats));
  char* record = records_.host + record_offset;
  auto put = [&](uint32_t offset, uint64_t value) {
    std::memcpy(record + offset, &value, 8);
  };
  put(abi::kAdFloatHeap, float_heap_.address);
  put(abi::kAdIntHeap, int_heap_.address);
  put(abi::kAdInvocations, static_cast<uint64_t>(layout.threads));
  put(abi::kAdRows, static_cast<uint64_t>(layout.rows));
  put(abi::kAdRowsClaimed, 0);
  for (size_t k = 0; k < layout.capacities.size(); ++k) {
    const uint32_t at = abi::kAdHeaderBytes + abi::kAdStackBytes * k;
    put(at + abi::kAdStackOffset, static_cast<uint64_t>(layout.offsets[k]));
    put(at + abi::kAdStackCapacity,
        static_cast<uint64_t>(layout.capacities[k]));
  }
  return absl::OkStatus();
}

}  // namespace quadrants::vulkan
