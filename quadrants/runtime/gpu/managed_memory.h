#ifndef QUADRANTS_RUNTIME_GPU_MANAGED_MEMORY_H_
#define QUADRANTS_RUNTIME_GPU_MANAGED_MEMORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "quadrants/runtime/gpu/driver.h"
#include "quadrants/runtime/shared_memory.h"

namespace quadrants::gpu {

// Fields and ndarrays in the driver's managed (unified) memory: kernels
// address it and the host reads and writes it through the same pointer once
// the device is synchronized.
class ManagedMemoryAllocator : public SharedMemoryAllocator {
 public:
  explicit ManagedMemoryAllocator(std::shared_ptr<Driver> driver)
      : driver_(std::move(driver)) {}
  absl::StatusOr<void*> Allocate(int64_t bytes) override;
  void Free(void* data) override;

 private:
  std::shared_ptr<Driver> driver_;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_MANAGED_MEMORY_H_
