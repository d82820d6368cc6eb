#ifndef QUADRANTS_RUNTIME_BACKEND_H_
#define QUADRANTS_RUNTIME_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "quadrants/artifact/compiled_kernel_data.h"
#include "quadrants/common/source_location.h"
#include "quadrants/ir/adstack_gate.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/print_format.h"
#include "quadrants/ir/size_expr.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/array_memory.h"

namespace quadrants {

// What the offline cache did in this runtime's compiles.
struct OfflineCacheStats {
  std::string directory;  // empty when the cache is off
  int64_t hits = 0;       // kernels loaded from disk
  int64_t misses = 0;     // kernels compiled (and stored)
  int64_t rejected = 0;   // corrupt entries deleted and recompiled
  int64_t store_failures = 0;
  std::string last_store_error;  // why the latest failed store failed
};

// What the adstack machinery did at the last launch that used it.
struct AdStackStats {
  // Per task, per stack of loop state (checkpoint stacks apart).
  std::vector<std::vector<int64_t>> capacities;
  // Per task, per stack: the segment length of its checkpointed loop, 0
  // when the loop ran unsegmented.
  std::vector<std::vector<int64_t>> segments;
  // Per task: the capacities of the checkpoint stacks of its checkpointable
  // loops (0 or 1 while unsegmented), apart from `capacities`.
  std::vector<std::vector<int64_t>> checkpoint_capacities;
  std::vector<int64_t> per_thread_stride;        // per task, bytes
  int64_t bytes_needed = 0;                      // largest task's need
  // Stacks reversed by checkpointing (segment stacks of segmented loops)
  // at the last launch.
  int64_t checkpointed = 0;
  // Threads the device runs at once, as the last launch's checkpoint
  // choice counted them.
  int64_t threads_at_once = 0;
  int64_t heap_bytes = 0;                        // allocated heap
  int64_t budget_bytes = 0;  // the heap budget of the last launch
  int heap_grows = 0;                            // allocations so far
  int64_t tree_evaluations = 0;                  // SizeExpr evaluations so far
  int64_t cache_hits = 0;  // launches sized from the cache
  // Per-stack capacities reused although the task's layout was not.
  int64_t tree_cache_hits = 0;
  // Captured MaxOverRanges evaluated by a max-reducer, in how many rounds,
  // and how many were reused from its result cache instead.
  int64_t reducer_dispatches = 0;
  int64_t reducer_rounds = 0;
  int64_t reducer_cache_hits = 0;
  // Of reducer_dispatches, those a device kernel or shader reduced rather
  // than host threads.
  int64_t device_reducer_dispatches = 0;
  // Wall time spent in max-reducers, results read back included.
  double reducer_seconds = 0;
  int64_t sizer_dispatches = 0;  // on-device sizer runs so far (Vulkan)
  // Per task: the heap rows of its last launch when the heap was gated
  // (one per array element passing the task's adstack gate), 0 when it
  // held one slice per thread.
  std::vector<int64_t> gated_rows;
  int64_t gate_counts = 0;  // gate-passing counts taken (not from cache)
};

// An error a kernel recorded on the device, to be raised at the next sync.
// For an adstack overflow the values are: task, stack, capacity.
struct RuntimeErrorRecord {
  enum class Code {
    kOutOfBound = 1,
    kAssertion = 2,
    kAdStackOverflow = 3,
    kPoolExhausted = 4,
  };
  Code code = Code::kOutOfBound;
  uint64_t launch = 0;  // BackendLaunchStats::launch_id of the launch
  int site = 0;
  int64_t values[3] = {0, 0, 0};
};

// The print() records of one launch, in the order they were appended.
struct PrintRecord {
  int site = 0;
  std::vector<int64_t> values;  // one 64-bit slot per value
};
struct PrintBatch {
  std::vector<PrintRecord> records;
  int64_t dropped = 0;  // records that did not fit in the buffer
};

// A kernel compiled by a backend, ready to launch.
// A compiled kernel as its backend loaded it: the code generator's artifact
// (held, not copied: tasks, adstacks, error and print sites) and what a
// launch needs to know of the lowered kernel it came from. Backends derive
// from it to add what they load (functions, pipelines, sizers).
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  const std::string& name() const { return artifact_.facts.kernel_name; }
  const std::vector<ir::KernelParam>& params() const {
    return artifact_.facts.params;
  }
  const CompiledKernelData& artifact() const { return artifact_; }
  const std::vector<ErrorSite>& error_sites() const {
    return artifact_.error_sites;
  }
  // What each print record's site id stands for.
  const std::vector<ir::PrintSite>& print_sites() const {
    return artifact_.print_sites;
  }
  int num_tasks() const { return static_cast<int>(artifact_.tasks.size()); }
  // The artifact's adstacks by task (the launch sizer's input).
  const std::vector<std::vector<AdStackSpec>>& task_adstacks() const {
    return task_adstacks_;
  }
  // What the kernel may write: field places and ndarray parameter indices
  // (generation counters are bumped for these only).
  const std::vector<int>& written_snodes() const {
    return artifact_.facts.written_snodes;
  }
  const std::vector<int>& written_args() const {
    return artifact_.facts.written_args;
  }
  // Whether the kernel calls qd.random(): only then does its launch
  // context carry the launch's random key.
  bool draws_random() const { return artifact_.facts.draws_random; }
  // Whether it addresses field memory (see LaunchFacts::uses_fields).
  bool uses_fields() const { return artifact_.facts.uses_fields; }
  // Per task: the gate of its adstack heap (see ir::AdStackRowStmt), if
  // its stacks are used only under one.
  const std::vector<absl::optional<ir::AdStackGate>>& adstack_gates() const {
    return artifact_.facts.adstack_gates;
  }

  // A gradient kernel compiled without checkpointing support (see
  // Backend::checkpoints_lazily) names how to build the same kernel with
  // it; the backend asks for it when a launch would need checkpoints, once.
  using VariantBuilder =
      std::function<absl::StatusOr<std::shared_ptr<CompiledKernel>>()>;
  void set_checkpointed_variant(VariantBuilder build) {
    build_checkpointed_ = std::move(build);
  }
  bool has_checkpointed_variant() const { return build_checkpointed_ != nullptr; }
  absl::StatusOr<const CompiledKernel*> CheckpointedVariant() const;

  // The offline cache's key for this kernel (empty when caching is off):
  // Backend::LoadCached loads it again, in this process or a later one.
  const std::string& cache_key() const { return cache_key_; }
  void set_cache_key(std::string key) { cache_key_ = std::move(key); }

 protected:
  // Everything the launch needs is in the artifact (its LaunchFacts).
  explicit CompiledKernel(CompiledKernelData artifact);

 private:
  CompiledKernelData artifact_;
  std::vector<std::vector<AdStackSpec>> task_adstacks_;
  VariantBuilder build_checkpointed_;
  mutable std::shared_ptr<CompiledKernel> checkpointed_;
  std::string cache_key_;
};

// A launch argument after validation: scalars as their 64-bit slot, arrays
// as a data pointer and shape.
struct ResolvedArgument {
  int64_t slot = 0;
  void* data = nullptr;
  std::vector<int64_t> shape;
  // The array's data generation; 0 when unknown (external memory), which
  // makes every cache that read it miss.
  uint64_t data_generation = 0;
};

// One step of a graph kernel's plan (qd.graph.do_while): a part launched
// with its arguments, or a loop that runs its body, then again while the
// i32 `counter` points at is nonzero.
struct PlanStep {
  std::shared_ptr<const CompiledKernel> part;
  std::vector<ResolvedArgument> args;
  void* counter = nullptr;
  std::vector<PlanStep> body;
};

struct BackendLaunchStats {
  uint64_t launch_id = 0;  // names the launch in error records
  int tasks = 0;
  int max_threads_used = 0;
  bool graph_replayed = false;  // the tasks ran as one replayed graph
  int graph_nodes = 0;          // ... of this many nodes
  // The launch was recorded into a batch of launches submitted together
  // (Vulkan's queue), not run alone.
  bool batched = false;
  // The kernel that ran, when not the one launched (its checkpointed
  // variant); its error and print sites describe the launch.
  const CompiledKernel* ran = nullptr;
};

struct LaunchOptions {
  // Replay the kernel's tasks as one graph captured at the first launch,
  // where the backend has graphs; elsewhere a plain launch.
  bool graph = false;
};

// Streams and events of a backend that has them (CUDA). Handles are the
// driver's; stream 0 is the default stream, which every launch without a
// stream uses.
class StreamOps {
 public:
  virtual ~StreamOps() = default;
  virtual absl::StatusOr<uint64_t> CreateStream() = 0;
  virtual absl::Status DestroyStream(uint64_t stream) = 0;
  virtual absl::Status SynchronizeStream(uint64_t stream) = 0;
  virtual absl::StatusOr<uint64_t> CreateEvent() = 0;
  virtual absl::Status DestroyEvent(uint64_t event) = 0;
  virtual absl::Status RecordEvent(uint64_t event, uint64_t stream) = 0;
  virtual absl::Status WaitEvent(uint64_t event, uint64_t stream) = 0;
  virtual absl::Status SynchronizeEvent(uint64_t event) = 0;
};

// One code generator + runtime pair (CPU, CUDA, ...).
class Backend {
 public:
  virtual ~Backend() = default;

  // Compiles a kernel already lowered to offloaded tasks.
  virtual absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) = 0;
  // The kernel the offline cache holds under `key` (an earlier compile's
  // CompiledKernel::cache_key, of this process or another), loaded without
  // its IR; nullptr when caching is off or the entry is gone or rejected.
  virtual absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key, const ir::SNodeTree& snodes) {
    return std::shared_ptr<CompiledKernel>();
  }
  // The SNode root buffer kernels address fields in.
  virtual void SetRoot(char* root) = 0;
  // `field_generations` (per SNode) lets caches of launch-time values
  // tell whether fields changed since they were filled.
  virtual absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) = 0;
  // Runs a whole plan on the device, with no host round trip per loop
  // iteration (CUDA: one graph with conditional while nodes), appending
  // each part's launch id (error records name it) in plan order. Returns
  // false, having run nothing, where the backend or this plan cannot (a
  // part with adstacks, prints or qd.random()): the caller then runs the
  // parts and checks the counters itself.
  // `stream` (0: the default) is one of streams()'s.
  virtual absl::StatusOr<bool> LaunchPlan(
      absl::Span<const PlanStep> plan,
      absl::Span<const uint64_t> field_generations, uint64_t stream,
      std::vector<uint64_t>* launch_ids, int* graph_nodes) {
    return false;
  }
  // The backend's streams, or null where it has none (launches then run
  // in order, as on one stream).
  virtual StreamOps* streams() { return nullptr; }
  // Waits for outstanding work.
  virtual absl::Status Synchronize() = 0;
  // Whether Launch returns with the kernel queued rather than finished;
  // such backends report errors only at sync points.
  virtual bool queues_launches() const { return false; }
  // The first error recorded since the last call, clearing it. A queuing
  // backend waits for its queued work first.
  virtual absl::optional<RuntimeErrorRecord> TakeError() = 0;
  // The print() records of the last launch, clearing them.
  virtual PrintBatch TakePrints() { return {}; }
  // Where fields and ndarrays live for this backend's kernels.
  virtual std::shared_ptr<ArrayMemory> memory() = 0;
  // Whether arrays in plain host memory (numpy arguments) must be copied
  // into memory from memory() for the kernel to see them.
  virtual bool stages_host_arrays() const { return false; }
  virtual int num_threads() const = 0;
  // The device kernels run on, for people to read (name, driver); empty
  // where the backend names none.
  virtual std::string device_description() const { return ""; }
  // What qd.simt may use: threads per subgroup (0 where kernels have no
  // subgroups, as on the CPU) and bytes of block-shared memory per block.
  struct SimtLimits {
    int subgroup_size = 0;
    int64_t max_shared_bytes = 0;
  };
  virtual SimtLimits simt_limits() const { return {}; }
  // Options changed after qd.init (qd.cfg.<name> = ...): what later
  // compiles and launches read. What the backend sized at creation (its
  // memory, threads and device) keeps the qd.init values.
  virtual absl::Status UpdateConfig(const CompileConfig& config) = 0;
  // The device's capabilities by upstream's DeviceCapability names (e.g.
  // "spirv_has_float64" -> 1); those left out are 0.
  virtual std::vector<std::pair<std::string, int64_t>> device_capabilities()
      const {
    return {};
  }
  // Whether kernels evaluate f32 sin and cos of one value together for
  // about the price of one; gradient kernels then stack those derivatives
  // in loops rather than evaluate them again in the reverse sweep.
  virtual bool fuses_sin_cos() const { return false; }
  // Whether gradient kernels are compiled without checkpointing support
  // first, the backend's Launch then running the kernel's checkpointed
  // variant (CompiledKernel::CheckpointedVariant) when a launch's adstacks
  // exceed the budget: most launches fit, and the support doubles the
  // code to compile.
  virtual bool checkpoints_lazily() const { return false; }
  virtual const AdStackStats& adstack_stats() const = 0;
  virtual const OfflineCacheStats& offline_cache_stats() const {
    static const OfflineCacheStats kNone;
    return kNone;
  }

 protected:
  // For checkpoints_lazily backends: launches `kernel`'s checkpointed
  // variant (built at its first use) in place of `kernel`, and says so in
  // the stats (BackendLaunchStats::ran).
  absl::StatusOr<BackendLaunchStats> LaunchCheckpointedVariant(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options);
};

// A backend standing in for another (a BackendWrapper's result): every call
// goes to the wrapped backend, so a wrapper overrides only what it changes
// and can never leave a new Backend method unforwarded.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner)
      : inner_(std::move(inner)) {}

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override {
    return inner_->Compile(offloaded, snodes);
  }
  absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key, const ir::SNodeTree& snodes) override {
    return inner_->LoadCached(key, snodes);
  }
  void SetRoot(char* root) override { inner_->SetRoot(root); }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override {
    return inner_->Launch(kernel, args, field_generations, options);
  }
  absl::StatusOr<bool> LaunchPlan(absl::Span<const PlanStep> plan,
                                  absl::Span<const uint64_t> field_generations,
                                  uint64_t stream,
                                  std::vector<uint64_t>* launch_ids,
                                  int* graph_nodes) override {
    return inner_->LaunchPlan(plan, field_generations, stream, launch_ids,
                              graph_nodes);
  }
  StreamOps* streams() override { return inner_->streams(); }
  absl::Status Synchronize() override { return inner_->Synchronize(); }
  bool queues_launches() const override { return inner_->queues_launches(); }
  absl::optional<RuntimeErrorRecord> TakeError() override {
    return inner_->TakeError();
  }
  PrintBatch TakePrints() override { return inner_->TakePrints(); }
  std::shared_ptr<ArrayMemory> memory() override { return inner_->memory(); }
  bool stages_host_arrays() const override {
    return inner_->stages_host_arrays();
  }
  int num_threads() const override { return inner_->num_threads(); }
  std::string device_description() const override {
    return inner_->device_description();
  }
  SimtLimits simt_limits() const override { return inner_->simt_limits(); }
  std::vector<std::pair<std::string, int64_t>> device_capabilities()
      const override {
    return inner_->device_capabilities();
  }
  absl::Status UpdateConfig(const CompileConfig& config) override {
    return inner_->UpdateConfig(config);
  }
  bool fuses_sin_cos() const override { return inner_->fuses_sin_cos(); }
  bool checkpoints_lazily() const override {
    return inner_->checkpoints_lazily();
  }
  const AdStackStats& adstack_stats() const override {
    return inner_->adstack_stats();
  }
  const OfflineCacheStats& offline_cache_stats() const override {
    return inner_->offline_cache_stats();
  }

 protected:
  Backend& inner() { return *inner_; }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_BACKEND_H_
