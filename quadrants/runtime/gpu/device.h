#ifndef QUADRANTS_RUNTIME_GPU_DEVICE_H_
#define QUADRANTS_RUNTIME_GPU_DEVICE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace quadrants::gpu {

// One kernel launch: a function of a loaded module (the driver's handle),
// a 1-D shape and the parameters, each a 64-bit value (device pointers and
// i64 range ends).
struct KernelLaunch {
  void* function = nullptr;
  unsigned grid = 1;
  unsigned block = 1;
  std::vector<uint64_t> params;
  // Dynamic block-shared memory (the task's shared arrays).
  unsigned shared_bytes = 0;
};

// What the shared GPU launcher needs from a driver (CUDA, HIP): device
// memory, copies to and from it, launches queued in order on one stream and
// a wait for them. Errors name the driver call that failed.
class Device {
 public:
  virtual ~Device() = default;
  // `bytes` (at least one) of device memory; its address as the kernels
  // see it. Failure names the byte count.
  virtual absl::StatusOr<uint64_t> Allocate(int64_t bytes) = 0;
  // At teardown a failure has no one to tell, so freeing reports nothing.
  virtual void Free(uint64_t address) = 0;
  // `bytes` (zeroed) of an allocation that Grow can extend in place up to
  // `max_bytes`, so addresses into it stay valid; 0 where the device cannot
  // (callers then allocate anew and copy). Free releases it too.
  virtual absl::StatusOr<uint64_t> AllocateGrowable(int64_t /*bytes*/,
                                                    int64_t /*max_bytes*/) {
    return 0;
  }
  // Makes `new_bytes` of a growable allocation usable, the added bytes zero.
  // Only allocations from AllocateGrowable grow, and only where it
  // returned one.
  virtual absl::Status Grow(uint64_t /*address*/, int64_t /*new_bytes*/) {
    return absl::FailedPreconditionError(
        "this device cannot grow an allocation in place");
  }
  // Copies that wait for the queued work, then copy, then return.
  virtual absl::Status CopyToDevice(uint64_t address, const void* data,
                                    int64_t bytes) = 0;
  virtual absl::Status CopyToHost(void* data, uint64_t address,
                                  int64_t bytes) = 0;
  // Queued after the work queued so far. `pinned` (from AllocatePinned)
  // must keep its bytes until that copy has run.
  virtual absl::Status CopyToDeviceAsync(uint64_t address, const void* pinned,
                                         int64_t bytes) = 0;
  // Queued: sets `bytes` bytes at `address` to zero.
  virtual absl::Status Zero(uint64_t address, int64_t bytes) = 0;
  // Page-locked host memory the device copies from without staging.
  virtual absl::StatusOr<void*> AllocatePinned(int64_t bytes) = 0;
  virtual void FreePinned(void* data) = 0;
  virtual absl::Status Launch(const KernelLaunch& launch) = 0;
  virtual absl::Status Synchronize() = 0;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DEVICE_H_
