#include "quadrants/runtime/shared_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants {

absl::StatusOr<SharedBuffer> SharedBuffer::Allocate(
    std::shared_ptr<SharedMemoryAllocator> allocator, int64_t bytes) {
  bytes = std::max<int64_t>(1, bytes);
  absl::StatusOr<void*> data = allocator->Allocate(bytes);
  if (!data.ok())
    return data.status();
  SharedBuffer buffer;
  buffer.allocator_ = std::move(allocator);
  buffer.data_ = static_cast<char*>(*data);
  buffer.bytes_ = bytes;
  return buffer;
}

SharedBuffer::SharedBuffer(SharedBuffer&& other) noexcept
    : allocator_(std::move(other.allocator_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

SharedBuffer& SharedBuffer::operator=(SharedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    allocator_ = std::move(other.allocator_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

SharedBuffer::~SharedBuffer() {
  reset();
}

void SharedBuffer::reset() {
  if (data_ != nullptr)
    allocator_->Free(data_);
  data_ = nullptr;
  bytes_ = 0;
  allocator_.reset();
}

absl::StatusOr<void*> HostMemoryAllocator::Allocate(int64_t bytes) {
  const size_t size = (static_cast<size_t>(bytes) + 255) / 256 * 256;
  void* data = std::aligned_alloc(256, size);
  if (data == nullptr) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("out of host memory allocating ", bytes, " bytes"));
  }
  std::memset(data, 0, size);
  return data;
}

void HostMemoryAllocator::Free(void* data) {
  std::free(data);
}

}  // namespace quadrants
