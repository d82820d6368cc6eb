#include "quadrants/runtime/array_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants {

absl::StatusOr<ArrayBuffer> ArrayBuffer::Allocate(
    std::shared_ptr<ArrayMemory> allocator, int64_t bytes) {
  bytes = std::max<int64_t>(1, bytes);
  absl::StatusOr<void*> data = allocator->Allocate(bytes);
  if (!data.ok())
    return data.status();
  ArrayBuffer buffer;
  buffer.allocator_ = std::move(allocator);
  buffer.data_ = static_cast<char*>(*data);
  buffer.bytes_ = bytes;
  return buffer;
}

ArrayBuffer ArrayBuffer::Adopt(std::shared_ptr<ArrayMemory> allocator,
                               char* data, int64_t bytes) {
  ArrayBuffer buffer;
  buffer.allocator_ = std::move(allocator);
  buffer.data_ = data;
  buffer.bytes_ = bytes;
  return buffer;
}

absl::StatusOr<void*> BorrowedMemory::Allocate(int64_t bytes) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("borrowed memory allocates nothing (asked for ",
                                bytes, " bytes)"));
}

void BorrowedMemory::Free(void* /*data*/) {
  if (release_) {
    std::function<void()> release = std::move(release_);
    release_ = nullptr;
    release();
  }
}

ArrayBuffer::ArrayBuffer(ArrayBuffer&& other) noexcept
    : allocator_(std::move(other.allocator_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

ArrayBuffer& ArrayBuffer::operator=(ArrayBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    allocator_ = std::move(other.allocator_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ArrayBuffer::~ArrayBuffer() {
  reset();
}

void ArrayBuffer::reset() {
  if (data_ != nullptr)
    allocator_->Free(data_);
  data_ = nullptr;
  bytes_ = 0;
  allocator_.reset();
}

absl::Status ArrayMemory::CopyToHost(void* host, const void* data,
                                     int64_t bytes) {
  if (bytes > 0)
    std::memcpy(host, data, static_cast<size_t>(bytes));
  return absl::OkStatus();
}

absl::Status ArrayMemory::CopyFromHost(void* data, const void* host,
                                       int64_t bytes) {
  if (bytes > 0)
    std::memcpy(data, host, static_cast<size_t>(bytes));
  return absl::OkStatus();
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
