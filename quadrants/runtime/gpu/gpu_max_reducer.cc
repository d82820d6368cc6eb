#include "quadrants/runtime/gpu/gpu_max_reducer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {
namespace {

constexpr unsigned kBlock = codegen::kMaxReduceBlock;

// Past this many points a reduction would run for seconds: raise instead,
// and the serial walk's guard names the loop.
constexpr int64_t kMaxPoints = int64_t{1} << 40;

// Kernel arguments CUDA passes (4 KiB) with the result's address.
constexpr int kMaxParams = 500;

// Result slots, each starting at kNoValue: a reduction takes the next one,
// so a launch copies nothing in; refilled when all are used.
constexpr int64_t kSlots = 4096;

// Blocks of the grid per resident block: a few waves even out the SMs'
// finishing times.
constexpr int64_t kWaves = 2;

}  // namespace

GpuMaxReducer::GpuMaxReducer(std::shared_ptr<Device> device,
                             MaxReduceLoader loader, int resident_threads)
    : device_(std::move(device)),
      loader_(std::move(loader)),
      resident_threads_(std::max(resident_threads, static_cast<int>(kBlock))) {}

absl::StatusOr<void*> GpuMaxReducer::Kernel(
    const codegen::MaxReduceShape& shape) {
  std::string key = shape.Key();
  if (auto it = kernels_.find(key); it != kernels_.end())
    return it->second;
  QD_ASSIGN_OR_RETURN(void* function, loader_(shape));
  kernels_.emplace(std::move(key), function);
  return function;
}

absl::StatusOr<uint64_t> GpuMaxReducer::NextSlot() {
  if (!slots_.get() || next_slot_ == kSlots) {
    if (!slots_.get()) {
      QD_ASSIGN_OR_RETURN(slots_, DeviceBuffer::Allocate(device_, kSlots * 8));
    }
    const std::vector<int64_t> empty(kSlots, adstack::kNoValue);
    QD_RETURN_IF_ERROR(slots_.Upload(empty.data(), kSlots * 8));
    next_slot_ = 0;
  }
  return slots_.get() + static_cast<uint64_t>(8 * next_slot_++);
}

absl::StatusOr<int64_t> GpuMaxReducer::ReduceOne(
    const adstack::ReducerJob& job) {
  const int64_t points = job.Points();
  if (points == 0 || job.code.empty())
    return adstack::kNoValue;
  if (points > kMaxPoints) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("adstack sizing: a maximum over ", points,
                     " points exceeds the reducer's limit of ", kMaxPoints));
  }
  const codegen::MaxReduceShape shape = codegen::MaxReduceShape::Of(job);
  if (shape.NumParams() > kMaxParams) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("adstack sizing: a reducer kernel would take ",
                     shape.NumParams(), " parameters, over ", kMaxParams));
  }
  QD_ASSIGN_OR_RETURN(void* function, Kernel(shape));
  QD_ASSIGN_OR_RETURN(const uint64_t out, NextSlot());
  KernelLaunch launch;
  launch.function = function;
  launch.block = kBlock;
  const int64_t blocks = (points + kBlock - 1) / kBlock;
  launch.grid = static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(blocks, kWaves * resident_threads_ / kBlock)));
  launch.params = {out};
  for (int64_t word : codegen::MaxReduceParams(job))
    launch.params.push_back(static_cast<uint64_t>(word));
  QD_RETURN_IF_ERROR(device_->Launch(launch));
  int64_t result = adstack::kNoValue;
  QD_RETURN_IF_ERROR(device_->CopyToHost(&result, out, 8));
  ++device_jobs_;
  return result;
}

absl::StatusOr<std::vector<int64_t>> GpuMaxReducer::Reduce(
    absl::Span<const adstack::ReducerJob> jobs) {
  std::vector<int64_t> out;
  out.reserve(jobs.size());
  for (const adstack::ReducerJob& job : jobs) {
    QD_ASSIGN_OR_RETURN(int64_t value, ReduceOne(job));
    out.push_back(value);
  }
  return out;
}

}  // namespace quadrants::gpu
