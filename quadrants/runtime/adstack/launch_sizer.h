#ifndef QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_
#define QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/adstack/max_reducer.h"
#include "quadrants/adstack/reducer_spec.h"
#include "quadrants/runtime/array_memory.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/device_runtime/runtime_abi.h"

namespace quadrants::adstack {

// Per-stack capacities and the per-thread layout of one task's adstacks.
struct AdStackLayout {
  std::vector<int64_t> capacities;  // slots per stack
  std::vector<int64_t> offsets;     // bytes from the thread's slice start
  int64_t stride = 0;               // bytes per thread
  // Per stack: the segment length of its checkpointed loop, 0 when the
  // loop runs unsegmented (see ChooseCheckpoints).
  std::vector<int64_t> segments;
  // Per stack: whether it holds its loop's checkpoints.
  std::vector<bool> checkpoints;
  // The threads the device runs at once, which the checkpoint choice
  // fits in the budget (a launch of more runs them in turns).
  int64_t threads_at_once = 0;
  // > 0: the heap holds this many rows, one per element passing the
  // task's adstack gate, instead of one slice per thread (GateHeap).
  int64_t rows = 0;
};

// Per-stack offsets and the per-thread stride for `capacities`: an i64
// count, then the slots, every stack 8-byte aligned.
AdStackLayout LayOut(const std::vector<AdStackSpec>& stacks,
                     std::vector<int64_t> capacities);

// Chooses which checkpointable loops of a launch whose device runs
// `threads` threads at once run in segments, and how long, so that those
// threads' stacks fit `budget`: running fewer threads at once than the
// device can costs parallelism, running more in turns costs nothing. Every
// loop runs unsegmented (its checkpoint stacks get capacity 0) when the
// exact capacities fit or are `forced` (ad_stack_size). Otherwise loops
// are segmented in decreasing order of the bytes their stacks take, each
// with the segment length k that minimizes (k + 2) * segment bytes +
// (ceil(T / k) + 2) * checkpoint bytes for its trip count T, until the
// launch fits. Rewrites `capacities` and returns the segment length per
// stack (0: unsegmented).
// A `segment_length` > 0 segments every loop of more trips than that
// into segments of that length, whatever the budget.
std::vector<int64_t> ChooseCheckpoints(const std::vector<AdStackSpec>& stacks,
                                       std::vector<int64_t>* capacities,
                                       int64_t threads, int64_t budget,
                                       bool forced,
                                       int64_t segment_length = 0);

// ChooseCheckpoints for a layout from LaunchSizer::Size, laid out again;
// a gated layout (rows > 0) keeps its rows, which are all live at once and
// so stand for `threads_at_once`.
void CheckpointWithinBudget(const CompileConfig& config,
                            const CompiledKernel& kernel, int task,
                            int64_t threads_at_once, int64_t budget,
                            AdStackLayout* layout);

// Sizes the adstacks of every task of one compiled kernel at launch:
// forced, static, or evaluated from the launch's values (fields and
// ndarrays read in place or through their memory's copies). MaxOverRange chains that fit the reducers' grammar (see
// RecognizeReducerSpecs) go to a MaxReducer, in rounds of one dependency
// depth each, and their results replace them as constants before the serial
// walk. Three cache layers, each keyed by the values its entry reads
// (argument values, shapes, ndarray data generations, field write
// generations), skip the work while those are unchanged: per-task layouts,
// per-stack capacities, and per-spec reducer results.
class LaunchSizer {
 public:
  // Evaluates every stack's capacity of a task elsewhere (on a device);
  // nullopt leaves the evaluation to the host.
  using Evaluator =
      std::function<absl::StatusOr<absl::optional<std::vector<int64_t>>>()>;

  explicit LaunchSizer(const std::vector<std::vector<AdStackSpec>>& tasks);

  // Evaluates captured MaxOverRanges with `reducer` (not owned; null walks
  // every range serially, under the 1 << 24 guard).
  void set_reducer(MaxReducer* reducer) { reducer_ = reducer; }
  // Where fields and ndarrays live (not owned): the serial walk reads
  // through its copies when the host cannot address it. Null: in place.
  void set_memory(ArrayMemory* memory) { memory_ = memory; }

  // The layout of `task`'s stacks for this launch. `root` is the fields'
  // root buffer and `ctx` the launch context, with the addresses kernels
  // use (see set_memory).
  absl::StatusOr<AdStackLayout> Size(
      const CompileConfig& config, const CompiledKernel& kernel, int task,
      const ir::SNodeTree& snodes, const char* root, const QdLaunchContext& ctx,
      absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations, AdStackStats* stats,
      const Evaluator* evaluate = nullptr);

  // Gates the heap of `task` for this launch, setting layout->rows, when
  // the task has an adstack gate (CompiledKernel::adstack_gates) and
  // ad_stack_sparse_threshold_bytes is 0 or below the `threads` slices of
  // `slice_bytes` (the backend's bytes per thread for layout's
  // capacities): the heap then holds one row per array element passing
  // the gate (at least one), provided those rows fit `budget` and are
  // fewer than `threads` (any number when the threshold is 0). The count
  // is cached while the array and its index arguments are unchanged.
  absl::Status GateHeap(const CompileConfig& config,
                        const CompiledKernel& kernel, int task,
                        const ir::SNodeTree& snodes, const char* root,
                        const QdLaunchContext& ctx,
                        absl::Span<const ResolvedArgument> args,
                        absl::Span<const uint64_t> field_generations,
                        int64_t threads, int64_t slice_bytes, int64_t budget,
                        AdStackLayout* layout, AdStackStats* stats);

  // Whether any of `task`'s stacks has a MaxOverRange a max-reducer takes
  // (recognizing the task's expressions on first use).
  bool Captures(const CompiledKernel& kernel, int task,
                const ir::SNodeTree& snodes);

  // The specs captured for `task`'s stacks, once it has been sized.
  std::vector<const ReducerSpec*> specs(int task) const;

  // What a size expression reads.
  struct Dependencies {
    std::vector<int> args;        // scalar argument values
    std::vector<int> shape_args;  // ndarray shapes
    std::vector<int> data_args;   // ndarray contents
    std::vector<int> fields;      // field values
    bool any() const {
      return !args.empty() || !shape_args.empty() || !data_args.empty() ||
             !fields.empty();
    }
    void Add(const ir::SizeExpr& e);
  };

 private:
  struct Cache {
    bool valid = false;
    std::vector<int64_t> signature;
    std::vector<int64_t> values;
  };
  struct SpecState {
    ReducerSpec spec;
    Dependencies deps;
    Cache cache;
  };
  struct StackState {
    Dependencies deps;
    Cache cache;
    std::vector<SpecState> specs;  // in dependency order
  };
  struct TaskState {
    bool recognized = false;
    Dependencies deps;
    Cache cache;
    std::vector<StackState> stacks;
    Cache gate_count;  // values: {elements passing the gate}
  };

  void Recognize(const CompiledKernel& kernel, int task,
                 const ir::SNodeTree& snodes);

  std::vector<TaskState> tasks_;
  MaxReducer* reducer_ = nullptr;
  ArrayMemory* memory_ = nullptr;
};

// The adstack heap budget of a launch: ad_stack_max_bytes when given, else
// the backend's `default_bytes`.
int64_t AdStackBudget(const CompileConfig& config, int64_t default_bytes);

// How many threads of `task`, at most `wanted` and a multiple of `unit` (a
// GPU block, one CPU thread's SIMD lanes), have adstack slices of
// layout.stride bytes that fit in `budget`: a launch over budget runs fewer
// threads at once. Not even `unit` threads fitting is an error naming the
// kernel, the loop of the largest stack, the bytes and the option.
absl::StatusOr<int64_t> ThreadsWithinBudget(const CompiledKernel& kernel,
                                            int task,
                                            const AdStackLayout& layout,
                                            int64_t wanted, int64_t unit,
                                            int64_t budget);

// Records `layout` of `task` for a launch of `threads` threads in `stats`:
// the capacities and segment lengths of the stacks of loop state, and the
// capacities of the checkpoint stacks apart.
void RecordLayout(const AdStackLayout& layout, int task, int num_tasks,
                  int64_t threads, AdStackStats* stats);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_
