#include "quadrants/runtime/host/thread_pool.h"

#include <algorithm>
#include <bitset>

namespace quadrants::host {

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(num_threads > 0
                       ? num_threads
                       : std::max(1u, std::thread::hardware_concurrency())) {
  for (int id = 1; id < num_threads_; ++id) {
    workers_.emplace_back([this, id] { WorkerLoop(id); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_)
    worker.join();
}

void ThreadPool::RunChunks(int thread_id) {
  if (thread_id >= active_threads_)
    return;
  bool ran = false;
  for (;;) {
    const int64_t start = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (start >= end_)
      break;
    (*body_)(start, std::min(start + chunk_, end_), thread_id);
    ran = true;
  }
  if (ran && thread_id < 64) {
    used_mask_.fetch_or(uint64_t{1} << thread_id, std::memory_order_relaxed);
  }
}

void ThreadPool::WorkerLoop(int thread_id) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_)
        return;
      seen = generation_;
    }
    RunChunks(thread_id);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--workers_busy_ == 0)
        work_done_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t begin, int64_t end, const ChunkFn& body,
                             int64_t grain, int max_threads) {
  if (end <= begin) {
    threads_used_last_ = 0;
    return;
  }
  active_threads_ =
      max_threads > 0 ? std::min(max_threads, num_threads_) : num_threads_;
  const int64_t total = end - begin;
  // About eight chunks per thread balances load without much contention.
  chunk_ = std::max<int64_t>(1, total / (int64_t{active_threads_} * 8));
  chunk_ = (chunk_ + grain - 1) / grain * grain;
  body_ = &body;
  end_ = end;
  next_.store(begin);
  used_mask_.store(0);
  if (active_threads_ == 1 || total <= chunk_) {
    RunChunks(0);
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      workers_busy_ = static_cast<int>(workers_.size());
      ++generation_;
    }
    work_ready_.notify_all();
    RunChunks(0);
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [&] { return workers_busy_ == 0; });
  }
  threads_used_last_ =
      static_cast<int>(std::bitset<64>(used_mask_.load()).count());
  body_ = nullptr;
}

}  // namespace quadrants::host
