#include "quadrants/runtime/llvm/host/launch_state.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/ir/snode.h"

namespace quadrants::llvm_runtime {
namespace {

// The print buffer starts at 1 MiB and grows, after a launch that overflowed
// it, to what that launch asked for (at most 256 MiB).
constexpr int64_t kInitialPrintBufferBytes = int64_t{1} << 20;
constexpr int64_t kMaxPrintBufferBytes = int64_t{1} << 28;

static_assert(QD_MAX_NDIM == ir::kMaxAxes,
              "the launch context holds every axis of an ndarray");

}  // namespace

absl::Status FillLaunchContext(const CompiledKernel& kernel,
                               absl::Span<const ResolvedArgument> args,
                               QdRuntime* runtime, uint64_t random_key,
                               uint64_t launch_id, QdLaunchContext* ctx) {
  if (args.size() > QD_MAX_ARGS) {
    return MakeError(
        ErrorKind::kType,
        absl::StrCat("kernel '", kernel.name(), "' takes ", args.size(),
                     " arguments; at most ", QD_MAX_ARGS, " are supported"));
  }
  *ctx = QdLaunchContext{};
  ctx->runtime = runtime;
  ctx->random_key = random_key;
  ctx->launch_id = static_cast<int64_t>(launch_id);
  for (size_t i = 0; i < args.size(); ++i) {
    ctx->args[i] = args[i].slot;
    ctx->ndarray_data[i] = args[i].data;
    for (size_t axis = 0; axis < args[i].shape.size() && axis < QD_MAX_NDIM;
         ++axis) {
      ctx->ndarray_shape[i][axis] = args[i].shape[axis];
    }
  }
  return absl::OkStatus();
}

absl::Status PrintBuffer::Prepare(const CompiledKernel& kernel,
                                  QdRuntime* runtime) {
  if (!kernel.print_sites().empty() && !buffer_) {
    QD_ASSIGN_OR_RETURN(
        buffer_, ArrayBuffer::Allocate(memory_, kInitialPrintBufferBytes));
  }
  runtime->print_buffer = buffer_.get();
  runtime->print_capacity = buffer_ ? buffer_.size() : 0;
  runtime->print_used = 0;
  runtime->print_dropped = 0;
  return absl::OkStatus();
}

PrintBatch PrintBuffer::Take(QdRuntime* runtime) {
  PrintBatch batch;
  const int64_t used = runtime->print_used;
  const int64_t end = std::min(used, runtime->print_capacity);
  std::vector<char> records(static_cast<size_t>(std::max<int64_t>(end, 0)));
  if (end > 0 &&
      !memory_->CopyToHost(records.data(), buffer_.get(), end).ok()) {
    batch.dropped = runtime->print_dropped + 1;
    records.clear();
  }
  const int64_t readable = static_cast<int64_t>(records.size());
  int64_t offset = 0;
  while (offset + 8 <= readable) {
    const char* record = records.data() + offset;
    int32_t header[2];
    std::memcpy(header, record, sizeof(header));
    const int64_t bytes = 8 + 8 * int64_t{header[1]};
    if (header[1] < 0 || offset + bytes > readable)
      break;
    PrintRecord out;
    out.site = header[0];
    out.values.resize(header[1]);
    std::memcpy(out.values.data(), record + 8, 8 * out.values.size());
    batch.records.push_back(std::move(out));
    offset += bytes;
  }
  batch.dropped = std::max(batch.dropped, runtime->print_dropped);
  const int64_t capacity = buffer_.size();
  if (used > capacity && capacity < kMaxPrintBufferBytes) {
    // Later launches get room for what this one wanted.
    absl::StatusOr<ArrayBuffer> grown = ArrayBuffer::Allocate(
        memory_, std::min(kMaxPrintBufferBytes, std::max(2 * capacity, used)));
    if (grown.ok())
      buffer_ = *std::move(grown);
  }
  runtime->print_buffer = buffer_.get();
  runtime->print_capacity = buffer_ ? buffer_.size() : 0;
  runtime->print_used = 0;
  runtime->print_dropped = 0;
  return batch;
}

absl::optional<RuntimeErrorRecord> TakeRecordedError(QdRuntime* runtime) {
  if (runtime->error_code == QD_ERROR_NONE)
    return absl::nullopt;
  RuntimeErrorRecord record;
  record.code = static_cast<RuntimeErrorRecord::Code>(runtime->error_code);
  record.site = runtime->error_site;
  record.launch = static_cast<uint64_t>(runtime->error_launch);
  std::copy(runtime->error_values, runtime->error_values + 3, record.values);
  runtime->error_code = QD_ERROR_NONE;
  return record;
}

absl::optional<RuntimeErrorRecord> TakeAdStackOverflow(
    QdRuntime* runtime, int task, absl::Span<const int64_t> capacities,
    uint64_t launch) {
  const int stack = runtime->adstack_overflow - 1;
  if (stack < 0)
    return absl::nullopt;
  runtime->adstack_overflow = 0;
  RuntimeErrorRecord record;
  record.code = RuntimeErrorRecord::Code::kAdStackOverflow;
  record.launch = launch;
  record.site = stack;
  record.values[0] = task;
  record.values[1] = stack;
  record.values[2] =
      stack < static_cast<int>(capacities.size()) ? capacities[stack] : 0;
  return record;
}

}  // namespace quadrants::llvm_runtime
