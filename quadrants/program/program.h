#ifndef QUADRANTS_PROGRAM_PROGRAM_H_
#define QUADRANTS_PROGRAM_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/common/errors.h"
#include "quadrants/program/field_access.h"
#include "quadrants/program/kernel_argument.h"
#include "quadrants/program/ndarray.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/transforms/pipeline.h"

namespace quadrants {

// What the last launch did (for tests and introspection).
struct LaunchStats {
  int tasks = 0;
  int max_threads_used = 0;  // over the launch's parallel tasks
  bool graph_replayed = false;
  bool batched = false;  // see BackendLaunchStats::batched
  // A plan launched whole (LaunchPlan): its loops ran on the device.
  int device_loops = 0;
  int graph_nodes = 0;  // of the replayed graph
};

// Ties the pieces together: configuration, the SNode tree and its root
// buffer, compiled kernels (cached by IR hash and config), launches, and
// the deferred run-time errors that sync() reports. Not thread-safe: calls
// must not overlap (the Python module's are serialized by the GIL).
class Program {
 public:
  // OK when kernels can run on `arch` here, else why not (kUnavailable).
  static absl::Status ProbeArch(Arch arch);
  static absl::StatusOr<std::unique_ptr<Program>> Create(
      const CompileConfig& config);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const CompileConfig& config() const { return config_; }
  // qd.cfg.<name> = value after qd.init: later compiles read `config`.
  absl::Status UpdateConfig(const CompileConfig& config) {
    config_ = config;
    return backend_->UpdateConfig(config);
  }
  int num_cpu_threads() const;

  // Fields: build the tree, then use it. The tree is laid out and its
  // buffer allocated (zeroed) at the first kernel compile or field access;
  // fields added later (under the root) extend the buffer at the next use.
  ir::SNodeTree& snodes() { return snodes_; }
  // Bytes each sparse pool may take (qd.init(sparse_pool_mb=...)).
  int64_t PoolBudget() const;
  absl::Status MaterializeFields();
  absl::StatusOr<ir::Constant> ReadField(int place,
                                         absl::Span<const int64_t> index);
  absl::Status WriteField(int place, absl::Span<const int64_t> index,
                          const ir::Constant& value);
  // Bumped whenever a field may have been written (host write or launch).
  uint64_t field_write_generation(int place) const;
  // Bulk host access to every element of `places` (the components of one
  // field, of one type and shape), as a dense row-major host array of the
  // element type with the component as the last axis (numpy copies, fill).
  absl::Status ReadPlaces(absl::Span<const int> places, void* out);
  absl::Status WritePlaces(absl::Span<const int> places, const void* in);
  absl::Status FillPlaces(absl::Span<const int> places,
                          const ir::Constant& value);
  void NoteFieldWrite(int place);
  // Where `place`'s elements are, for a view of them that shares their
  // memory (numpy, torch): the buffer (kept alive by the view), the first
  // element and each axis' stride in bytes. Only where the field memory
  // never moves (it grows in place); a value error otherwise. Waits for
  // queued launches.
  struct FieldView {
    std::shared_ptr<ArrayBuffer> memory;
    char* data = nullptr;
    std::vector<int64_t> shape;
    std::vector<int64_t> byte_strides;
    // Places in the same cells (its parent's other children).
    std::vector<int> neighbours;
  };
  absl::StatusOr<FieldView> ViewField(int place);

  absl::StatusOr<std::shared_ptr<Ndarray>> CreateNdarray(
      ir::PrimitiveType dtype, std::vector<int64_t> shape);
  // Where the backend's fields and ndarrays live (for ndarrays over
  // memory another library lends).
  std::shared_ptr<ArrayMemory> array_memory() const {
    return backend_->memory();
  }

  // Compiles `kernel` (which is not modified), or returns the cached result
  // for a structurally identical kernel under the same config.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& kernel);
  // Compiles the reverse-mode gradient of `kernel`: it takes the forward
  // parameters followed by one adjoint ndarray per float ndarray parameter.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> CompileGrad(
      const ir::Kernel& kernel);
  // Compiles the forward-mode kernel of `kernel`: it computes the primal
  // values and, into the dual fields, their tangents.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> CompileForward(
      const ir::Kernel& kernel);
  // Compiles forward mode over the gradient of `kernel` (CompileGrad's
  // parameters): the adjoints' tangents go into the duals of the adjoint
  // fields.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> CompileHvp(
      const ir::Kernel& kernel);
  // A kernel compiled earlier (in this process or another) loaded from the
  // offline cache by its CompiledKernel::cache_key, without its IR: no
  // front end, pass or code generator runs. nullptr when absent.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key);
  int compile_cache_size() const { return static_cast<int>(cache_.size()); }

  // Runs the kernel. Argument errors are reported now; errors inside the
  // kernel (failed checks, assertions) are reported by the next Sync().
  absl::Status Launch(const CompiledKernel& kernel,
                      absl::Span<const KernelArgument> args,
                      const LaunchOptions& options = {});
  // Runs a graph kernel's whole plan on the device where the backend can
  // (Backend::LaunchPlan); false, having run nothing, where it cannot.
  // `stream`: one of streams()'s (0: the default stream).
  absl::StatusOr<bool> LaunchPlan(absl::Span<const KernelPlanStep> plan,
                                  uint64_t stream = 0);
  // The backend's streams and events; null where it has none.
  StreamOps* streams() { return backend_->streams(); }
  const LaunchStats& last_launch() const { return last_launch_; }
  // Compiled kernels whose launches replay a captured graph (a plan run
  // on the device counts as its first part's).
  int graph_cache_size() const {
    return static_cast<int>(graph_kernels_.size());
  }
  // Graphs built so far: each is built once, at its kernel's (or plan's)
  // first graph launch, and replayed after.
  int graph_builds() const { return graph_builds_; }
  const AdStackStats& adstack_stats() const {
    return backend_->adstack_stats();
  }
  std::string device_description() const {
    return backend_->device_description();
  }
  Backend::SimtLimits simt_limits() const { return backend_->simt_limits(); }
  std::vector<std::pair<std::string, int64_t>> device_capabilities() const {
    return backend_->device_capabilities();
  }
  const OfflineCacheStats& offline_cache_stats() const {
    return backend_->offline_cache_stats();
  }
  // Warnings of the last compilation (e.g. an adstack sized by
  // default_ad_stack_size because a trip count is unknown), each once.
  const std::vector<std::string>& compile_warnings() const {
    return compile_warnings_;
  }

  // Waits for launched work and reports the first run-time error since the
  // last sync (naming the kernel and the source line), clearing it.
  absl::Status Sync();

  // The text kernels printed since the last call, in launch order, clearing
  // it. Shown at sync, before the sync's error (if any) is raised.
  std::string TakeOutput();

  // Drops compiled kernels, fields, pending errors and pending output.
  void Reset();

  // Public for std::make_unique only; use Create().
  Program(const CompileConfig& config, std::unique_ptr<Backend> backend);

 private:
  absl::StatusOr<std::shared_ptr<CompiledKernel>> CompileVariant(
      const ir::Kernel& kernel, transforms::AutodiffMode mode);
  // `checkpointing`: loops the launch may checkpoint get the support (see
  // transforms::ReverseModeOptions); without it a gradient kernel builds
  // its checkpointed variant when a launch first needs it.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> CompileVariant(
      const ir::Kernel& kernel, transforms::AutodiffMode mode,
      bool checkpointing);
  absl::Status CheckArguments(const CompiledKernel& kernel,
                              absl::Span<const KernelArgument> args) const;
  // Argument `i` as the backend takes it (external memory unstaged).
  absl::Status Resolve(const CompiledKernel& kernel, size_t i,
                       const KernelArgument& a, ResolvedArgument* out) const;
  // Bumps the generations of what a launch of `kernel` may have written.
  void NoteWrites(const CompiledKernel& kernel,
                  absl::Span<const KernelArgument> args);
  // The backend's form of a plan; false when a step cannot be one (host
  // arrays to stage, a counter that is not i32).
  absl::StatusOr<bool> ResolvePlan(absl::Span<const KernelPlanStep> plan,
                                   std::vector<PlanStep>* out) const;
  // Turns the error the backend recorded (if any) into pending_error_,
  // naming the kernel of the launch that recorded it.
  void CollectRuntimeError();
  std::string DescribeRuntimeError(const CompiledKernel& kernel,
                                   const RuntimeErrorRecord& record,
                                   ErrorKind* kind) const;
  // A copy of a host array argument in memory the backend addresses.
  absl::StatusOr<ArrayBuffer> StageHostArray(const KernelArgument& array);
  // Copies staged arrays the kernel may have written back to the host.
  absl::Status UnstageHostArrays(
      const CompiledKernel& kernel, absl::Span<const KernelArgument> args,
      absl::Span<const std::pair<size_t, ArrayBuffer>> staged);
  // Keeps staged copies alive until the launches reading them are done.
  void RetireStaging(std::vector<std::pair<size_t, ArrayBuffer>> staged);
  void CollectPrints(const CompiledKernel& kernel);
  void WarnAboutDefaultSizedStacks(const CompiledKernel& kernel);
  absl::StatusOr<char*> FieldAddress(int place,
                                     absl::Span<const int64_t> index);
  // Access to `places`, which must share one type and shape.
  absl::StatusOr<PlaceAccess> Places(absl::Span<const int> places);

  CompileConfig config_;
  std::unique_ptr<Backend> backend_;
  ir::SNodeTree snodes_;
  // Address space reserved for fields to grow into without moving.
  static constexpr int64_t kFieldReserveBytes = int64_t{1} << 40;
  absl::Status GrowRoot(int64_t old_bytes, int64_t bytes);
  // Shared with field views, which keep it alive past a reset.
  std::shared_ptr<ArrayBuffer> root_;
  // Nodes below this id have memory in root_.
  int materialized_nodes_ = 1;
  std::vector<uint64_t> field_generation_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<CompiledKernel>> cache_;
  absl::Status pending_error_;
  std::string pending_output_;
  LaunchStats last_launch_;
  absl::flat_hash_set<const CompiledKernel*> graph_kernels_;
  int graph_builds_ = 0;
  // Launches not yet synchronized whose kernel can record an error, by
  // the backend's launch id (the kernels stay alive in cache_).
  std::vector<std::pair<uint64_t, const CompiledKernel*>> unsynced_;
  // Staged copies of host arrays that queued launches may still read,
  // freed at the next sync, and their bytes.
  std::vector<ArrayBuffer> retired_staging_;
  int64_t retired_staging_bytes_ = 0;
  std::vector<std::string> compile_warnings_;
};

}  // namespace quadrants

#endif  // QUADRANTS_PROGRAM_PROGRAM_H_
