#ifndef QUADRANTS_RUNTIME_LLVM_HOST_LAUNCH_STATE_H_
#define QUADRANTS_RUNTIME_LLVM_HOST_LAUNCH_STATE_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/device_runtime/runtime_abi.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants::llvm_runtime {

// Host-side handling of the runtime module's shared state, the same for
// every LLVM backend (CPU, CUDA): the launch context, print() records and
// the error record. Backends differ only in where QdRuntime lives and how
// the host sees it (directly on the CPU, as a synchronized copy on GPUs).

// Fills `ctx` from the launch arguments; `runtime` is the pointer kernels
// use. Fails when the kernel has more arguments than the context holds.
absl::Status FillLaunchContext(const CompiledKernel& kernel,
                               absl::Span<const ResolvedArgument> args,
                               QdRuntime* runtime, uint64_t random_key,
                               uint64_t launch_id, QdLaunchContext* ctx);

// The buffer print() appends records to, in memory kernels address.
class PrintBuffer {
 public:
  explicit PrintBuffer(std::shared_ptr<ArrayMemory> memory)
      : memory_(std::move(memory)) {}

  // Points `runtime` at an empty buffer (allocated once a kernel prints).
  absl::Status Prepare(const CompiledKernel& kernel, QdRuntime* runtime);
  // The records `runtime` shows (its counters as the host last read them;
  // the records are copied out of the buffer), then grows the buffer for
  // later launches when this one overflowed it, and empties it.
  PrintBatch Take(QdRuntime* runtime);

 private:
  std::shared_ptr<ArrayMemory> memory_;
  ArrayBuffer buffer_;
};

// The error `runtime` records, clearing it; nothing when there is none.
absl::optional<RuntimeErrorRecord> TakeRecordedError(QdRuntime* runtime);

// The overflow a task's adstacks recorded in `runtime`, clearing it.
absl::optional<RuntimeErrorRecord> TakeAdStackOverflow(
    QdRuntime* runtime, int task, absl::Span<const int64_t> capacities,
    uint64_t launch);

}  // namespace quadrants::llvm_runtime

#endif  // QUADRANTS_RUNTIME_LLVM_HOST_LAUNCH_STATE_H_
