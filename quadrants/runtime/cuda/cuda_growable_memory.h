#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_GROWABLE_MEMORY_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_GROWABLE_MEMORY_H_

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "quadrants/runtime/cuda/cuda_driver.h"

namespace quadrants::cuda {

// Device allocations that grow in place through the driver's virtual memory
// management: a range of addresses is reserved once and physical memory is
// mapped onto it chunk by chunk, so addresses into it (field views lent to
// PyTorch, say) stay valid as it grows. New bytes read as zero.
class CudaGrowableMemory {
 public:
  explicit CudaGrowableMemory(std::shared_ptr<CudaDriver> driver)
      : cu_(std::move(driver)) {}
  ~CudaGrowableMemory();

  // `bytes` usable at a reserved range of `max_bytes`; 0 where the device
  // has no virtual memory management or the range cannot be reserved.
  absl::StatusOr<uint64_t> Allocate(int64_t bytes, int64_t max_bytes);
  // Maps memory up to `new_bytes`; failure leaves the allocation as it was.
  absl::Status Grow(uint64_t address, int64_t new_bytes);
  // Whether `address` is one of these allocations; if so it is released.
  bool Free(uint64_t address);

 private:
  struct Chunk {
    CUmemGenericAllocationHandle handle;
    uint64_t address;
    size_t bytes;
  };
  // Reserved addresses: one granule of zeros, then the allocation and at
  // least kSlackBytes of zeros past its end, so a kernel reading a little
  // out of bounds (both sides of a select, say) reads zeros, as it would
  // read neighbouring memory of a plain allocation, instead of faulting.
  struct Range {
    uint64_t base = 0;  // the reservation; the allocation starts a granule in
    size_t reserved = 0;
    size_t mapped = 0;  // from base
    std::vector<Chunk> chunks;
  };
  static constexpr size_t kSlackBytes = size_t{64} << 10;

  absl::Status MapChunk(Range& range, size_t bytes);
  void Release(Range& range);

  std::shared_ptr<CudaDriver> cu_;
  absl::Mutex mutex_;
  size_t granularity_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::flat_hash_map<uint64_t, Range> ranges_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_GROWABLE_MEMORY_H_
