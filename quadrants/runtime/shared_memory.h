#ifndef QUADRANTS_RUNTIME_SHARED_MEMORY_H_
#define QUADRANTS_RUNTIME_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace quadrants {

// Memory that a backend's kernels address directly and the host reads and
// writes through the same pointer once the backend is synchronized: host
// memory on the CPU, unified (managed) memory on CUDA. Fields' root buffer
// and qd.ndarray storage come from here, so host access code is the same on
// every backend.
class SharedMemoryAllocator {
 public:
  virtual ~SharedMemoryAllocator() = default;
  // `bytes` (at least one) zero-initialized bytes, aligned to 256.
  virtual absl::StatusOr<void*> Allocate(int64_t bytes) = 0;
  virtual void Free(void* data) = 0;
};

// Owns one allocation; keeps its allocator (and so the device context
// behind it) alive until the memory is released.
class SharedBuffer {
 public:
  SharedBuffer() = default;
  static absl::StatusOr<SharedBuffer> Allocate(
      std::shared_ptr<SharedMemoryAllocator> allocator, int64_t bytes);
  SharedBuffer(SharedBuffer&& other) noexcept;
  SharedBuffer& operator=(SharedBuffer&& other) noexcept;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer();

  char* get() const { return data_; }
  int64_t size() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }
  void reset();

 private:
  std::shared_ptr<SharedMemoryAllocator> allocator_;
  char* data_ = nullptr;
  int64_t bytes_ = 0;
};

// Plain host memory, for backends whose kernels run on the host.
class HostMemoryAllocator : public SharedMemoryAllocator {
 public:
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_SHARED_MEMORY_H_
