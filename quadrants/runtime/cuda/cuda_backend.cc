#include "quadrants/runtime/cuda/cuda_backend.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/cuda/ptx_compiler.h"
#include "quadrants/codegen/llvm/graph_loop_kernels.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/cuda/cuda_graph.h"
#include "quadrants/runtime/cuda/cuda_growable_memory.h"
#include "quadrants/runtime/gpu/driver.h"
#include "quadrants/runtime/gpu/gpu_codegen.h"

namespace quadrants::cuda {
namespace {

// The shared GPU runtime's driver hooks over the CUDA driver API: cuMemAlloc
// memory for everything kernels address (field memory from reserved address
// ranges that grow in place), copies and launches on the legacy
// default stream (whose synchronous copies wait for the launches before
// them), pinned staging from cuMemHostAlloc, and PTX modules JIT-compiled
// by the driver (its error log in load errors).
class CudaDevice final : public gpu::Driver {
 public:
  explicit CudaDevice(std::shared_ptr<CudaDriver> driver)
      : cu_(driver), growable_(std::move(driver)) {}

  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    CUdeviceptr address = 0;
    absl::Status status = cu_->Check(
        cu_->cuMemAlloc(&address, static_cast<size_t>(bytes)), "cuMemAlloc");
    if (!status.ok()) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat("out of device memory for ", bytes,
                                    " bytes: ", status.message()));
    }
    return static_cast<uint64_t>(address);
  }
  void Free(uint64_t address) override {
    if (growable_.Free(address))
      return;
    if (cu_->MakeCurrent().ok())
      cu_->cuMemFree(address);
  }
  absl::StatusOr<uint64_t> AllocateGrowable(int64_t bytes,
                                            int64_t max_bytes) override {
    return growable_.Allocate(bytes, max_bytes);
  }
  absl::Status Grow(uint64_t address, int64_t new_bytes) override {
    return growable_.Grow(address, new_bytes);
  }
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuMemcpyHtoD(address, data, bytes), "cuMemcpyHtoD");
  }
  absl::Status CopyToHost(void* data, uint64_t address,
                          int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuMemcpyDtoH(data, address, bytes), "cuMemcpyDtoH");
  }
  absl::Status CopyToDeviceAsync(uint64_t address, const void* pinned,
                                 int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuMemcpyHtoDAsync(address, pinned, bytes, nullptr),
                      "cuMemcpyHtoDAsync");
  }
  absl::Status Zero(uint64_t address, int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuMemsetD8Async(address, 0, bytes, nullptr),
                      "cuMemsetD8Async");
  }
  absl::StatusOr<void*> AllocatePinned(int64_t bytes) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    void* data = nullptr;
    QD_RETURN_IF_ERROR(cu_->Check(
        cu_->cuMemHostAlloc(&data, static_cast<size_t>(bytes), 0),
        "cuMemHostAlloc"));
    return data;
  }
  void FreePinned(void* data) override {
    if (cu_->MakeCurrent().ok())
      cu_->cuMemFreeHost(data);
  }
  absl::Status Synchronize() override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuCtxSynchronize(), "cuCtxSynchronize");
  }

  // Asks the driver's JIT for its error log on failure.
  absl::StatusOr<void*> LoadModule(const std::string& ptx) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    char log[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof(log))};
    CUmodule module = nullptr;
    const CUresult result =
        cu_->cuModuleLoadDataEx(&module, ptx.c_str(), 2, options, values);
    if (result != CUDA_SUCCESS) {
      absl::Status status = cu_->Check(result, "cuModuleLoadDataEx");
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat(status.message(), ": ", log));
    }
    return static_cast<void*>(module);
  }
  void UnloadModule(void* module) override {
    if (cu_->MakeCurrent().ok())
      cu_->cuModuleUnload(static_cast<CUmodule>(module));
  }
  absl::StatusOr<void*> Function(void* module,
                                 const std::string& name) override {
    CUfunction fn = nullptr;
    QD_RETURN_IF_ERROR(
        cu_->Check(cu_->cuModuleGetFunction(&fn, static_cast<CUmodule>(module),
                                            name.c_str()),
                   "cuModuleGetFunction"));
    return static_cast<void*>(fn);
  }

  absl::StatusOr<gpu::DeviceLimits> Limits() override {
    int multiprocessors = 0, per_sm = 0;
    QD_RETURN_IF_ERROR(
        Attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &multiprocessors));
    QD_RETURN_IF_ERROR(
        Attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &per_sm));
    size_t total = 0;
    QD_RETURN_IF_ERROR(cu_->Check(cu_->cuDeviceTotalMem(&total, cu_->device()),
                                  "cuDeviceTotalMem"));
    return gpu::DeviceLimits{multiprocessors * per_sm,
                             static_cast<int64_t>(total)};
  }

  int SubgroupSize() const override { return 32; }
  absl::StatusOr<int64_t> MaxSharedBytes() override {
    int limit = 0;
    QD_RETURN_IF_ERROR(Attribute(
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &limit));
    return limit;
  }

  absl::Status AllowSharedMemory(void* function,
                                 int64_t shared_bytes) override {
    // Up to 48 KiB needs nothing; beyond, each function opts in, up to the
    // device's per-block limit.
    if (shared_bytes <= 48 * 1024)
      return absl::OkStatus();
    int limit = 0;
    QD_RETURN_IF_ERROR(Attribute(
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &limit));
    if (shared_bytes > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "its shared arrays take ", shared_bytes,
          " bytes of block-shared memory; this device allows ", limit,
          " per block"));
    }
    return cu_->Check(
        cu_->cuFuncSetAttribute(
            static_cast<CUfunction>(function),
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(shared_bytes)),
        "cuFuncSetAttribute");
  }

 protected:
  absl::Status LaunchKernel(void* function, unsigned grid, unsigned block,
                            unsigned shared_bytes, void** params) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(
        cu_->cuLaunchKernel(static_cast<CUfunction>(function), grid, 1, 1,
                            block, 1, 1, shared_bytes, nullptr, params,
                            nullptr),
        "cuLaunchKernel");
  }

 private:
  absl::Status Attribute(CUdevice_attribute attribute, int* value) {
    return cu_->Check(
        cu_->cuDeviceGetAttribute(value, attribute, cu_->device()),
        "cuDeviceGetAttribute");
  }

  std::shared_ptr<CudaDriver> cu_;
  CudaGrowableMemory growable_;
};

class CudaCompiledKernel : public gpu::ModuleKernel {
 public:
  using ModuleKernel::ModuleKernel;

  // The tasks as one graph, built at the first graph=True launch. Its
  // parameters (the context and runtime addresses) never change: arguments
  // reach the replay through the context's contents.
  mutable std::unique_ptr<CudaGraph> graph;
};

// CUDA streams and events. Streams are created blocking, so work on them
// stays ordered with the default stream's (array copies, plain launches)
// while two streams' work may overlap.
class CudaStreams final : public StreamOps {
 public:
  explicit CudaStreams(std::shared_ptr<CudaDriver> cu) : cu_(std::move(cu)) {}

  absl::StatusOr<uint64_t> CreateStream() override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    CUstream stream = nullptr;
    QD_RETURN_IF_ERROR(
        cu_->Check(cu_->cuStreamCreate(&stream, 0), "cuStreamCreate"));
    return reinterpret_cast<uint64_t>(stream);
  }
  absl::Status DestroyStream(uint64_t stream) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuStreamDestroy(Stream(stream)), "cuStreamDestroy");
  }
  absl::Status SynchronizeStream(uint64_t stream) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuStreamSynchronize(Stream(stream)),
                      "cuStreamSynchronize");
  }
  absl::StatusOr<uint64_t> CreateEvent() override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    CUevent event = nullptr;
    QD_RETURN_IF_ERROR(cu_->Check(
        cu_->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
    return reinterpret_cast<uint64_t>(event);
  }
  absl::Status DestroyEvent(uint64_t event) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuEventDestroy(Event(event)), "cuEventDestroy");
  }
  absl::Status RecordEvent(uint64_t event, uint64_t stream) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuEventRecord(Event(event), Stream(stream)),
                      "cuEventRecord");
  }
  absl::Status WaitEvent(uint64_t event, uint64_t stream) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuStreamWaitEvent(Stream(stream), Event(event), 0),
                      "cuStreamWaitEvent");
  }
  absl::Status SynchronizeEvent(uint64_t event) override {
    QD_RETURN_IF_ERROR(cu_->MakeCurrent());
    return cu_->Check(cu_->cuEventSynchronize(Event(event)),
                      "cuEventSynchronize");
  }

 private:
  static CUstream Stream(uint64_t h) { return reinterpret_cast<CUstream>(h); }
  static CUevent Event(uint64_t h) { return reinterpret_cast<CUevent>(h); }

  std::shared_ptr<CudaDriver> cu_;
};

// Appends the plan's parts and loops (in plan order) and a key of its
// shape; false when a part cannot run in a graph: it sizes adstacks or
// reads prints on the host, or, inside a loop, draws qd.random() (each
// launch has its own random key, which a replayed body would repeat).
bool DescribePlan(absl::Span<const PlanStep> plan, std::string* key,
                  std::vector<const PlanStep*>* parts,
                  std::vector<const PlanStep*>* loops, bool in_loop = false) {
  for (const PlanStep& step : plan) {
    if (step.part == nullptr) {
      loops->push_back(&step);
      absl::StrAppend(key, "L(");
      if (!DescribePlan(step.body, key, parts, loops, /*in_loop=*/true))
        return false;
      absl::StrAppend(key, ")");
      continue;
    }
    const CompiledKernel& kernel = *step.part;
    for (const auto& stacks : kernel.task_adstacks()) {
      if (!stacks.empty())
        return false;
    }
    if (!kernel.print_sites().empty() || (in_loop && kernel.draws_random()) ||
        kernel.has_checkpointed_variant()) {
      return false;
    }
    parts->push_back(&step);
    absl::StrAppend(key, "P", reinterpret_cast<uintptr_t>(&kernel), ";");
  }
  return true;
}

// What keys PTX in the offline cache: the runtime module linked in, the
// target and the driver.
gpu::GpuCacheTarget PtxCacheTarget(const codegen::GpuCompiler& compiler,
                                   int driver_version) {
  return {
      absl::StrCat(" runtime=", gpu::BitcodeHash(compiler.runtime_bitcode())),
      absl::StrCat("cuda ", compiler.target_description(), " driver ",
                   driver_version)};
}

}  // namespace

CudaBackend::CudaBackend(const CompileConfig& config,
                         std::shared_ptr<CudaDriver> driver,
                         std::unique_ptr<codegen::GpuCompiler> compiler,
                         gpu::GpuCacheTarget cache_target)
    : DriverBackend(config, std::make_shared<CudaDevice>(driver),
                    std::move(compiler), std::move(cache_target)),
      driver_(std::move(driver)),
      streams_(std::make_unique<CudaStreams>(driver_)) {}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(std::shared_ptr<CudaDriver> driver,
                      CudaDriver::Shared(config.device_id));
  QD_RETURN_IF_ERROR(driver->MakeCurrent());
  if (config.cuda_stack_limit > 0) {
    // Deep qd.real_func recursion needs more than the default stack.
    QD_RETURN_IF_ERROR(driver->Check(
        driver->cuCtxSetLimit(CU_LIMIT_STACK_SIZE,
                              static_cast<size_t>(config.cuda_stack_limit)),
        "cuCtxSetLimit(CU_LIMIT_STACK_SIZE)"));
  }
  QD_ASSIGN_OR_RETURN(auto compiler,
                      codegen::CreatePtxCompiler(driver->compute_capability(),
                                                 driver->driver_version()));
  gpu::GpuCacheTarget cache_target =
      PtxCacheTarget(*compiler, driver->driver_version());
  auto backend = std::make_unique<CudaBackend>(
      config, driver, std::move(compiler), std::move(cache_target));
  QD_RETURN_IF_ERROR(backend->Init());
  return backend;
}

absl::Status CudaBackend::Probe() {
  QD_ASSIGN_OR_RETURN(std::shared_ptr<CudaDriver> driver, CudaDriver::Shared(0));
  return codegen::CreatePtxCompiler(driver->compute_capability(),
                                    driver->driver_version())
      .status();
}

std::shared_ptr<gpu::ModuleKernel> CudaBackend::NewKernel(
    const CompiledKernelData& artifact,
    std::shared_ptr<gpu::GpuModule> module) const {
  return std::make_shared<CudaCompiledKernel>(artifact,
                                              std::move(module));
}

absl::StatusOr<GraphLoopKernels> CudaBackend::LoopKernels() {
  if (loop_module_ == nullptr) {
    QD_ASSIGN_OR_RETURN(
        std::string binary,
        compiler().CompileGraphLoopKernels("cudaGraphSetConditional"));
    QD_ASSIGN_OR_RETURN(std::shared_ptr<gpu::GpuModule> module,
                        LoadModule(binary));
    QD_ASSIGN_OR_RETURN(loop_kernels_.arm,
                        module->Function(codegen::kGraphLoopArmEntry));
    QD_ASSIGN_OR_RETURN(loop_kernels_.check,
                        module->Function(codegen::kGraphLoopCheckEntry));
    loop_module_ = std::move(module);
  }
  return loop_kernels_;
}

absl::StatusOr<std::unique_ptr<CudaBackend::PlanGraph>>
CudaBackend::BuildPlanGraph(absl::Span<const PlanStep> plan) {
  QD_ASSIGN_OR_RETURN(GraphLoopKernels kernels, LoopKernels());
  auto built = std::make_unique<PlanGraph>();
  std::function<absl::StatusOr<std::vector<GraphPlanNode>>(
      absl::Span<const PlanStep>)>
      nodes = [&](absl::Span<const PlanStep> steps)
      -> absl::StatusOr<std::vector<GraphPlanNode>> {
    std::vector<GraphPlanNode> out;
    for (const PlanStep& step : steps) {
      GraphPlanNode& node = out.emplace_back();
      if (step.part == nullptr) {
        QD_ASSIGN_OR_RETURN(gpu::DeviceBuffer slot,
                            gpu::DeviceBuffer::Allocate(device(), 8));
        node.loop = true;
        node.counter_slot = slot.get();
        built->slots.push_back(std::move(slot));
        QD_ASSIGN_OR_RETURN(node.body, nodes(step.body));
        continue;
      }
      QD_ASSIGN_OR_RETURN(
          gpu::DeviceBuffer context,
          gpu::DeviceBuffer::Allocate(device(), sizeof(QdLaunchContext)));
      const auto& kernel =
          static_cast<const gpu::GpuCompiledKernel&>(*step.part);
      for (const gpu::GpuTask& task : kernel.tasks) {
        if (task.kind != ir::TaskKind::kStructFor || task.cells > 0) {
          node.launches.push_back({QueuedLaunch(task, context.get()),
                                   task.graph_region, task.graph_section});
        }
      }
      built->contexts.push_back(std::move(context));
      built->parts.push_back(step.part);
    }
    return out;
  };
  QD_ASSIGN_OR_RETURN(std::vector<GraphPlanNode> graph_plan, nodes(plan));
  QD_ASSIGN_OR_RETURN(built->graph,
                      CudaGraph::BuildPlan(driver_, graph_plan, kernels));
  return built;
}

absl::StatusOr<bool> CudaBackend::LaunchPlan(
    absl::Span<const PlanStep> plan,
    absl::Span<const uint64_t> field_generations, uint64_t stream,
    std::vector<uint64_t>* launch_ids, int* graph_nodes) {
  std::string key = absl::StrCat("S", stream, ":");
  std::vector<const PlanStep*> parts, loops;
  if (!DescribePlan(plan, &key, &parts, &loops) ||
      (!loops.empty() && !driver_->has_conditional_nodes())) {
    return false;
  }
  auto found = plan_graphs_.find(key);
  if (found == plan_graphs_.end()) {
    absl::StatusOr<std::unique_ptr<PlanGraph>> built = BuildPlanGraph(plan);
    if (!built.ok()) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat("kernel '", parts.empty() ? "" : parts[0]->part->name(),
                                    "': building the CUDA graph of its "
                                    "qd.graph.do_while loops: ",
                                    built.status().message()));
    }
    found = plan_graphs_.emplace(key, *std::move(built)).first;
  }
  PlanGraph& graph = *found->second;
  QD_RETURN_IF_ERROR(UploadRuntime());
  const auto on = reinterpret_cast<CUstream>(stream);
  // The slots and contexts are read by the replay queued after them: on
  // the default stream through the upload ring, on another stream by a
  // copy on that stream (from pageable memory, staged when the call
  // returns, so the next launch may overwrite it).
  auto copy = [&](uint64_t to, const void* from, size_t bytes) {
    if (stream == 0)
      return QueueCopy(to, from, static_cast<int64_t>(bytes));
    return driver_->Check(
        driver_->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(to), from, bytes,
                                   on),
        "cuMemcpyHtoDAsync");
  };
  graph.staged.resize(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    uint64_t id = 0;
    QD_ASSIGN_OR_RETURN(graph.staged[k],
                        NewContext(*parts[k]->part, parts[k]->args, &id));
    QD_RETURN_IF_ERROR(
        copy(graph.contexts[k].get(), &graph.staged[k],
             QD_LAUNCH_CONTEXT_BYTES(parts[k]->args.size())));
    launch_ids->push_back(id);
  }
  std::vector<uint64_t> addresses(loops.size());
  for (size_t k = 0; k < loops.size(); ++k) {
    addresses[k] = reinterpret_cast<uintptr_t>(loops[k]->counter);
    QD_RETURN_IF_ERROR(
        copy(graph.slots[k].get(), &addresses[k], sizeof(uint64_t)));
  }
  QD_RETURN_IF_ERROR(graph.graph->Launch(on));
  *graph_nodes = graph.graph->num_nodes();
  return true;
}

std::string CudaBackend::device_description() const {
  return absl::StrCat(driver_->device_name(), " (sm_",
                      driver_->compute_capability(), ")");
}

absl::Status CudaBackend::ReplayGraph(const gpu::GpuCompiledKernel& kernel,
                                      int* nodes) {
  const auto& compiled = static_cast<const CudaCompiledKernel&>(kernel);
  if (!compiled.graph) {
    std::vector<GraphTask> launches;
    for (const gpu::GpuTask& task : compiled.tasks) {
      if (task.kind != ir::TaskKind::kStructFor || task.cells > 0) {
        launches.push_back(
            {QueuedLaunch(task), task.graph_region, task.graph_section});
      }
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
  *nodes = compiled.graph->num_nodes();
  absl::Status replayed = compiled.graph->Launch();
  if (!replayed.ok()) {
    return MakeError(
        ErrorKind::kRuntime,
        absl::StrCat("kernel '", kernel.name(), "': ", replayed.message()));
  }
  return absl::OkStatus();
}

}  // namespace quadrants::cuda
