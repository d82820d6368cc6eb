#ifndef QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_
#define QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_abi.h"

namespace quadrants::adstack {

// Per-stack capacities and the per-thread layout of one task's adstacks.
struct AdStackLayout {
  std::vector<int64_t> capacities;  // slots per stack
  std::vector<int64_t> offsets;     // bytes from the thread's slice start
  int64_t stride = 0;               // bytes per thread
};

// Sizes the adstacks of every task of one compiled kernel at launch, for
// the LLVM backends (whose size expressions read fields and ndarrays
// through host-addressable pointers): forced, static, evaluated from the
// launch's values, or reused from a cache that holds while every value the
// expressions read is unchanged (argument values, shapes, ndarray data
// generations, field write generations).
class LaunchSizer {
 public:
  // Evaluates every stack's capacity of a task elsewhere (on a device);
  // nullopt leaves the evaluation to the host.
  using Evaluator =
      std::function<absl::StatusOr<absl::optional<std::vector<int64_t>>>()>;

  explicit LaunchSizer(const std::vector<std::vector<AdStackInfo>>& tasks);

  // The layout of `task`'s stacks for this launch. `root` is the fields'
  // root buffer and `ctx` the launch context as the host sees it (ndarray
  // data pointers readable on the host).
  absl::StatusOr<AdStackLayout> Size(
      const CompileConfig& config, const CompiledKernel& kernel, int task,
      const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
      absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations, AdStackStats* stats,
      const Evaluator* evaluate = nullptr);

 private:
  // What a task's size expressions read.
  struct Dependencies {
    std::vector<int> args;        // scalar argument values
    std::vector<int> shape_args;  // ndarray shapes
    std::vector<int> data_args;   // ndarray contents
    std::vector<int> fields;      // field values
    bool any() const {
      return !args.empty() || !shape_args.empty() || !data_args.empty() ||
             !fields.empty();
    }
  };
  struct Cache {
    bool valid = false;
    std::vector<int64_t> signature;
    std::vector<int64_t> capacities;
  };

  absl::StatusOr<std::vector<int64_t>> Evaluate(
      const CompileConfig& config, const CompiledKernel& kernel, int task,
      const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
      AdStackStats* stats) const;

  std::vector<Dependencies> dependencies_;
  std::vector<Cache> caches_;
};

// Records `layout` of `task` for a launch of `threads` threads in `stats`.
void RecordLayout(const AdStackLayout& layout, int task, int num_tasks,
                  int64_t threads, AdStackStats* stats);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_
