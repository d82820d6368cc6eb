#include "quadrants/runtime/host/host_max_reducer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::host {
namespace {

// Below this many points a job runs on the calling thread: waking the pool
// costs more than it saves.
constexpr int64_t kSerialPoints = int64_t{1} << 16;

// Past this many points a reduction would run for minutes: raise instead.
constexpr int64_t kMaxPoints = int64_t{1} << 40;

}  // namespace

HostMaxReducer::HostMaxReducer()
    : own_pool_(std::make_unique<ThreadPool>(0)), pool_(own_pool_.get()) {}

HostMaxReducer::~HostMaxReducer() = default;

absl::StatusOr<std::vector<int64_t>> HostMaxReducer::Reduce(
    absl::Span<const adstack::ReducerJob> jobs) {
  std::vector<int64_t> out;
  out.reserve(jobs.size());
  for (const adstack::ReducerJob& job : jobs) {
    const int64_t points = job.Points();
    if (points > kMaxPoints) {
      return MakeError(
          ErrorKind::kRuntime,
          absl::StrCat("adstack sizing: a maximum over ", points,
                       " points exceeds the reducer's limit of ", kMaxPoints));
    }
    if (points <= kSerialPoints || pool_->num_threads() == 1) {
      out.push_back(adstack::BodyInterpreter(job).Reduce(0, points));
      continue;
    }
    const int threads = pool_->num_threads();
    std::vector<std::unique_ptr<adstack::BodyInterpreter>> interpreters(
        threads);
    // Per-thread maxima, a cache line apart.
    constexpr int kPad = 8;
    std::vector<int64_t> best(threads * kPad, adstack::kNoValue);
    pool_->ParallelFor(0, points, [&](int64_t lo, int64_t hi, int thread) {
      auto& interpreter = interpreters[thread];
      if (!interpreter)
        interpreter = std::make_unique<adstack::BodyInterpreter>(job);
      best[thread * kPad] =
          std::max(best[thread * kPad], interpreter->Reduce(lo, hi));
    });
    out.push_back(*std::max_element(best.begin(), best.end()));
  }
  return out;
}

}  // namespace quadrants::host
