#include "quadrants/runtime/gpu/device_buffer.h"

#include <algorithm>
#include <utility>

#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(std::move(other.device_)),
      address_(std::exchange(other.address_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    device_ = std::move(other.device_);
    address_ = std::exchange(other.address_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  Release();
}

void DeviceBuffer::Release() {
  if (address_ != 0)
    device_->Free(address_);
  address_ = 0;
  bytes_ = 0;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(
    std::shared_ptr<Device> device, int64_t bytes) {
  DeviceBuffer buffer;
  const int64_t size = std::max<int64_t>(bytes, 1);
  QD_ASSIGN_OR_RETURN(buffer.address_, device->Allocate(size));
  buffer.device_ = std::move(device);
  buffer.bytes_ = size;
  return buffer;
}

absl::Status DeviceBuffer::Upload(const void* data, int64_t bytes) const {
  return device_->CopyToDevice(address_, data, bytes);
}

absl::Status DeviceBuffer::Download(void* data, int64_t bytes) const {
  return device_->CopyToHost(data, address_, bytes);
}

}  // namespace quadrants::gpu
