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

// Per-stack capacities and the per-thread layout of one task's adstacks,
// on every backend.
struct AdStackLayout {
  std::vector<int64_t> capacities;  // slots per stack
  // Bytes from the thread's slice start in the heap holding the stack.
  std::vector<int64_t> offsets;
  int64_t stride = 0;  // bytes per thread, every heap together
  // The part of `stride` in a heap of int stacks of their own (SPIR-V,
  // whose float and int stacks are typed arrays); 0 with one heap.
  int64_t int_stride = 0;
  // The threads the heaps are sliced for, where the layout carries them
  // (SPIR-V invocations); LLVM backends keep the count themselves.
  int64_t threads = 0;
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

  int64_t float_stride() const { return stride - int_stride; }
  int64_t slices() const { return rows > 0 ? rows : threads; }
};

// Per-stack offsets and the per-thread stride for `capacities` in one heap
// (LLVM targets): an i64 count, then the slots, every stack 8-byte aligned.
AdStackLayout LayOut(const std::vector<AdStackSpec>& stacks,
                     std::vector<int64_t> capacities);

// The same in a float heap and an int heap (SPIR-V targets, whose counts
// live in registers): the slots only, every stack 8-byte aligned and at
// least one slot (a stack of capacity 0 would clamp to slot -1).
AdStackLayout LayOutByKind(const std::vector<AdStackSpec>& stacks,
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

// Where a backend's adstack heaps live, which decides their default budget.
enum class HeapMemory {
  kHostRam,       // CPU: a quarter of the RAM
  kDeviceMemory,  // CUDA, AMDGPU: device_memory_GB, device_memory_fraction
                  // of the device, or half of it
  kVulkanHeaps,   // Vulkan: 1 GiB per heap (float and int)
};

// The most bytes one Vulkan adstack heap takes: a launch whose slices would
// need more runs fewer invocations (grid-stride covers the rest).
inline constexpr int64_t kVulkanHeapBytes = int64_t{1} << 30;

// The adstack heap budget of one launch, for every backend:
// ad_stack_max_bytes when > 0, else the default of `memory`, whose size is
// `memory_bytes` (RAM or device memory; unused for kVulkanHeaps).
int64_t AdStackBudget(const CompileConfig& config, HeapMemory memory,
                      int64_t memory_bytes);

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
// Clears what `stats` says of the last launch, which has `num_tasks`
// tasks: tasks without stacks report none.
void BeginLaunchStats(int num_tasks, AdStackStats* stats);

void RecordLayout(const AdStackLayout& layout, int task, int num_tasks,
                  int64_t threads, AdStackStats* stats);

}  // namespace quadrants::adstack

#endif  // QUADRANTS_RUNTIME_ADSTACK_LAUNCH_SIZER_H_
