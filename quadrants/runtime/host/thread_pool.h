#ifndef QUADRANTS_RUNTIME_HOST_THREAD_POOL_H_
#define QUADRANTS_RUNTIME_HOST_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace quadrants::host {

// A fixed set of threads for parallel loops. The calling thread takes part
// as thread 0 and workers are 1 .. num_threads-1, so every chunk runs with a
// stable thread id in [0, num_threads) (per-thread scratch such as the
// adstack heap is sliced by it).
class ThreadPool {
 public:
  // num_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  using ChunkFn =
      std::function<void(int64_t begin, int64_t end, int thread_id)>;
  // Splits [begin, end) into chunks and runs `body` on them in parallel;
  // returns when all are done. Chunks are multiples of `grain` iterations
  // (but the last), so SIMD-lane tasks run full steps. Only threads
  // 0 .. max_threads-1 run chunks when max_threads > 0 (per-thread scratch
  // sized for fewer threads). Not reentrant.
  void ParallelFor(int64_t begin, int64_t end, const ChunkFn& body,
                   int64_t grain = 1, int max_threads = 0);

  // How many distinct threads ran chunks in the last ParallelFor.
  int threads_used_last() const { return threads_used_last_; }

 private:
  void WorkerLoop(int thread_id);
  void RunChunks(int thread_id);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  int workers_busy_ = 0;

  // The job being run.
  const ChunkFn* body_ = nullptr;
  int64_t end_ = 0;
  int64_t chunk_ = 1;
  int active_threads_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> used_mask_{0};
  int threads_used_last_ = 0;
};

}  // namespace quadrants::host

#endif  // QUADRANTS_RUNTIME_HOST_THREAD_POOL_H_
