#ifndef QUADRANTS_RUNTIME_GPU_UPLOAD_QUEUE_H_
#define QUADRANTS_RUNTIME_GPU_UPLOAD_QUEUE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "quadrants/runtime/gpu/device.h"

namespace quadrants::gpu {

// Queues small host-to-device copies (launch contexts) behind the launches
// already queued, without waiting for them: each copy's bytes go to a slice
// of one pinned ring buffer, which the device reads when it reaches the
// copy. A full ring waits for the device once and starts over; so does any
// synchronization (Drained()).
class UploadQueue {
 public:
  UploadQueue(std::shared_ptr<Device> device, int64_t capacity)
      : device_(std::move(device)), capacity_(capacity) {}
  ~UploadQueue();
  UploadQueue(const UploadQueue&) = delete;
  UploadQueue& operator=(const UploadQueue&) = delete;

  // Queues a copy of `bytes` from `data` to device `address`; `data` may
  // change as soon as this returns.
  absl::Status Copy(uint64_t address, const void* data, int64_t bytes);
  // The device has run everything queued: the whole ring is free.
  void Drained() { used_ = 0; }

 private:
  std::shared_ptr<Device> device_;
  int64_t capacity_;
  char* ring_ = nullptr;  // pinned, allocated at the first copy
  int64_t used_ = 0;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_UPLOAD_QUEUE_H_
