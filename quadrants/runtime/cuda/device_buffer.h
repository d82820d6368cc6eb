#ifndef QUADRANTS_RUNTIME_CUDA_DEVICE_BUFFER_H_
#define QUADRANTS_RUNTIME_CUDA_DEVICE_BUFFER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/shared_memory.h"

namespace quadrants::cuda {

// Device memory (cuMemAlloc) owned by the host, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  static absl::StatusOr<DeviceBuffer> Allocate(
      std::shared_ptr<CudaDriver> driver, int64_t bytes);

  CUdeviceptr get() const { return ptr_; }
  int64_t size() const { return bytes_; }
  // Copies `bytes` from the host to the start of the buffer, and back.
  absl::Status Upload(const void* data, int64_t bytes) const;
  absl::Status Download(void* data, int64_t bytes) const;

 private:
  void Release();

  std::shared_ptr<CudaDriver> driver_;
  CUdeviceptr ptr_ = 0;
  int64_t bytes_ = 0;
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

#endif  // QUADRANTS_RUNTIME_CUDA_DEVICE_BUFFER_H_
