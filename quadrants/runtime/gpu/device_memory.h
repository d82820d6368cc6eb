#ifndef QUADRANTS_RUNTIME_GPU_DEVICE_MEMORY_H_
#define QUADRANTS_RUNTIME_GPU_DEVICE_MEMORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/array_memory.h"
#include "quadrants/runtime/gpu/device.h"

namespace quadrants::gpu {

// Fields and ndarrays in plain device memory: kernels address it, the host
// reaches it only through the device's copies, which wait for queued
// launches (so a host read sees every launch before it).
class DeviceArrayMemory : public ArrayMemory {
 public:
  explicit DeviceArrayMemory(std::shared_ptr<Device> device)
      : device_(std::move(device)) {}
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
  bool host_addressable() const override { return false; }
  absl::Status CopyToHost(void* host, const void* data, int64_t bytes) override;
  absl::Status CopyFromHost(void* data, const void* host,
                            int64_t bytes) override;
  absl::StatusOr<void*> AllocateGrowable(int64_t bytes,
                                         int64_t max_bytes) override;
  absl::Status Grow(void* data, int64_t new_bytes) override;

 private:
  std::shared_ptr<Device> device_;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DEVICE_MEMORY_H_
