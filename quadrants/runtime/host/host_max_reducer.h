#ifndef QUADRANTS_RUNTIME_HOST_HOST_MAX_REDUCER_H_
#define QUADRANTS_RUNTIME_HOST_HOST_MAX_REDUCER_H_

#include <memory>

#include "quadrants/runtime/adstack/max_reducer.h"
#include "quadrants/runtime/host/thread_pool.h"

namespace quadrants::host {

// Max-reduces adstack sizing specs on a host thread pool: each thread
// interprets the body bytecode over its chunks of the points and keeps its
// own maximum; the maxima are combined at the end. Reads go through host
// pointers, so any backend whose sizing inputs the host can read (CPU,
// unified or host-visible GPU memory) can use it.
class HostMaxReducer : public adstack::MaxReducer {
 public:
  // Reduces on `pool`, which the caller keeps alive and does not use
  // concurrently.
  explicit HostMaxReducer(ThreadPool* pool) : pool_(pool) {}
  // Reduces on a pool of its own, one thread per hardware thread.
  HostMaxReducer();
  ~HostMaxReducer() override;

  absl::StatusOr<std::vector<int64_t>> Reduce(
      absl::Span<const adstack::ReducerJob> jobs) override;

 private:
  std::unique_ptr<ThreadPool> own_pool_;
  ThreadPool* pool_;
};

}  // namespace quadrants::host

#endif  // QUADRANTS_RUNTIME_HOST_HOST_MAX_REDUCER_H_
