#include "quadrants/runtime/cuda/device_buffer.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::cuda {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(std::move(other.driver_)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    driver_ = std::move(other.driver_);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  Release();
}

void DeviceBuffer::Release() {
  if (ptr_ != 0)
    driver_->cuMemFree(ptr_);  // at teardown a failure has no one to tell
  ptr_ = 0;
  bytes_ = 0;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(
    std::shared_ptr<CudaDriver> driver, int64_t bytes) {
  DeviceBuffer buffer;
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1));
  QD_RETURN_IF_ERROR(
      driver->Check(driver->cuMemAlloc(&buffer.ptr_, size), "cuMemAlloc"));
  buffer.driver_ = std::move(driver);
  buffer.bytes_ = static_cast<int64_t>(size);
  return buffer;
}

absl::Status DeviceBuffer::Upload(const void* data, int64_t bytes) const {
  return driver_->Check(driver_->cuMemcpyHtoD(ptr_, data, bytes),
                        "cuMemcpyHtoD");
}

absl::Status DeviceBuffer::Download(void* data, int64_t bytes) const {
  return driver_->Check(driver_->cuMemcpyDtoH(data, ptr_, bytes),
                        "cuMemcpyDtoH");
}

absl::StatusOr<void*> ManagedMemoryAllocator::Allocate(int64_t bytes) {
  CUdeviceptr ptr = 0;
  const size_t size = static_cast<size_t>((bytes + 255) / 256 * 256);
  QD_RETURN_IF_ERROR(driver_->Check(
      driver_->cuMemAllocManaged(&ptr, size, CU_MEM_ATTACH_GLOBAL),
      "cuMemAllocManaged"));
  void* data = reinterpret_cast<void*>(ptr);
  std::memset(data, 0, size);
  return data;
}

void ManagedMemoryAllocator::Free(void* data) {
  driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(data));
}

}  // namespace quadrants::cuda
