#include "quadrants/runtime/gpu/managed_memory.h"

#include <cstring>

#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

absl::StatusOr<void*> ManagedMemoryAllocator::Allocate(int64_t bytes) {
  const size_t size = static_cast<size_t>((bytes + 255) / 256 * 256);
  QD_ASSIGN_OR_RETURN(void* data, driver_->AllocateManaged(size));
  std::memset(data, 0, size);
  return data;
}

void ManagedMemoryAllocator::Free(void* data) {
  driver_->FreeManaged(data);
}

}  // namespace quadrants::gpu
