#include "quadrants/runtime/array_memory.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

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

absl::StatusOr<ArrayBuffer> ArrayBuffer::AllocateGrowable(
    std::shared_ptr<ArrayMemory> allocator, int64_t bytes, int64_t max_bytes) {
  bytes = std::max<int64_t>(1, bytes);
  absl::StatusOr<void*> data =
      allocator->AllocateGrowable(bytes, std::max(bytes, max_bytes));
  if (!data.ok())
    return data.status();
  if (*data == nullptr)
    return Allocate(std::move(allocator), bytes);
  ArrayBuffer buffer;
  buffer.allocator_ = std::move(allocator);
  buffer.data_ = static_cast<char*>(*data);
  buffer.bytes_ = bytes;
  buffer.growable_ = true;
  return buffer;
}

absl::Status ArrayBuffer::GrowInPlace(int64_t bytes) {
  if (!growable_) {
    return MakeError(ErrorKind::kRuntime,
                     "GrowInPlace on a buffer that cannot grow in place");
  }
  if (bytes <= bytes_)
    return absl::OkStatus();
  absl::Status grown = allocator_->Grow(data_, bytes);
  if (!grown.ok())
    return grown;
  bytes_ = bytes;
  return absl::OkStatus();
}

ArrayBuffer::ArrayBuffer(ArrayBuffer&& other) noexcept
    : allocator_(std::move(other.allocator_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      growable_(std::exchange(other.growable_, false)) {}

ArrayBuffer& ArrayBuffer::operator=(ArrayBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    allocator_ = std::move(other.allocator_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    growable_ = std::exchange(other.growable_, false);
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
  growable_ = false;
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

absl::StatusOr<void*> ArrayMemory::AllocateGrowable(int64_t /*bytes*/,
                                                    int64_t /*max_bytes*/) {
  return nullptr;
}

absl::Status ArrayMemory::Grow(void* /*data*/, int64_t new_bytes) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("this memory cannot grow an allocation in "
                                "place (to ",
                                new_bytes, " bytes)"));
}

namespace {

size_t PageRounded(int64_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (static_cast<size_t>(bytes) + page - 1) / page * page;
}

// Usable zero bytes on either side of a growable allocation: a kernel that
// reads a little out of bounds (both sides of a select, say) reads zeros
// there, as it would read neighbouring heap memory from malloc, instead of
// faulting on an unopened page.
constexpr size_t kGrowableSlack = size_t{64} << 10;

}  // namespace

absl::StatusOr<void*> HostMemoryAllocator::AllocateGrowable(int64_t bytes,
                                                            int64_t max_bytes) {
  const size_t reserve = PageRounded(max_bytes) + 2 * kGrowableSlack;
  // Address space only: no memory is committed until pages are opened.
  void* base = mmap(nullptr, reserve, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED)
    return nullptr;  // no room to reserve: an ordinary allocation
  if (mprotect(base, PageRounded(bytes) + 2 * kGrowableSlack,
               PROT_READ | PROT_WRITE) != 0) {
    munmap(base, reserve);
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("out of host memory allocating ", bytes, " bytes"));
  }
  char* data = static_cast<char*>(base) + kGrowableSlack;
  absl::MutexLock lock(&mutex_);
  reserved_[data] = reserve;
  return data;
}

absl::Status HostMemoryAllocator::Grow(void* data, int64_t new_bytes) {
  size_t reserve = 0;
  {
    absl::MutexLock lock(&mutex_);
    auto it = reserved_.find(data);
    if (it == reserved_.end())
      return ArrayMemory::Grow(data, new_bytes);
    reserve = it->second;
  }
  const size_t open = PageRounded(new_bytes) + 2 * kGrowableSlack;
  if (open > reserve) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("growing to ", new_bytes,
                                  " bytes passes the ", reserve,
                                  " bytes reserved for it"));
  }
  // Pages opened now read as zero (anonymous memory).
  char* base = static_cast<char*>(data) - kGrowableSlack;
  if (mprotect(base, open, PROT_READ | PROT_WRITE) != 0) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("out of host memory growing to ", new_bytes, " bytes"));
  }
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
  {
    absl::MutexLock lock(&mutex_);
    auto it = reserved_.find(data);
    if (it != reserved_.end()) {
      munmap(static_cast<char*>(data) - kGrowableSlack, it->second);
      reserved_.erase(it);
      return;
    }
  }
  std::free(data);
}

}  // namespace quadrants
