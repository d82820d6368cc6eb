#include "quadrants/runtime/gpu/gpu_max_reducer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {
namespace {

constexpr unsigned kBlock = 256;

// Past this many points a reduction would run for seconds: raise instead,
// and the serial walk's guard names the loop.
constexpr int64_t kMaxPoints = int64_t{1} << 40;

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

absl::Status GpuMaxReducer::Reserve(DeviceBuffer* buffer, int64_t bytes) {
  if (buffer->size() >= bytes)
    return absl::OkStatus();
  QD_ASSIGN_OR_RETURN(
      *buffer, DeviceBuffer::Allocate(device_, std::max<int64_t>(bytes, 4096)));
  return absl::OkStatus();
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
  QD_ASSIGN_OR_RETURN(void* function, Kernel(codegen::MaxReduceShape::Of(job)));
  const std::vector<int64_t> params = codegen::MaxReduceParams(job);
  const int64_t param_bytes = static_cast<int64_t>(params.size() * 8);
  QD_RETURN_IF_ERROR(Reserve(&params_, param_bytes));
  QD_RETURN_IF_ERROR(Reserve(&out_, 8));
  QD_RETURN_IF_ERROR(params_.Upload(params.data(), param_bytes));
  int64_t result = adstack::kNoValue;
  QD_RETURN_IF_ERROR(out_.Upload(&result, 8));
  KernelLaunch launch;
  launch.function = function;
  launch.block = kBlock;
  const int64_t blocks = (points + kBlock - 1) / kBlock;
  launch.grid = static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>(blocks, resident_threads_ / kBlock)));
  launch.params = {params_.get(), out_.get()};
  QD_RETURN_IF_ERROR(device_->Launch(launch));
  QD_RETURN_IF_ERROR(out_.Download(&result, 8));
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
