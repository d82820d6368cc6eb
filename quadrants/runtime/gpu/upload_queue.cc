#include "quadrants/runtime/gpu/upload_queue.h"

#include <cstring>

#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {

UploadQueue::~UploadQueue() {
  if (ring_ != nullptr) {
    // The device may still read the ring.
    (void)device_->Synchronize();
    device_->FreePinned(ring_);
  }
}

absl::Status UploadQueue::Copy(uint64_t address, const void* data,
                               int64_t bytes) {
  // Slices stay 256-byte aligned, as copies from pinned memory prefer.
  const int64_t slice = (bytes + 255) / 256 * 256;
  if (slice > capacity_)
    return device_->CopyToDevice(address, data, bytes);
  if (ring_ == nullptr) {
    QD_ASSIGN_OR_RETURN(void* ring, device_->AllocatePinned(capacity_));
    ring_ = static_cast<char*>(ring);
  }
  if (used_ + slice > capacity_) {
    QD_RETURN_IF_ERROR(device_->Synchronize());
    used_ = 0;
  }
  char* staged = ring_ + used_;
  std::memcpy(staged, data, static_cast<size_t>(bytes));
  used_ += slice;
  return device_->CopyToDeviceAsync(address, staged, bytes);
}

}  // namespace quadrants::gpu
