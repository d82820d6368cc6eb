#include "quadrants/runtime/amdgpu/amdgpu_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/amdgpu/amdgpu_codegen.h"
#include "quadrants/runtime/amdgpu/codegen_only.h"
#include "quadrants/runtime/amdgpu/hip_device.h"

namespace quadrants::amdgpu {
namespace {

// A loaded code object, unloaded when the last kernel using it goes away.
class HipModule {
 public:
  HipModule(std::shared_ptr<HipDriver> driver, hipModule_t module)
      : driver_(std::move(driver)), module_(module) {}
  ~HipModule() { (void)driver_->hipModuleUnload(module_); }
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;

  absl::StatusOr<hipFunction_t> Function(const std::string& name) const {
    hipFunction_t fn = nullptr;
    QD_RETURN_IF_ERROR(driver_->Check(
        driver_->hipModuleGetFunction(&fn, module_, name.c_str()),
        "hipModuleGetFunction"));
    return fn;
  }

 private:
  std::shared_ptr<HipDriver> driver_;
  hipModule_t module_;
};

absl::StatusOr<std::shared_ptr<HipModule>> LoadModule(
    const std::shared_ptr<HipDriver>& driver, const std::string& hsaco) {
  hipModule_t module = nullptr;
  QD_RETURN_IF_ERROR(driver->Check(
      driver->hipModuleLoadData(&module, hsaco.data()), "hipModuleLoadData"));
  return std::make_shared<HipModule>(driver, module);
}

class AmdgpuCompiledKernel : public gpu::GpuCompiledKernel {
 public:
  AmdgpuCompiledKernel(const ir::Kernel& kernel,
                       const offline_cache::KernelArtifact& artifact,
                       std::shared_ptr<HipModule> module)
      : GpuCompiledKernel(kernel, offline_cache::ErrorSites(artifact),
                          offline_cache::TaskAdStacks(artifact)),
        module(std::move(module)) {}

  std::shared_ptr<HipModule> module;
};

}  // namespace

AmdgpuBackend::AmdgpuBackend(const CompileConfig& config,
                             std::shared_ptr<HipDriver> driver,
                             std::unique_ptr<codegen::HsacoCompiler> compiler)
    : GpuBackend(config, std::make_shared<HipDevice>(driver),
                 std::make_shared<HipManagedMemoryAllocator>(driver)),
      driver_(std::move(driver)),
      compiler_(std::move(compiler)),
      cache_(offline_cache::OpenOfflineCache(config, &cache_stats_)) {
  set_max_reduce_loader([this](const codegen::MaxReduceShape& shape) {
    return LoadMaxReduce(shape);
  });
}

absl::StatusOr<void*> AmdgpuBackend::LoadMaxReduce(
    const codegen::MaxReduceShape& shape) {
  QD_ASSIGN_OR_RETURN(std::string hsaco, compiler_->CompileMaxReduce(shape));
  QD_ASSIGN_OR_RETURN(std::shared_ptr<HipModule> module,
                      LoadModule(driver_, hsaco));
  QD_ASSIGN_OR_RETURN(hipFunction_t function,
                      module->Function(codegen::kMaxReduceEntry));
  reduce_modules_.push_back(std::move(module));
  return static_cast<void*>(function);
}

absl::StatusOr<std::unique_ptr<AmdgpuBackend>> AmdgpuBackend::Create(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(std::unique_ptr<HipDriver> loaded, HipDriver::Load());
  std::shared_ptr<HipDriver> driver = std::move(loaded);
  QD_ASSIGN_OR_RETURN(auto compiler,
                      codegen::HsacoCompiler::Create(driver->gfx_target()));
  auto backend =
      std::make_unique<AmdgpuBackend>(config, driver, std::move(compiler));
  QD_RETURN_IF_ERROR(
      backend->InitDevice(driver->resident_threads(), driver->total_memory()));
  return backend;
}

absl::Status AmdgpuBackend::Probe() {
  QD_ASSIGN_OR_RETURN(std::unique_ptr<HipDriver> driver, HipDriver::Load());
  return codegen::HsacoCompiler::Create(driver->gfx_target()).status();
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> AmdgpuBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  set_snodes(&snodes);
  const std::string key =
      cache_ ? HsacoCacheKey(offloaded, snodes, config(), *compiler_) : "";
  QD_ASSIGN_OR_RETURN(auto generated,
                      offline_cache::LoadOrGenerate<std::shared_ptr<HipModule>>(
                          cache_ ? &*cache_ : nullptr, key, &cache_stats_,
                          [&] {
                            return GenerateHsaco(offloaded, snodes, config(),
                                                 *compiler_);
                          },
                          [&](const offline_cache::KernelArtifact& artifact) {
                            return LoadModule(driver_, artifact.object);
                          }));
  const offline_cache::KernelArtifact& artifact = generated.first;
  auto compiled = std::make_shared<AmdgpuCompiledKernel>(offloaded, artifact,
                                                         generated.second);
  QD_RETURN_IF_ERROR(compiled->AddTasks(
      artifact.tasks, [&](const std::string& name) -> absl::StatusOr<void*> {
        QD_ASSIGN_OR_RETURN(auto function, compiled->module->Function(name));
        return static_cast<void*>(function);
      }));
  compiled->set_print_sites(artifact.print_sites);
  return compiled;
}

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const CompileConfig& config) {
  const std::vector<std::string> targets = CodegenOnlyTargets();
  if (!targets.empty())
    return CreateCodegenOnlyBackend(config, targets);
  QD_ASSIGN_OR_RETURN(auto backend, AmdgpuBackend::Create(config));
  return std::unique_ptr<Backend>(std::move(backend));
}

absl::Status ProbeBackend() {
  const std::vector<std::string> targets = CodegenOnlyTargets();
  if (!targets.empty())
    return CodegenOnlyCompiler::Create(targets).status();
  return AmdgpuBackend::Probe();
}

}  // namespace quadrants::amdgpu
