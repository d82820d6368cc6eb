#ifndef QUADRANTS_RUNTIME_GPU_GPU_BACKEND_H_
#define QUADRANTS_RUNTIME_GPU_GPU_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "quadrants/codegen/llvm/lowered_kernel.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "quadrants/runtime/gpu/adstack_heap.h"
#include "quadrants/runtime/gpu/device.h"
#include "quadrants/runtime/gpu/device_buffer.h"
#include "quadrants/runtime/gpu/gpu_max_reducer.h"
#include "quadrants/runtime/gpu/upload_queue.h"
#include "quadrants/runtime/llvm/host/launch_state.h"
#include "quadrants/device_runtime/runtime_abi.h"

namespace quadrants::gpu {

// One task of a compiled kernel as the launcher runs it, with its entry
// points in the loaded module (see codegen's PTX and HSACO compilers):
//   run(ctx, begin, end)              grid-stride over [begin, end)
//   bounds(ctx, out)                  range_for: the range, one thread
//   device_range_run(ctx)             range_for: finds its own range
struct GpuTask {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  void* run = nullptr;
  void* bounds = nullptr;
  void* device_range_run = nullptr;
  int64_t cells = 0;  // struct_for: iterations
  // Its qd.graph.parallel() section (see CompiledTask::graph_section).
  int graph_region = -1;
  int graph_section = -1;
  // Threads per block asked by qd.loop_config(block_dim=) (0: the
  // launcher's choice) and the task's dynamic block-shared bytes.
  unsigned block_dim = 0;
  unsigned shared_bytes = 0;
  SourceLocation loc;
};

class GpuCompiledKernel : public CompiledKernel {
 public:
  explicit GpuCompiledKernel(CompiledKernelData artifact)
      : CompiledKernel(std::move(artifact)),
        sizer(std::make_unique<adstack::LaunchSizer>(task_adstacks())) {}

  // Fills `tasks` from the compiled tasks, finding each entry (see
  // codegen/llvm/gpu_entries.h) in the loaded module through `function`.
  absl::Status AddTasks(
      const std::vector<CompiledTask>& compiled,
      absl::FunctionRef<absl::StatusOr<void*>(const std::string&)> function);

  std::vector<GpuTask> tasks;
  // Sizes the tasks' adstacks at launch (its caches change per launch).
  mutable std::unique_ptr<adstack::LaunchSizer> sizer;
};

// The launch path CUDA and AMDGPU share, over a gpu::Device. The runtime
// record, the launch context, the range read-back and the adstack heap and
// metadata live in device memory. A launch queues its tasks on the
// device's stream, its context uploaded through a pinned ring, and returns
// without waiting. It waits only for a task whose adstacks are sized on
// the host (what runs before it must have finished, and the sizing reads
// device data) and, at its end, for a kernel that prints. Errors kernels
// record are read at the next sync (TakeError).
class GpuBackend : public Backend {
 public:
  absl::Status UpdateConfig(const CompileConfig& config) override {
    config_ = config;
    return absl::OkStatus();
  }
  void SetRoot(char* root) override { runtime_.root = root; }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override;
  absl::Status Synchronize() override;
  bool queues_launches() const override { return true; }
  absl::optional<RuntimeErrorRecord> TakeError() override;
  PrintBatch TakePrints() override;
  std::shared_ptr<ArrayMemory> memory() override { return memory_; }
  bool stages_host_arrays() const override { return true; }
  // Threads the device keeps resident: the most an adstack task runs.
  int num_threads() const override { return resident_threads_; }
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  // Checkpointing support keeps the schedule's state live through the
  // reverse sweep: on the GPU that costs registers, and so occupancy, in
  // every launch, most of which fit without it.
  bool checkpoints_lazily() const override { return true; }
  // libdevice's and OCML's sin and cos inline into the kernel, where the
  // range reduction of one value is shared: the pair costs about one and a
  // half. A stacked derivative takes a transcendental out of the reverse
  // sweep, and in a loop like v = sin(v) * a + x it replaces v's stack.
  bool fuses_sin_cos() const override { return true; }

 protected:
  // `memory` holds fields and ndarrays.
  GpuBackend(const CompileConfig& config, std::shared_ptr<Device> device,
             std::shared_ptr<ArrayMemory> memory);

  // Allocates the device-side runtime record, launch context and range
  // read-back, and sets the adstack heap budget from the config and the
  // device's `total_memory` bytes.
  absl::Status InitDevice(int resident_threads, int64_t total_memory);

  // For backends with graphs: replays the kernel's queued launches (see
  // QueuedLaunch) as one graph; the context already holds the arguments.
  virtual bool HasGraphs() const { return false; }
  // `*nodes`: the graph's node count.
  virtual absl::Status ReplayGraph(const GpuCompiledKernel& kernel, int* nodes);

  // The launch of a task without adstacks that needs nothing from the
  // host at launch time, so it can be queued or put in a graph; it reads
  // its launch context at `context` (by default the shared one, which
  // each launch's upload fills).
  KernelLaunch QueuedLaunch(const GpuTask& task) const {
    return QueuedLaunch(task, device_context_.get());
  }
  KernelLaunch QueuedLaunch(const GpuTask& task, uint64_t context) const;
  // The launch context of a launch of `kernel` the caller queues itself
  // (in a graph), numbered as a launch: `*launch_id`.
  absl::StatusOr<QdLaunchContext> NewContext(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      uint64_t* launch_id);
  // Queues a copy to device memory behind the launches already queued.
  absl::Status QueueCopy(uint64_t address, const void* data, int64_t bytes);
  // Copies the host-written part of the runtime record to the device when
  // it differs from what the device holds (in queue order).
  absl::Status UploadRuntime();

  // The tree fields are laid out by (the size expressions read it).
  void set_snodes(const ir::SNodeTree* snodes) { snodes_ = snodes; }
  const CompileConfig& config() const { return config_; }
  const std::shared_ptr<Device>& device() const { return device_; }
  // Lets captured adstack MaxOverRanges reduce in device kernels that
  // `loader` compiles; without one they reduce on host threads.
  void set_max_reduce_loader(MaxReduceLoader loader) {
    max_reduce_loader_ = std::move(loader);
  }

 private:
  // Grid and block for `iterations` iterations of a task.
  void Shape(const GpuTask& task, int64_t iterations, bool has_stacks,
             unsigned* grid,
             unsigned* block) const;
  // The max-reducer sizing uses, made at first use.
  adstack::MaxReducer* reducer();
  // Reads a range task's [begin, end) by running its bounds entry.
  absl::Status ResolveRange(const GpuTask& task, int64_t range[2]);
  // Waits for the queued tasks, if any; for a kernel that prints, reads
  // the record the prints are counted in.
  absl::Status FinishQueued(const CompiledKernel& kernel, bool* queued);
  // Whether a launch of `kernel` needs its checkpointed variant: the
  // adstacks of some task, sized for this launch, exceed the heap budget
  // for the threads it would run at once (as adstack::ChooseCheckpoints
  // decides; a range task counts the resident threads, its range being
  // known only once the tasks before it have run).
  // Each stack task's layout goes to `sized`, for its launch to reuse.
  absl::StatusOr<bool> NeedsCheckpoints(
      const GpuCompiledKernel& kernel, const QdLaunchContext& ctx,
      absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      std::vector<absl::optional<adstack::AdStackLayout>>* sized);
  // Resolves the range, sizes (unless `sized` is given), publishes and
  // runs a task with adstacks, synchronously.
  absl::Status RunTask(const GpuTask& task, const GpuCompiledKernel& kernel,
                       int index, const QdLaunchContext& ctx,
                       absl::Span<const ResolvedArgument> args,
                       absl::Span<const uint64_t> field_generations,
                       const adstack::AdStackLayout* sized);
  // Reads the whole runtime record back; writes the host's copy of the
  // kernel-written part (once the host has read and cleared it).
  absl::Status DownloadRuntime();
  absl::Status UploadRecord();
  // Queues the upload of the first bytes of `ctx` a kernel of `num_params`
  // parameters reads, unless the device buffer already holds them.
  absl::Status UploadContext(const QdLaunchContext& ctx, size_t num_params);

  CompileConfig config_;
  std::shared_ptr<Device> device_;
  std::shared_ptr<ArrayMemory> memory_;
  const ir::SNodeTree* snodes_ = nullptr;
  int resident_threads_ = 1;

  QdRuntime runtime_{};  // the host's copy; the device's is device_runtime_
  // What the host-written part of device_runtime_ holds.
  std::optional<QdRuntime> device_runtime_copy_;
  DeviceBuffer device_runtime_;
  // Read by the queued launch; each launch's upload is queued behind the
  // launches before it, so one buffer serves them all.
  DeviceBuffer device_context_;
  // The first uploaded_context_bytes_ of uploaded_context_ are what
  // device_context_ holds once the queued uploads have run.
  QdLaunchContext uploaded_context_{};
  int64_t uploaded_context_bytes_ = 0;
  DeviceBuffer device_bounds_;
  std::unique_ptr<UploadQueue> uploads_;
  llvm_runtime::PrintBuffer prints_{memory_};
  std::optional<RuntimeErrorRecord> pending_;
  uint64_t launches_ = 0;
  // A kernel with error checks was queued since the record was last read.
  bool record_may_hold_error_ = false;

  std::unique_ptr<AdStackHeap> adstack_heap_;
  adstack::AdStackLayout adstack_layout_;  // of the task being launched
  AdStackStats adstack_stats_;
  // Evaluates captured adstack MaxOverRanges: in device kernels when the
  // backend gave a loader, else on host threads reading the same
  // host-addressable memory as the serial walk. Made at first use.
  MaxReduceLoader max_reduce_loader_;
  std::unique_ptr<adstack::MaxReducer> reducer_;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_GPU_BACKEND_H_
