#ifndef QUADRANTS_RUNTIME_GPU_ADSTACK_HEAP_H_
#define QUADRANTS_RUNTIME_GPU_ADSTACK_HEAP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/gpu/device_buffer.h"
#include "quadrants/device_runtime/runtime_abi.h"

namespace quadrants::gpu {

// The adstack storage of one GPU runtime: a heap in device memory, grown by
// amortized doubling within a byte budget and never shrunk, and the
// per-stack offsets and capacities kernels read, uploaded only when they
// change.
class AdStackHeap {
 public:
  AdStackHeap(std::shared_ptr<Device> device, int64_t budget)
      : device_(std::move(device)), budget_(budget) {}

  int64_t budget() const { return budget_; }

  // Lowers `*grid` so that `grid * block` threads of layout.stride bytes
  // each fit in the budget (recorded in `stats`); an error naming the
  // kernel, the loop and the budget when even one block does not.
  absl::Status FitGrid(const CompiledKernel& kernel, int task,
                       const adstack::AdStackLayout& layout, unsigned block,
                       unsigned* grid, AdStackStats* stats) const;

  // Grows the heap for `threads` threads of `layout`, uploads the layout's
  // offsets and capacities and points `runtime` (the host's copy of the
  // record kernels read) at both.
  absl::Status Publish(const adstack::AdStackLayout& layout, int task,
                       int num_tasks, int64_t threads, QdRuntime* runtime,
                       AdStackStats* stats);

 private:
  std::shared_ptr<Device> device_;
  int64_t budget_;
  DeviceBuffer heap_;
  // Per-stack offsets, then capacities; `published_` is what the device
  // holds.
  DeviceBuffer metadata_;
  std::vector<int64_t> published_;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_ADSTACK_HEAP_H_
