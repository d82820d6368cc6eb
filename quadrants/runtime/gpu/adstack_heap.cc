#include "quadrants/runtime/gpu/adstack_heap.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

absl::Status AdStackHeap::FitGrid(const CompiledKernel& kernel, int task,
                                  const adstack::AdStackLayout& layout,
                                  unsigned block, unsigned* grid,
                                  AdStackStats* stats) const {
  // Fewer threads, each looping over more iterations, when the heap for
  // every resident thread would not fit.
  QD_ASSIGN_OR_RETURN(
      int64_t threads,
      adstack::ThreadsWithinBudget(kernel, task, layout,
                                   int64_t{*grid} * block, block, budget_));
  *grid = static_cast<unsigned>(threads / block);
  stats->budget_bytes = budget_;
  return absl::OkStatus();
}

absl::Status AdStackHeap::Publish(const adstack::AdStackLayout& layout,
                                  int task, int num_tasks, int64_t threads,
                                  QdRuntime* runtime, AdStackStats* stats) {
  // A gated heap holds its rows instead of the threads' slices.
  const int64_t slices = layout.rows > 0 ? layout.rows : threads;
  const int64_t need = layout.stride * slices;
  if (need > stats->heap_bytes) {
    // Amortized doubling, but never past the budget for the doubling alone.
    const int64_t grown =
        std::max(need, std::min(2 * stats->heap_bytes, budget_));
    // Free the old heap before growing; until the new one exists nothing is
    // allocated, so a failure here is retried by the next launch.
    heap_ = DeviceBuffer();
    stats->heap_bytes = 0;
    QD_ASSIGN_OR_RETURN(heap_, DeviceBuffer::Allocate(device_, grown));
    stats->heap_bytes = grown;
    ++stats->heap_grows;
  }
  std::vector<int64_t> metadata = layout.offsets;
  metadata.insert(metadata.end(), layout.capacities.begin(),
                  layout.capacities.end());
  const int64_t metadata_bytes =
      static_cast<int64_t>(metadata.size() * sizeof(int64_t));
  if (metadata_bytes > metadata_.size()) {
    published_.clear();
    metadata_ = DeviceBuffer();
    QD_ASSIGN_OR_RETURN(metadata_,
                        DeviceBuffer::Allocate(device_, metadata_bytes));
  }
  if (metadata != published_) {
    published_.clear();
    QD_RETURN_IF_ERROR(metadata_.Upload(metadata.data(), metadata_bytes));
    published_ = std::move(metadata);
  }
  auto* offsets = reinterpret_cast<qd_i64*>(metadata_.get());
  runtime->adstack_heap = reinterpret_cast<char*>(heap_.get());
  runtime->adstack_per_thread_stride = layout.stride;
  runtime->adstack_threads = slices;
  runtime->adstack_rows = layout.rows;
  runtime->adstack_rows_claimed = 0;
  runtime->adstack_offsets = offsets;
  runtime->adstack_max_sizes = offsets + layout.offsets.size();
  runtime->adstack_overflow = 0;
  adstack::RecordLayout(layout, task, num_tasks, threads, stats);
  return absl::OkStatus();
}

}  // namespace quadrants::gpu
