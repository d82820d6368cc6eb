#ifndef QUADRANTS_RUNTIME_ARRAY_MEMORY_H_
#define QUADRANTS_RUNTIME_ARRAY_MEMORY_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"

namespace quadrants {

// Where a backend's fields and ndarrays live: memory its kernels address
// (host memory on the CPU, device memory on CUDA and AMDGPU, buffers on
// Vulkan). The host reaches it only through the copies below, which wait
// for the backend's queued work that touches it; where the host addresses
// the memory directly they are plain memcpy.
class ArrayMemory {
 public:
  virtual ~ArrayMemory() = default;
  // `bytes` (at least one) zero-initialized bytes, aligned to 256. Failure
  // is a runtime error naming the byte count.
  virtual absl::StatusOr<void*> Allocate(int64_t bytes) = 0;
  virtual void Free(void* data) = 0;
  // Whether the host may dereference the memory (after a sync), so host
  // code can read it in place instead of copying.
  virtual bool host_addressable() const { return true; }
  // Copies `bytes` from `data` (memory from Allocate, at any offset) to
  // the host, and from the host into `data`.
  virtual absl::Status CopyToHost(void* host, const void* data, int64_t bytes);
  virtual absl::Status CopyFromHost(void* data, const void* host,
                                    int64_t bytes);
};

// Owns one allocation; keeps its allocator (and so the device context
// behind it) alive until the memory is released.
class ArrayBuffer {
 public:
  ArrayBuffer() = default;
  static absl::StatusOr<ArrayBuffer> Allocate(
      std::shared_ptr<ArrayMemory> allocator, int64_t bytes);
  // `bytes` at `data`, which `allocator` did not allocate: the buffer
  // calls allocator->Free(data) when done, which gives it back to whoever
  // lent it (see BorrowedMemory).
  static ArrayBuffer Adopt(std::shared_ptr<ArrayMemory> allocator, char* data,
                           int64_t bytes);
  ArrayBuffer(ArrayBuffer&& other) noexcept;
  ArrayBuffer& operator=(ArrayBuffer&& other) noexcept;
  ArrayBuffer(const ArrayBuffer&) = delete;
  ArrayBuffer& operator=(const ArrayBuffer&) = delete;
  ~ArrayBuffer();

  char* get() const { return data_; }
  int64_t size() const { return bytes_; }
  ArrayMemory& memory() const { return *allocator_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();

 private:
  std::shared_ptr<ArrayMemory> allocator_;
  char* data_ = nullptr;
  int64_t bytes_ = 0;
};

// Memory another library owns (a DLPack producer's), in a backend's array
// memory space: copies go through that memory; Free runs `release`, which
// hands the memory back to its owner.
class BorrowedMemory : public ArrayMemory {
 public:
  BorrowedMemory(std::shared_ptr<ArrayMemory> space,
                 std::function<void()> release)
      : space_(std::move(space)), release_(std::move(release)) {}
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
  bool host_addressable() const override { return space_->host_addressable(); }
  absl::Status CopyToHost(void* host, const void* data, int64_t bytes) override {
    return space_->CopyToHost(host, data, bytes);
  }
  absl::Status CopyFromHost(void* data, const void* host,
                            int64_t bytes) override {
    return space_->CopyFromHost(data, host, bytes);
  }

 private:
  std::shared_ptr<ArrayMemory> space_;
  std::function<void()> release_;
};

// Plain host memory, for backends whose kernels run on the host.
class HostMemoryAllocator : public ArrayMemory {
 public:
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_ARRAY_MEMORY_H_
