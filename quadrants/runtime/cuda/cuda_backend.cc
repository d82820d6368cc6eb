#include "quadrants/runtime/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/xxhash.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/cuda/cuda_graph.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_nvptx64.h"

namespace quadrants::cuda {
namespace {

// Threads per block: a multiple of the warp size that keeps enough blocks
// resident per multiprocessor for the register use of typical kernels.
constexpr unsigned kBlockSize = 128;

// A loaded PTX module, unloaded when the last kernel using it goes away.
class CudaModule {
 public:
  CudaModule(std::shared_ptr<CudaDriver> driver, CUmodule module)
      : driver_(std::move(driver)), module_(module) {}
  ~CudaModule() { driver_->cuModuleUnload(module_); }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  absl::StatusOr<CUfunction> Function(const std::string& name) const {
    CUfunction fn = nullptr;
    QD_RETURN_IF_ERROR(
        driver_->Check(driver_->cuModuleGetFunction(&fn, module_, name.c_str()),
                       "cuModuleGetFunction"));
    return fn;
  }

 private:
  std::shared_ptr<CudaDriver> driver_;
  CUmodule module_;
};

// Loads PTX, asking the driver's JIT for its error log on failure.
absl::StatusOr<std::shared_ptr<CudaModule>> LoadModule(
    const std::shared_ptr<CudaDriver>& driver, const std::string& ptx) {
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log, reinterpret_cast<void*>(sizeof(log))};
  CUmodule module = nullptr;
  const CUresult result =
      driver->cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    absl::Status status = driver->Check(result, "cuModuleLoadDataEx");
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat(status.message(), ": ", log));
  }
  return std::make_shared<CudaModule>(driver, module);
}

}  // namespace

struct CudaBackend::TaskLaunch {
  ir::TaskKind kind = ir::TaskKind::kSerial;
  CUfunction run = nullptr;
  CUfunction bounds = nullptr;
  CUfunction device_range_run = nullptr;  // range_for: finds its own range
  int64_t cells = 0;
  SourceLocation loc;
};

namespace {

class CudaCompiledKernel : public CompiledKernel {
 public:
  CudaCompiledKernel(const ir::Kernel& kernel,
                     std::vector<RuntimeErrorSite> sites,
                     std::shared_ptr<CudaModule> module,
                     std::vector<std::vector<AdStackInfo>> stacks)
      : CompiledKernel(kernel.name(), kernel.params(), std::move(sites),
                       static_cast<int>(stacks.size()), std::move(stacks)),
        module(std::move(module)) {}

  std::shared_ptr<CudaModule> module;
  std::vector<CudaBackend::TaskLaunch> tasks;
  // Sizes the tasks' adstacks at launch (its caches change per launch).
  mutable std::unique_ptr<adstack::LaunchSizer> sizer;
  // The tasks as one graph, built at the first graph=True launch. Its
  // parameters (the context and runtime addresses) never change: arguments
  // reach the replay through the context's contents.
  mutable std::unique_ptr<CudaGraph> graph;
};

}  // namespace

CudaBackend::CudaBackend(const CompileConfig& config,
                         std::shared_ptr<CudaDriver> driver,
                         std::unique_ptr<codegen::PtxCompiler> compiler)
    : config_(config),
      driver_(std::move(driver)),
      compiler_(std::move(compiler)),
      memory_(std::make_shared<ManagedMemoryAllocator>(driver_)),
      cache_(offline_cache::OpenOfflineCache(config, &cache_stats_)) {}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(std::unique_ptr<CudaDriver> loaded, CudaDriver::Load());
  std::shared_ptr<CudaDriver> driver = std::move(loaded);
  QD_ASSIGN_OR_RETURN(auto compiler,
                      codegen::PtxCompiler::Create(driver->compute_capability(),
                                                   driver->driver_version()));
  auto backend =
      std::make_unique<CudaBackend>(config, driver, std::move(compiler));
  int per_sm = 0;
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceGetAttribute(&backend->multiprocessors_,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   driver->device()),
      "cuDeviceGetAttribute"));
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceGetAttribute(
          &per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
          driver->device()),
      "cuDeviceGetAttribute"));
  backend->resident_threads_ = backend->multiprocessors_ * per_sm;
  size_t total = 0;
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceTotalMem(&total, driver->device()), "cuDeviceTotalMem"));
  backend->heap_budget_ =
      config.device_memory_GB > 0
          ? static_cast<int64_t>(config.device_memory_GB * (1LL << 30))
      : config.device_memory_fraction > 0
          ? static_cast<int64_t>(config.device_memory_fraction * total)
          : static_cast<int64_t>(total / 2);
  QD_ASSIGN_OR_RETURN(backend->device_runtime_,
                      DeviceBuffer::Allocate(driver, sizeof(QdRuntime)));
  QD_ASSIGN_OR_RETURN(backend->device_context_,
                      DeviceBuffer::Allocate(driver, sizeof(QdLaunchContext)));
  QD_ASSIGN_OR_RETURN(backend->device_bounds_,
                      DeviceBuffer::Allocate(driver, 2 * sizeof(int64_t)));
  return backend;
}

absl::Status CudaBackend::Probe() {
  QD_ASSIGN_OR_RETURN(std::unique_ptr<CudaDriver> driver, CudaDriver::Load());
  return codegen::PtxCompiler::Create(driver->compute_capability(),
                                      driver->driver_version())
      .status();
}

codegen::LoweringOptions CudaBackend::LoweringOptions() const {
  codegen::LoweringOptions options;
  options.check_out_of_bound = config_.checks_bounds();
  options.debug = config_.debug;
  options.ad_stack_size_forced = config_.ad_stack_size > 0;
  options.interleave_adstacks = true;
  options.warp_aggregate_atomics = true;
  options.triple = compiler_->triple();
  options.data_layout = compiler_->data_layout();
  return options;
}

absl::StatusOr<offline_cache::KernelArtifact> CudaBackend::Generate(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  llvm::LLVMContext context;
  QD_ASSIGN_OR_RETURN(
      codegen::LoweredKernel lowered,
      codegen::LowerKernel(offloaded, snodes, LoweringOptions(), context));
  offline_cache::KernelArtifact artifact;
  QD_ASSIGN_OR_RETURN(artifact.object, compiler_->Compile(lowered));
  artifact.tasks = std::move(lowered.tasks);
  artifact.error_sites = std::move(lowered.error_sites);
  artifact.print_sites = std::move(lowered.print_sites);
  return artifact;
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> CudaBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  snodes_ = &snodes;
  std::string key;
  if (cache_) {
    static const uint64_t runtime_hash =
        llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(kRuntimeBitcodeNvptx64,
                                                  kRuntimeBitcodeNvptx64_size));
    key = offline_cache::CacheKey(
        offloaded, snodes,
        absl::StrCat(LoweringOptions().ToString(), " runtime=", runtime_hash),
        absl::StrCat("cuda ", compiler_->target_description(), " driver ",
                     driver_->driver_version()));
  }
  QD_ASSIGN_OR_RETURN(
      auto generated,
      offline_cache::LoadOrGenerate<std::shared_ptr<CudaModule>>(
          cache_ ? &*cache_ : nullptr, key, &cache_stats_,
          [&] { return Generate(offloaded, snodes); },
          [&](const offline_cache::KernelArtifact& artifact) {
            return LoadModule(driver_, artifact.object);
          }));
  const offline_cache::KernelArtifact& artifact = generated.first;
  auto compiled = std::make_shared<CudaCompiledKernel>(
      offloaded, offline_cache::ErrorSites(artifact), generated.second,
      offline_cache::TaskAdStacks(artifact));
  for (const auto& task : artifact.tasks) {
    TaskLaunch launch;
    launch.kind = task.kind;
    launch.cells = task.struct_for_cells;
    launch.loc = task.loc;
    QD_ASSIGN_OR_RETURN(launch.run,
                        compiled->module->Function(
                            codegen::PtxCompiler::EntryName(task.function)));
    if (!task.bounds_function.empty()) {
      QD_ASSIGN_OR_RETURN(
          launch.bounds,
          compiled->module->Function(
              codegen::PtxCompiler::EntryName(task.bounds_function)));
      QD_ASSIGN_OR_RETURN(
          launch.device_range_run,
          compiled->module->Function(
              codegen::PtxCompiler::DeviceRangeEntryName(task.function)));
    }
    compiled->tasks.push_back(launch);
  }
  compiled->sizer =
      std::make_unique<adstack::LaunchSizer>(compiled->task_adstacks());
  compiled->set_print_sites(artifact.print_sites);
  return compiled;
}

void CudaBackend::Shape(int64_t iterations, bool has_stacks, unsigned* grid,
                        unsigned* block) const {
  *block = kBlockSize;
  // Grid-stride loops cover the rest: an adstack task never runs more
  // threads than stay resident, so its heap is bounded by the device, not
  // by the range.
  const int64_t resident_blocks =
      std::max<int64_t>(1, resident_threads_ / kBlockSize);
  const int64_t cap = has_stacks ? resident_blocks : 16 * resident_blocks;
  const int64_t wanted = (iterations + kBlockSize - 1) / kBlockSize;
  *grid = static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, cap));
}

absl::Status CudaBackend::UploadRuntime() {
  if (device_runtime_copy_ &&
      std::memcmp(&*device_runtime_copy_, &runtime_, sizeof(runtime_)) == 0) {
    return absl::OkStatus();
  }
  device_runtime_copy_.reset();
  QD_RETURN_IF_ERROR(device_runtime_.Upload(&runtime_, sizeof(runtime_)));
  device_runtime_copy_ = runtime_;
  return absl::OkStatus();
}

absl::Status CudaBackend::DownloadRuntime() {
  device_runtime_copy_.reset();
  QD_RETURN_IF_ERROR(device_runtime_.Download(&runtime_, sizeof(runtime_)));
  device_runtime_copy_ = runtime_;
  return absl::OkStatus();
}

absl::Status CudaBackend::Synchronize() {
  return driver_->Check(driver_->cuCtxSynchronize(), "cuCtxSynchronize");
}

absl::Status CudaBackend::SizeAdStacks(
    const CompiledKernel& kernel, int task, const QdLaunchContext& ctx,
    absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations, unsigned block,
    unsigned* grid) {
  const auto& compiled = static_cast<const CudaCompiledKernel&>(kernel);
  QD_ASSIGN_OR_RETURN(
      adstack_layout_,
      compiled.sizer->Size(config_, kernel, task, *snodes_, runtime_.root, ctx,
                           args, field_generations, &adstack_stats_));
  // Fewer threads, each looping over more iterations, when the heap for
  // every resident thread would not fit.
  const int64_t stride = std::max<int64_t>(adstack_layout_.stride, 1);
  const int64_t blocks = heap_budget_ / (stride * block);
  if (blocks < 1) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(), "' (task ", task,
                     "): its adstacks need ", stride, " bytes per thread, and ",
                     block, " threads exceed the ", heap_budget_,
                     " bytes the adstack heap may take (raise "
                     "qd.init(device_memory_GB=...) or lower ad_stack_size)"));
  }
  *grid = static_cast<unsigned>(std::min<int64_t>(*grid, blocks));
  return absl::OkStatus();
}

absl::Status CudaBackend::PublishAdStacks(const CompiledKernel& kernel,
                                          int task, int64_t threads) {
  const int64_t need = adstack_layout_.stride * threads;
  if (need > adstack_stats_.heap_bytes) {
    // Amortized doubling, but never past the budget for the doubling alone.
    const int64_t grown =
        std::max(need, std::min(2 * adstack_stats_.heap_bytes, heap_budget_));
    // Free the old heap before growing; until the new one exists nothing is
    // allocated, so a failure here is retried by the next launch.
    adstack_heap_ = DeviceBuffer();
    adstack_stats_.heap_bytes = 0;
    QD_ASSIGN_OR_RETURN(adstack_heap_, DeviceBuffer::Allocate(driver_, grown));
    adstack_stats_.heap_bytes = grown;
    ++adstack_stats_.heap_grows;
  }
  std::vector<int64_t> metadata = adstack_layout_.offsets;
  metadata.insert(metadata.end(), adstack_layout_.capacities.begin(),
                  adstack_layout_.capacities.end());
  const int64_t metadata_bytes =
      static_cast<int64_t>(metadata.size() * sizeof(int64_t));
  if (metadata_bytes > adstack_metadata_.size()) {
    published_metadata_.clear();
    adstack_metadata_ = DeviceBuffer();
    QD_ASSIGN_OR_RETURN(adstack_metadata_,
                        DeviceBuffer::Allocate(driver_, metadata_bytes));
  }
  if (metadata != published_metadata_) {
    published_metadata_.clear();
    QD_RETURN_IF_ERROR(
        adstack_metadata_.Upload(metadata.data(), metadata_bytes));
    published_metadata_ = std::move(metadata);
  }
  auto* offsets = reinterpret_cast<qd_i64*>(adstack_metadata_.get());
  runtime_.adstack_heap = reinterpret_cast<char*>(adstack_heap_.get());
  runtime_.adstack_per_thread_stride = adstack_layout_.stride;
  runtime_.adstack_threads = threads;
  runtime_.adstack_offsets = offsets;
  runtime_.adstack_max_sizes = offsets + adstack_layout_.offsets.size();
  runtime_.adstack_overflow = 0;
  adstack::RecordLayout(adstack_layout_, task, kernel.num_tasks(), threads,
                        &adstack_stats_);
  return absl::OkStatus();
}

absl::Status CudaBackend::RunTask(
    const TaskLaunch& task, const CompiledKernel& kernel, int index,
    const QdLaunchContext& ctx, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations) {
  const std::string what =
      absl::StrCat("kernel '", kernel.name(), "' (task ", index, " at ",
                   task.loc.ToString(), "): ");
  auto check = [&](CUresult result, const char* call) -> absl::Status {
    absl::Status status = driver_->Check(result, call);
    if (status.ok())
      return status;
    return MakeError(ErrorKind::kRuntime, absl::StrCat(what, status.message()));
  };
  CUdeviceptr ctx_ptr = device_context_.get();
  int64_t range[2] = {0, 1};
  if (task.kind == ir::TaskKind::kRangeFor) {
    QD_RETURN_IF_ERROR(UploadRuntime());
    CUdeviceptr out = device_bounds_.get();
    void* params[] = {&ctx_ptr, &out};
    QD_RETURN_IF_ERROR(
        check(driver_->cuLaunchKernel(task.bounds, 1, 1, 1, 1, 1, 1, 0, nullptr,
                                      params, nullptr),
              "cuLaunchKernel"));
    QD_RETURN_IF_ERROR(device_bounds_.Download(range, sizeof(range)));
  } else if (task.kind == ir::TaskKind::kStructFor) {
    range[1] = task.cells;
  }
  if (range[1] <= range[0])
    return absl::OkStatus();
  unsigned grid = 1, block = 1;
  const auto& stacks = kernel.task_adstacks()[index];
  if (task.kind != ir::TaskKind::kSerial)
    Shape(range[1] - range[0], !stacks.empty(), &grid, &block);
  if (!stacks.empty()) {
    QD_RETURN_IF_ERROR(SizeAdStacks(kernel, index, ctx, args, field_generations,
                                    block, &grid));
    QD_RETURN_IF_ERROR(PublishAdStacks(kernel, index, int64_t{grid} * block));
  }
  QD_RETURN_IF_ERROR(UploadRuntime());
  void* params[] = {&ctx_ptr, &range[0], &range[1]};
  QD_RETURN_IF_ERROR(
      check(driver_->cuLaunchKernel(task.run, grid, 1, 1, block, 1, 1, 0,
                                    nullptr, params, nullptr),
            "cuLaunchKernel"));
  QD_RETURN_IF_ERROR(check(driver_->cuCtxSynchronize(), "cuCtxSynchronize"));
  QD_RETURN_IF_ERROR(DownloadRuntime());
  if (!stacks.empty() && !pending_) {
    absl::optional<RuntimeErrorRecord> overflow =
        llvm_runtime::TakeAdStackOverflow(&runtime_, index,
                                          adstack_layout_.capacities);
    if (overflow)
      pending_ = *overflow;
  }
  return absl::OkStatus();
}

KernelLaunch CudaBackend::QueuedLaunch(const TaskLaunch& task) const {
  KernelLaunch launch;
  const uint64_t ctx = device_context_.get();
  switch (task.kind) {
    case ir::TaskKind::kRangeFor:
      // The range is known only on the device: one resident wave of
      // threads covers any range grid-stride.
      launch.function = task.device_range_run;
      launch.params = {ctx};
      Shape(resident_threads_, /*has_stacks=*/false, &launch.grid,
            &launch.block);
      break;
    case ir::TaskKind::kStructFor:
      launch.function = task.run;
      launch.params = {ctx, 0, static_cast<uint64_t>(task.cells)};
      Shape(task.cells, /*has_stacks=*/false, &launch.grid, &launch.block);
      break;
    case ir::TaskKind::kSerial:
      launch.function = task.run;
      launch.params = {ctx, 0, 1};
      break;
  }
  return launch;
}

absl::Status CudaBackend::FinishQueued(const CompiledKernel& kernel,
                                       bool* queued) {
  if (!*queued)
    return absl::OkStatus();
  *queued = false;
  QD_RETURN_IF_ERROR(Synchronize());
  // Only error checks, assertions and print() write the runtime record.
  if (kernel.error_sites().empty() && kernel.print_sites().empty())
    return absl::OkStatus();
  return DownloadRuntime();
}

absl::Status CudaBackend::ReplayGraph(const CompiledKernel& kernel) {
  const auto& compiled = static_cast<const CudaCompiledKernel&>(kernel);
  if (!compiled.graph) {
    std::vector<KernelLaunch> launches;
    for (const TaskLaunch& task : compiled.tasks) {
      if (task.kind != ir::TaskKind::kStructFor || task.cells > 0)
        launches.push_back(QueuedLaunch(task));
    }
    absl::StatusOr<std::unique_ptr<CudaGraph>> graph =
        CudaGraph::Build(driver_, launches);
    if (!graph.ok()) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat("kernel '", kernel.name(),
                                    "': building its CUDA graph: ",
                                    graph.status().message()));
    }
    compiled.graph = *std::move(graph);
  }
  absl::Status replayed = compiled.graph->Launch();
  if (!replayed.ok()) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(), "': ", replayed.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<BackendLaunchStats> CudaBackend::Launch(
    const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
    absl::Span<const uint64_t> field_generations,
    const LaunchOptions& options) {
  const auto& compiled = static_cast<const CudaCompiledKernel&>(kernel);
  bool any_stacks = false;
  for (const auto& stacks : kernel.task_adstacks())
    any_stacks = any_stacks || !stacks.empty();
  if (options.graph && any_stacks) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(),
                     "' uses the adstack and cannot be replayed as a graph "
                     "(graph=True): its heap is sized on the host at every "
                     "launch"));
  }
  // The last launch finished at its end, and copies from pageable host
  // memory wait for queued work: nothing still runs that sizing could race.
  QdLaunchContext ctx;
  QD_RETURN_IF_ERROR(llvm_runtime::FillLaunchContext(
      kernel, args, reinterpret_cast<QdRuntime*>(device_runtime_.get()),
      llvm_runtime::LaunchRandomKey(config_.random_seed, ++launches_), &ctx));
  QD_RETURN_IF_ERROR(prints_.Prepare(kernel, &runtime_));
  QD_RETURN_IF_ERROR(device_context_.Upload(&ctx, sizeof(ctx)));
  QD_RETURN_IF_ERROR(UploadRuntime());
  BackendLaunchStats stats;
  stats.tasks = static_cast<int>(compiled.tasks.size());
  if (options.graph) {
    QD_RETURN_IF_ERROR(ReplayGraph(kernel));
    stats.graph_replayed = true;
    bool queued = true;
    QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
    return stats;
  }
  if (any_stacks) {
    // This launch's numbers replace the last ones.
    adstack_stats_.bytes_needed = 0;
    adstack_stats_.capacities.assign(compiled.tasks.size(), {});
    adstack_stats_.per_thread_stride.assign(compiled.tasks.size(), 0);
  }
  // Tasks without adstacks are queued back to back; a task with adstacks
  // is sized on the host, so what runs before it must have finished.
  bool queued = false;
  for (size_t t = 0; t < compiled.tasks.size(); ++t) {
    const TaskLaunch& task = compiled.tasks[t];
    if (kernel.task_adstacks()[t].empty()) {
      if (task.kind == ir::TaskKind::kStructFor && task.cells == 0)
        continue;
      absl::Status status = QueuedLaunch(task).Enqueue(*driver_);
      if (!status.ok()) {
        return MakeError(
            ErrorKind::kRuntime,
            absl::StrCat("kernel '", kernel.name(), "' (task ", t, " at ",
                         task.loc.ToString(), "): ", status.message()));
      }
      queued = true;
      continue;
    }
    QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
    QD_RETURN_IF_ERROR(RunTask(task, kernel, static_cast<int>(t), ctx, args,
                               field_generations));
  }
  QD_RETURN_IF_ERROR(FinishQueued(kernel, &queued));
  return stats;
}

absl::optional<RuntimeErrorRecord> CudaBackend::TakeError() {
  if (pending_) {
    absl::optional<RuntimeErrorRecord> record = *pending_;
    pending_.reset();
    runtime_.error_code = QD_ERROR_NONE;
    return record;
  }
  return llvm_runtime::TakeRecordedError(&runtime_);
}

PrintBatch CudaBackend::TakePrints() {
  return prints_.Take(&runtime_);
}

}  // namespace quadrants::cuda
