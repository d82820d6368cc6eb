#ifndef QUADRANTS_RUNTIME_GPU_DEVICE_BUFFER_H_
#define QUADRANTS_RUNTIME_GPU_DEVICE_BUFFER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/gpu/device.h"

namespace quadrants::gpu {

// Device memory owned by the host, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  static absl::StatusOr<DeviceBuffer> Allocate(std::shared_ptr<Device> device,
                                               int64_t bytes);

  uint64_t get() const { return address_; }
  int64_t size() const { return bytes_; }
  // Copies `bytes` from the host to the start of the buffer, and back.
  absl::Status Upload(const void* data, int64_t bytes) const;
  absl::Status Download(void* data, int64_t bytes) const;

 private:
  void Release();

  std::shared_ptr<Device> device_;
  uint64_t address_ = 0;
  int64_t bytes_ = 0;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DEVICE_BUFFER_H_
