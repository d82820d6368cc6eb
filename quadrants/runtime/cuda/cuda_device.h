#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_DEVICE_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_DEVICE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/gpu/device.h"
#include "quadrants/runtime/shared_memory.h"

namespace quadrants::cuda {

// The shared GPU launcher's device interface over the CUDA driver API:
// cuMemAlloc memory, synchronous copies and launches on the default stream.
class CudaDevice : public gpu::Device {
 public:
  explicit CudaDevice(std::shared_ptr<CudaDriver> driver)
      : driver_(std::move(driver)) {}

  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override;
  void Free(uint64_t address) override;
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override;
  absl::Status CopyToHost(void* data, uint64_t address, int64_t bytes) override;
  absl::Status Launch(const gpu::KernelLaunch& launch) override;
  absl::Status Synchronize() override;

 private:
  std::shared_ptr<CudaDriver> driver_;
};

// Unified memory (cuMemAllocManaged): the device addresses it in kernels and
// the host through the same pointer once the device is synchronized.
class ManagedMemoryAllocator : public SharedMemoryAllocator {
 public:
  explicit ManagedMemoryAllocator(std::shared_ptr<CudaDriver> driver)
      : driver_(std::move(driver)) {}
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;

 private:
  std::shared_ptr<CudaDriver> driver_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_DEVICE_H_
