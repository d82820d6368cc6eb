#ifndef QUADRANTS_RUNTIME_GPU_GPU_MAX_REDUCER_H_
#define QUADRANTS_RUNTIME_GPU_GPU_MAX_REDUCER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"
#include "quadrants/runtime/adstack/max_reducer.h"
#include "quadrants/runtime/gpu/device.h"
#include "quadrants/runtime/gpu/device_buffer.h"

namespace quadrants::gpu {

// Compiles and loads the max-reduction kernel of one shape (see
// codegen/llvm/max_reduce_kernel.h) and returns its launchable function,
// which stays valid while the backend lives.
using MaxReduceLoader =
    std::function<absl::StatusOr<void*>(const codegen::MaxReduceShape&)>;

// Max-reduces adstack sizing specs on the GPU (CUDA, AMDGPU): one kernel
// per spec shape, compiled at first use, reads the gating arrays where they
// live, in device memory, and folds each job's maximum with an atomic max.
class GpuMaxReducer : public adstack::MaxReducer {
 public:
  // `resident_threads` bounds the grid: more threads would only loop less.
  GpuMaxReducer(std::shared_ptr<Device> device, MaxReduceLoader loader,
                int resident_threads);

  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const adstack::ReducerJob> jobs) override;
  int64_t device_jobs() const override { return device_jobs_; }

 private:
  absl::StatusOr<void*> Kernel(const codegen::MaxReduceShape& shape);
  absl::StatusOr<int64_t> ReduceOne(const adstack::ReducerJob& job);
  // The device address of a result slot holding kNoValue.
  absl::StatusOr<uint64_t> NextSlot();

  std::shared_ptr<Device> device_;
  MaxReduceLoader loader_;
  int resident_threads_;
  absl::flat_hash_map<std::string, void*> kernels_;
  DeviceBuffer slots_;
  int64_t next_slot_ = 0;
  int64_t device_jobs_ = 0;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_GPU_MAX_REDUCER_H_
