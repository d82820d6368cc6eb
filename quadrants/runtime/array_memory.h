#ifndef QUADRANTS_RUNTIME_ARRAY_MEMORY_H_
#define QUADRANTS_RUNTIME_ARRAY_MEMORY_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

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
  // Waits for the backend's queued work that touches this memory, so host
  // code may then read and write it in place (where host_addressable).
  virtual absl::Status WaitForQueuedWork() { return absl::OkStatus(); }
  // Copies `bytes` from `data` (memory from Allocate, at any offset) to
  // the host, and from the host into `data`.
  virtual absl::Status CopyToHost(void* host, const void* data, int64_t bytes);
  virtual absl::Status CopyFromHost(void* data, const void* host,
                                    int64_t bytes);
  // An allocation that can later grow in place (Grow) up to `max_bytes`,
  // so what points into it stays valid; null where this memory cannot do
  // that (callers then allocate anew and copy). Free releases it too.
  virtual absl::StatusOr<void*> AllocateGrowable(int64_t bytes,
                                                 int64_t max_bytes);
  // Makes `new_bytes` of a growable allocation usable, the added bytes
  // zero. Failure (past its reserve, out of memory) leaves it as it was.
  virtual absl::Status Grow(void* data, int64_t new_bytes);
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
  // A buffer that GrowInPlace can extend without moving, or an ordinary one
  // where the allocator has no growable memory (growable() says which).
  static absl::StatusOr<ArrayBuffer> AllocateGrowable(
      std::shared_ptr<ArrayMemory> allocator, int64_t bytes, int64_t max_bytes);
  absl::Status GrowInPlace(int64_t bytes);
  ArrayBuffer(ArrayBuffer&& other) noexcept;
  ArrayBuffer& operator=(ArrayBuffer&& other) noexcept;
  ArrayBuffer(const ArrayBuffer&) = delete;
  ArrayBuffer& operator=(const ArrayBuffer&) = delete;
  ~ArrayBuffer();

  char* get() const { return data_; }
  int64_t size() const { return bytes_; }
  bool growable() const { return growable_; }
  ArrayMemory& memory() const { return *allocator_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();

 private:
  std::shared_ptr<ArrayMemory> allocator_;
  char* data_ = nullptr;
  int64_t bytes_ = 0;
  bool growable_ = false;
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

// Plain host memory, for backends whose kernels run on the host. Growable
// allocations reserve address space (mmap, no memory behind it) and make
// pages usable as they grow.
class HostMemoryAllocator : public ArrayMemory {
 public:
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
  absl::StatusOr<void*> AllocateGrowable(int64_t bytes,
                                         int64_t max_bytes) override;
  absl::Status Grow(void* data, int64_t new_bytes) override;

 private:
  absl::Mutex mutex_;
  // Reserved bytes of each growable allocation.
  absl::flat_hash_map<void*, size_t> reserved_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_ARRAY_MEMORY_H_
