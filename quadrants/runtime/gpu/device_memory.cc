#include "quadrants/runtime/gpu/device_memory.h"

#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

absl::StatusOr<void*> DeviceArrayMemory::Allocate(int64_t bytes) {
  const int64_t size = (bytes + 255) / 256 * 256;
  QD_ASSIGN_OR_RETURN(uint64_t address, device_->Allocate(size));
  absl::Status zeroed = device_->Zero(address, size);
  if (!zeroed.ok()) {
    device_->Free(address);
    return zeroed;
  }
  return reinterpret_cast<void*>(address);
}

absl::StatusOr<void*> DeviceArrayMemory::AllocateGrowable(int64_t bytes,
                                                          int64_t max_bytes) {
  QD_ASSIGN_OR_RETURN(uint64_t address,
                      device_->AllocateGrowable(bytes, max_bytes));
  return reinterpret_cast<void*>(address);
}

absl::Status DeviceArrayMemory::Grow(void* data, int64_t new_bytes) {
  return device_->Grow(reinterpret_cast<uint64_t>(data), new_bytes);
}

void DeviceArrayMemory::Free(void* data) {
  device_->Free(reinterpret_cast<uint64_t>(data));
}

absl::Status DeviceArrayMemory::CopyToHost(void* host, const void* data,
                                           int64_t bytes) {
  if (bytes <= 0)
    return absl::OkStatus();
  return device_->CopyToHost(host, reinterpret_cast<uint64_t>(data), bytes);
}

absl::Status DeviceArrayMemory::CopyFromHost(void* data, const void* host,
                                             int64_t bytes) {
  if (bytes <= 0)
    return absl::OkStatus();
  return device_->CopyToDevice(reinterpret_cast<uint64_t>(data), host, bytes);
}

}  // namespace quadrants::gpu
