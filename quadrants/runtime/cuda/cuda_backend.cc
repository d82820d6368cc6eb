#include "quadrants/runtime/cuda/cuda_backend.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/xxhash.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/cuda/cuda_device.h"
#include "quadrants/runtime/cuda/cuda_graph.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_nvptx64.h"

namespace quadrants::cuda {
namespace {

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

namespace {

class CudaCompiledKernel : public gpu::GpuCompiledKernel {
 public:
  CudaCompiledKernel(const ir::Kernel& kernel,
                     std::vector<RuntimeErrorSite> sites,
                     std::shared_ptr<CudaModule> module,
                     std::vector<std::vector<AdStackInfo>> stacks)
      : GpuCompiledKernel(kernel, std::move(sites), std::move(stacks)),
        module(std::move(module)) {}

  std::shared_ptr<CudaModule> module;
  // The tasks as one graph, built at the first graph=True launch. Its
  // parameters (the context and runtime addresses) never change: arguments
  // reach the replay through the context's contents.
  mutable std::unique_ptr<CudaGraph> graph;
};

}  // namespace

CudaBackend::CudaBackend(const CompileConfig& config,
                         std::shared_ptr<CudaDriver> driver,
                         std::unique_ptr<codegen::PtxCompiler> compiler)
    : GpuBackend(config, std::make_shared<CudaDevice>(driver),
                 std::make_shared<ManagedMemoryAllocator>(driver)),
      driver_(std::move(driver)),
      compiler_(std::move(compiler)),
      cache_(offline_cache::OpenOfflineCache(config, &cache_stats_)) {
  set_max_reduce_loader([this](const codegen::MaxReduceShape& shape) {
    return LoadMaxReduce(shape);
  });
}

absl::StatusOr<void*> CudaBackend::LoadMaxReduce(
    const codegen::MaxReduceShape& shape) {
  QD_ASSIGN_OR_RETURN(std::string ptx, compiler_->CompileMaxReduce(shape));
  QD_ASSIGN_OR_RETURN(std::shared_ptr<CudaModule> module,
                      LoadModule(driver_, ptx));
  QD_ASSIGN_OR_RETURN(CUfunction function,
                      module->Function(codegen::kMaxReduceEntry));
  reduce_modules_.push_back(std::move(module));
  return static_cast<void*>(function);
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(std::unique_ptr<CudaDriver> loaded, CudaDriver::Load());
  std::shared_ptr<CudaDriver> driver = std::move(loaded);
  QD_ASSIGN_OR_RETURN(auto compiler,
                      codegen::PtxCompiler::Create(driver->compute_capability(),
                                                   driver->driver_version()));
  auto backend =
      std::make_unique<CudaBackend>(config, driver, std::move(compiler));
  int multiprocessors = 0, per_sm = 0;
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceGetAttribute(&multiprocessors,
                                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                   driver->device()),
      "cuDeviceGetAttribute"));
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceGetAttribute(
          &per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
          driver->device()),
      "cuDeviceGetAttribute"));
  size_t total = 0;
  QD_RETURN_IF_ERROR(driver->Check(
      driver->cuDeviceTotalMem(&total, driver->device()), "cuDeviceTotalMem"));
  QD_RETURN_IF_ERROR(backend->InitDevice(multiprocessors * per_sm,
                                         static_cast<int64_t>(total)));
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
  options.check_out_of_bound = config().checks_bounds();
  options.debug = config().debug;
  options.ad_stack_size_forced = config().ad_stack_size > 0;
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
  set_snodes(&snodes);
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
  QD_RETURN_IF_ERROR(compiled->AddTasks(
      artifact.tasks, [&](const std::string& name) -> absl::StatusOr<void*> {
        QD_ASSIGN_OR_RETURN(auto function, compiled->module->Function(name));
        return static_cast<void*>(function);
      }));
  compiled->set_print_sites(artifact.print_sites);
  return compiled;
}

absl::Status CudaBackend::ReplayGraph(const gpu::GpuCompiledKernel& kernel) {
  const auto& compiled = static_cast<const CudaCompiledKernel&>(kernel);
  if (!compiled.graph) {
    std::vector<gpu::KernelLaunch> launches;
    for (const gpu::GpuTask& task : compiled.tasks) {
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

}  // namespace quadrants::cuda
