#ifndef QUADRANTS_RUNTIME_AMDGPU_HIP_DEVICE_H_
#define QUADRANTS_RUNTIME_AMDGPU_HIP_DEVICE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/amdgpu/hip_driver.h"
#include "quadrants/runtime/gpu/device.h"
#include "quadrants/runtime/shared_memory.h"

namespace quadrants::amdgpu {

// The shared GPU launcher's device interface over HIP: hipMalloc memory,
// synchronous copies and module launches on the null stream.
class HipDevice : public gpu::Device {
 public:
  explicit HipDevice(std::shared_ptr<HipDriver> driver)
      : driver_(std::move(driver)) {}

  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override;
  void Free(uint64_t address) override;
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override;
  absl::Status CopyToHost(void* data, uint64_t address, int64_t bytes) override;
  absl::Status Launch(const gpu::KernelLaunch& launch) override;
  absl::Status Synchronize() override;

 private:
  std::shared_ptr<HipDriver> driver_;
};

// Managed memory (hipMallocManaged) for fields and ndarrays: kernels address
// it and the host reads and writes it through the same pointer once the
// device is synchronized.
class HipManagedMemoryAllocator : public SharedMemoryAllocator {
 public:
  explicit HipManagedMemoryAllocator(std::shared_ptr<HipDriver> driver)
      : driver_(std::move(driver)) {}
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;

 private:
  std::shared_ptr<HipDriver> driver_;
};

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_HIP_DEVICE_H_
