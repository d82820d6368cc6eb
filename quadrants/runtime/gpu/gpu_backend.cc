#include "quadrants/runtime/host/launch_random.h"
#include "quadrants/runtime/gpu/gpu_backend.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/llvm/gpu_entries.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::gpu {
namespace {

// Threads per block: a multiple of the warp and wavefront sizes that keeps
// enough blocks resident per multiprocessor for the register use of typical
// kernels.
constexpr unsigned kBlockSize = 128;

// The pinned ring launch contexts are staged in: hundreds of launches'
// worth before the host waits for the device once.
constexpr int64_t kUploadRingBytes = int64_t{1} << 20;

// `status` with "kernel '<name>'..." in front, as a runtime error.
absl::Status InKernel(const std::string& prefix, const absl::Status& status) {
  if (status.ok())
    return status;
  return MakeError(ErrorKind::kRuntime, absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::Status GpuCompiledKernel::AddTasks(
    const std::vector<CompiledTask>& compiled,
    absl::FunctionRef<absl::StatusOr<void*>(const std::string&)> function) {
  for (const CompiledTask& task : compiled) {
    GpuTask launch;
    launch.kind = task.kind;
    launch.cells = task.struct_for_cells;
    launch.graph_region = task.graph_region;
    launch.graph_section = task.graph_section;
    launch.block_dim = static_cast<unsigned>(task.block_dim);
    launch.shared_bytes = static_cast<unsigned>(task.shared_bytes);
    launch.loc = task.loc;
    QD_ASSIGN_OR_RETURN(launch.run,
                        function(codegen::GpuEntryName(task.function)));
    if (!task.bounds_function.empty()) {
      QD_ASSIGN_OR_RETURN(
          launch.bounds, function(codegen::GpuEntryName(task.bounds_function)));
      QD_ASSIGN_OR_RETURN(
          launch.device_range_run,
          function(codegen::GpuDeviceRangeEntryName(task.function)));
    }
    tasks.push_back(launch);
  }
  return absl::OkStatus();
}

GpuBackend::GpuBackend(const CompileConfig& config,
                       std::shared_ptr<Device> device,
                       std::shared_ptr<ArrayMemory> memory)
    : config_(config), device_(std::move(device)), memory_(std::move(memory)) {}

absl::Status GpuBackend::InitDevice(int resident_threads,
                                    int64_t total_memory) {
  resident_threads_ = std::max(resident_threads, 1);
  adstack_heap_ = std::make_unique<AdStackHeap>(
      device_, adstack::AdStackBudget(config_, adstack::HeapMemory::kDeviceMemory,
                                      total_memory));
  QD_ASSIGN_OR_RETURN(device_runtime_,
                      DeviceBuffer::Allocate(device_, sizeof(QdRuntime)));
  QD_ASSIGN_OR_RETURN(device_context_,
                      DeviceBuffer::Allocate(device_, sizeof(QdLaunchContext)));
  QD_ASSIGN_OR_RETURN(device_bounds_,
                      DeviceBuffer::Allocate(device_, 2 * sizeof(int64_t)));
  uploads_ = std::make_unique<UploadQueue>(device_, kUploadRingBytes);
  // The kernel-written part starts cleared.
  return UploadRecord();
}

absl::Status GpuBackend::ReplayGraph(const GpuCompiledKernel& kernel,
                                     int* nodes) {
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat("kernel '", kernel.name(),
                                "': this backend replays no graphs"));
}

void GpuBackend::Shape(const GpuTask& task, int64_t iterations,
                       bool has_stacks, unsigned* grid,
                       unsigned* block) const {
  const unsigned block_size = task.block_dim > 0 ? task.block_dim : kBlockSize;
  *block = block_size;
  // Grid-stride loops cover the rest. An adstack task runs at most four
  // waves of resident threads (and fewer where the heap budget says so,
  // see AdStackHeap::FitGrid): its heap is bounded by the device, not by
  // the range, while the waves still hide memory latency.
  const int64_t resident_blocks =
      std::max<int64_t>(1, resident_threads_ / block_size);
  const int64_t cap = (has_stacks ? 4 : 16) * resident_blocks;
  const int64_t wanted = (iterations + block_size - 1) / block_size;
  *grid = static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, cap));
}

absl::Status GpuBackend::UploadRuntime() {
  if (device_runtime_copy_ &&
      std::memcmp(&*device_runtime_copy_, &runtime_, QD_RUNTIME_HOST_BYTES) ==
          0) {
    return absl::OkStatus();
  }
  device_runtime_copy_.reset();
  // Queued behind the launches that read the old values.
  QD_RETURN_IF_ERROR(uploads_->Copy(device_runtime_.get(), &runtime_,
                                    QD_RUNTIME_HOST_BYTES));
  device_runtime_copy_ = runtime_;
  return absl::OkStatus();
}

absl::Status GpuBackend::DownloadRuntime() {
  QD_RETURN_IF_ERROR(device_runtime_.Download(&runtime_, sizeof(runtime_)));
  uploads_->Drained();
  return absl::OkStatus();
}

absl::Status GpuBackend::UploadContext(const QdLaunchContext& ctx,
                                       size_t num_params) {
  const int64_t bytes = QD_LAUNCH_CONTEXT_BYTES(num_params);
  if (bytes <= uploaded_context_bytes_ &&
      std::memcmp(&uploaded_context_, &ctx, bytes) == 0) {
    return absl::OkStatus();
  }
  // Queued behind the launches still reading the buffer.
  QD_RETURN_IF_ERROR(uploads_->Copy(device_context_.get(), &ctx, bytes));
  std::memcpy(&uploaded_context_, &ctx, bytes);
  uploaded_context_bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status GpuBackend::UploadRecord() {
  const auto* record =
      reinterpret_cast<const char*>(&runtime_) + QD_RUNTIME_HOST_BYTES;
  return device_->CopyToDevice(device_runtime_.get() + QD_RUNTIME_HOST_BYTES,
                               record, QD_RUNTIME_RECORD_BYTES);
}

absl::Status GpuBackend::Synchronize() {
  QD_RETURN_IF_ERROR(device_->Synchronize());
  uploads_->Drained();
  return absl::OkStatus();
}

adstack::MaxReducer* GpuBackend::reducer() {
  if (!reducer_ && max_reduce_loader_) {
    reducer_ = std::make_unique<GpuMaxReducer>(device_, max_reduce_loader_,
                                               resident_threads_);
  } else if (!reducer_) {
    reducer_ = std::make_unique<host::HostMaxReducer>();
  }
  return reducer_.get();
}

absl::Status GpuBackend::ResolveRange(const GpuTask& task, int64_t range[2]) {
  QD_RETURN_IF_ERROR(UploadRuntime());
  KernelLaunch bounds;
  bounds.function = task.bounds;
  bounds.params = {device_context_.get(), device_bounds_.get()};
  QD_RETURN_IF_ERROR(device_->Launch(bounds));
  return device_bounds_.Download(range, 2 * sizeof(int64_t));
}

absl::Status GpuBackend::RunTask(const GpuTask& task,
                                 const GpuCompiledKernel& kernel, int index,
                                 const QdLaunchContext& ctx,
                                 absl::Span<const ResolvedArgument> args,
                                 absl::Span<const uint64_t> field_generations,
                                 const adstack::AdStackLayout* sized) {
  const std::string what =
      absl::StrCat("kernel '", kernel.name(), "' (task ", index, " at ",
                   task.loc.ToString(), "): ");
  int64_t range[2] = {0, 1};
  if (task.kind == ir::TaskKind::kRangeFor) {
    QD_RETURN_IF_ERROR(InKernel(what, ResolveRange(task, range)));
  } else if (task.kind == ir::TaskKind::kStructFor) {
    range[1] = task.cells;
  }
  if (range[1] <= range[0])
    return absl::OkStatus();
  KernelLaunch run;
  run.function = task.run;
  run.shared_bytes = task.shared_bytes;
  const auto& stacks = kernel.task_adstacks()[index];
  if (task.kind != ir::TaskKind::kSerial)
    Shape(task, range[1] - range[0], !stacks.empty(), &run.grid, &run.block);
  if (!stacks.empty()) {
    if (sized != nullptr) {
      adstack_layout_ = *sized;
    } else {
      kernel.sizer->set_reducer(reducer());
      kernel.sizer->set_memory(memory_.get());
      QD_ASSIGN_OR_RETURN(
          adstack_layout_,
          kernel.sizer->Size(config_, kernel, index, *snodes_, runtime_.root,
                             ctx, args, field_generations, &adstack_stats_));
    }
    const int64_t dispatched = int64_t{run.grid} * run.block;
    QD_RETURN_IF_ERROR(kernel.sizer->GateHeap(
        config_, kernel, index, *snodes_, runtime_.root, ctx, args,
        field_generations, dispatched, adstack_layout_.stride,
        adstack_heap_->budget(), &adstack_layout_, &adstack_stats_));
    adstack::CheckpointWithinBudget(
        config_, kernel, index, std::min<int64_t>(dispatched, resident_threads_),
        adstack_heap_->budget(), &adstack_layout_);
    const int64_t rows = adstack_layout_.rows;
    if (rows == 0) {
      QD_RETURN_IF_ERROR(
          adstack_heap_->FitGrid(kernel, index, adstack_layout_, run.block,
                                 &run.grid, &adstack_stats_));
    }
    QD_RETURN_IF_ERROR(adstack_heap_->Publish(
        adstack_layout_, index, kernel.num_tasks(),
        int64_t{run.grid} * run.block, &runtime_, &adstack_stats_));
    // The device counts its claims up from the zero uploaded here.
    if (rows > 0)
      device_runtime_copy_.reset();
  }
  QD_RETURN_IF_ERROR(UploadRuntime());
  run.params = {device_context_.get(), static_cast<uint64_t>(range[0]),
                static_cast<uint64_t>(range[1])};
  QD_RETURN_IF_ERROR(InKernel(what, device_->Launch(run)));
  QD_RETURN_IF_ERROR(InKernel(what, Synchronize()));
  QD_RETURN_IF_ERROR(DownloadRuntime());
  if (!stacks.empty()) {
    absl::optional<RuntimeErrorRecord> overflow =
        llvm_runtime::TakeAdStackOverflow(&runtime_, index,
                                          adstack_layout_.capacities,
                                          launches_);
    if (overflow) {
      if (!pending_)
        pending_ = *overflow;
      QD_RETURN_IF_ERROR(UploadRecord());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> GpuBackend::NeedsCheckpoints(
    const GpuCompiledKernel& kernel, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    std::vector<absl::optional<adstack::AdStackLayout>>* sized) {
  const int64_t budget = adstack_heap_->budget();
  kernel.sizer->set_reducer(reducer());
  kernel.sizer->set_memory(memory_.get());
  sized->assign(kernel.tasks.size(), absl::nullopt);
  bool over = false;
  for (size_t t = 0; t < kernel.tasks.size(); ++t) {
    if (kernel.task_adstacks()[t].empty())
      continue;
    const GpuTask& task = kernel.tasks[t];
    int64_t threads = resident_threads_;
    if (task.kind == ir::TaskKind::kSerial) {
      threads = 1;
    } else if (task.kind == ir::TaskKind::kStructFor) {
      unsigned grid = 1, block = 1;
      Shape(task, task.cells, /*has_stacks=*/true, &grid, &block);
      threads = std::min<int64_t>(int64_t{grid} * block, resident_threads_);
    }
    QD_ASSIGN_OR_RETURN(
        (*sized)[t],
        kernel.sizer->Size(config_, kernel, static_cast<int>(t), *snodes_,
                           runtime_.root, ctx, args, field_generations,
                           &adstack_stats_));
    // Forced capacities never segment.
    over = over || (config_.ad_stack_size <= 0 && budget > 0 &&
                    (*sized)[t]->stride > budget / threads);
  }
  return over;
}

absl::StatusOr<QdLaunchContext> GpuBackend::NewContext(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    uint64_t* launch_id) {
  QdLaunchContext ctx;
  ++launches_;
  // A kernel that neither draws random numbers nor records errors gets the
  // same context for the same arguments, so a loop of such launches
  // uploads it once.
  QD_RETURN_IF_ERROR(llvm_runtime::FillLaunchContext(
      kernel, args, reinterpret_cast<QdRuntime*>(device_runtime_.get()),
      kernel.draws_random()
          ? host::LaunchRandomKey(config_.random_seed, launches_)
          : 0,
      kernel.error_sites().empty() ? 0 : launches_, &ctx));
  record_may_hold_error_ |= !kernel.error_sites().empty();
  *launch_id = launches_;
  return ctx;
}

absl::Status GpuBackend::QueueCopy(uint64_t address, const void* data,
                                   int64_t bytes) {
  return uploads_->Copy(address, data, bytes);
}

KernelLaunch GpuBackend::QueuedLaunch(const GpuTask& task,
                                      uint64_t ctx) const {
  KernelLaunch launch;
  launch.shared_bytes = task.shared_bytes;
  switch (task.kind) {
    case ir::TaskKind::kRangeFor:
      // The range is known only on the device: one resident wave of
      // threads covers any range grid-stride.
      launch.function = task.device_range_run;
      launch.params = {ctx};
      Shape(task, resident_threads_, /*has_stacks=*/false, &launch.grid,
            &launch.block);
      break;
    case ir::TaskKind::kStructFor:
      launch.function = task.run;
      launch.params = {ctx, 0, static_cast<uint64_t>(task.cells)};
      Shape(task, task.cells, /*has_stacks=*/false, &launch.grid,
            &launch.block);
      break;
    case ir::TaskKind::kSerial:
      launch.function = task.run;
      launch.params = {ctx, 0, 1};
      break;
  }
  return launch;
}

absl::Status GpuBackend::FinishQueued(const CompiledKernel& kernel,
                                      bool* queued) {
  if (!*queued)
    return absl::OkStatus();
  *queued = false;
  QD_RETURN_IF_ERROR(Synchronize());
  if (kernel.print_sites().empty())
    return absl::OkStatus();
  return DownloadRuntime();
}

absl::StatusOr<BackendLaunchStats> GpuBackend::Launch(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const LaunchOptions& options) {
  const auto& compiled = static_cast<const GpuCompiledKernel&>(kernel);
  bool any_stacks = false;
  for (const auto& stacks : kernel.task_adstacks())
    any_stacks = any_stacks || !stacks.empty();
  const bool graph = options.graph && HasGraphs();
  if (graph && any_stacks) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(),
                     "' uses the adstack and cannot be replayed as a graph "
                     "(graph=True): its heap is sized on the host at every "
                     "launch"));
  }
  uint64_t launch_id = 0;
  QD_ASSIGN_OR_RETURN(QdLaunchContext ctx, NewContext(kernel, args, &launch_id));
  QD_RETURN_IF_ERROR(prints_.Prepare(kernel, &runtime_));
  std::vector<absl::optional<adstack::AdStackLayout>> sized;
  if (kernel.has_checkpointed_variant()) {
    QD_ASSIGN_OR_RETURN(
        const bool over,
        NeedsCheckpoints(compiled, ctx, args, field_generations, &sized));
    if (over)
      return LaunchCheckpointedVariant(kernel, args, field_generations, options);
  }
  QD_RETURN_IF_ERROR(UploadContext(ctx, args.size()));
  QD_RETURN_IF_ERROR(UploadRuntime());
  BackendLaunchStats stats;
  stats.launch_id = launch_id;
  stats.tasks = static_cast<int>(compiled.tasks.size());
  const bool prints = !kernel.print_sites().empty();
  if (graph) {
    QD_RETURN_IF_ERROR(ReplayGraph(compiled, &stats.graph_nodes));
    stats.graph_replayed = true;
    bool queued = prints;
    QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
    return stats;
  }
  if (any_stacks) {
    // This launch's numbers replace the last ones.
    adstack::BeginLaunchStats(static_cast<int>(compiled.tasks.size()),
                              &adstack_stats_);
  }
  // Tasks without adstacks are queued back to back; a task with adstacks
  // is sized on the host, so what runs before it must have finished.
  bool queued = false;
  for (size_t t = 0; t < compiled.tasks.size(); ++t) {
    const GpuTask& task = compiled.tasks[t];
    if (kernel.task_adstacks()[t].empty()) {
      if (task.kind == ir::TaskKind::kStructFor && task.cells == 0)
        continue;
      absl::Status launched = device_->Launch(QueuedLaunch(task));
      if (!launched.ok()) {
        // The message is built on failure only: this is every launch's path.
        return InKernel(absl::StrCat("kernel '", kernel.name(), "' (task ", t,
                                     " at ", task.loc.ToString(), "): "),
                        launched);
      }
      queued = true;
      continue;
    }
    QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
    QD_RETURN_IF_ERROR(RunTask(task, compiled, static_cast<int>(t), ctx, args,
                               field_generations,
                               sized.empty() || !sized[t] ? nullptr
                                                          : &*sized[t]));
  }
  // Prints are read at the launch's end, so they appear in launch order
  // with the kernel's sites; other kernels stay queued.
  queued = queued && prints;
  QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
  return stats;
}

absl::optional<RuntimeErrorRecord> GpuBackend::TakeError() {
  if (pending_) {
    // An overflow, found when its task finished, comes first; a recorded
    // error of a later launch is dropped with it, as the first error wins.
    absl::optional<RuntimeErrorRecord> record = *pending_;
    pending_.reset();
    if (record_may_hold_error_ && DownloadRuntime().ok()) {
      runtime_.error_code = QD_ERROR_NONE;
      (void)UploadRecord();
    }
    record_may_hold_error_ = false;
    return record;
  }
  if (!record_may_hold_error_)
    return absl::nullopt;
  record_may_hold_error_ = false;
  if (!DownloadRuntime().ok())
    return absl::nullopt;
  absl::optional<RuntimeErrorRecord> record =
      llvm_runtime::TakeRecordedError(&runtime_);
  if (record)
    (void)UploadRecord();
  return record;
}

PrintBatch GpuBackend::TakePrints() {
  if (runtime_.print_used == 0 && runtime_.print_dropped == 0)
    return {};
  PrintBatch batch = prints_.Take(&runtime_);
  // The counters are cleared on the device too; an error the record holds
  // goes back as it was read.
  (void)UploadRecord();
  return batch;
}

}  // namespace quadrants::gpu
