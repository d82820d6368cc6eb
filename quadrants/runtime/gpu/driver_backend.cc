#include "quadrants/runtime/gpu/driver_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/llvm/compiler_identity.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/gpu/device_memory.h"

namespace quadrants::gpu {

absl::StatusOr<std::shared_ptr<GpuModule>> GpuModule::Load(
    std::shared_ptr<Driver> driver, const std::string& binary) {
  QD_ASSIGN_OR_RETURN(void* handle, driver->LoadModule(binary));
  return std::make_shared<GpuModule>(std::move(driver), handle);
}

DriverBackend::DriverBackend(const CompileConfig& config,
                             std::shared_ptr<Driver> driver,
                             std::unique_ptr<codegen::GpuCompiler> compiler,
                             GpuCacheTarget cache_target)
    : GpuBackend(config, driver,
                 std::make_shared<DeviceArrayMemory>(driver)),
      driver_(std::move(driver)),
      compiler_(std::move(compiler)),
      cache_target_(std::move(cache_target)),
      cache_(offline_cache::OpenOfflineCache(
          config, codegen::LlvmCompilerIdentity(), &cache_stats_)) {
  set_max_reduce_loader([this](const codegen::MaxReduceShape& shape) {
    return LoadMaxReduce(shape);
  });
}

absl::Status DriverBackend::Init() {
  QD_ASSIGN_OR_RETURN(DeviceLimits limits, driver_->Limits());
  simt_limits_.subgroup_size = driver_->SubgroupSize();
  QD_ASSIGN_OR_RETURN(simt_limits_.max_shared_bytes, driver_->MaxSharedBytes());
  return InitDevice(limits.resident_threads, limits.total_memory);
}

absl::StatusOr<void*> DriverBackend::LoadMaxReduce(
    const codegen::MaxReduceShape& shape) {
  QD_ASSIGN_OR_RETURN(std::string binary, compiler_->CompileMaxReduce(shape));
  QD_ASSIGN_OR_RETURN(std::shared_ptr<GpuModule> module,
                      GpuModule::Load(driver_, binary));
  QD_ASSIGN_OR_RETURN(void* function,
                      module->Function(codegen::kMaxReduceEntry));
  reduce_modules_.push_back(std::move(module));
  return function;
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> DriverBackend::Compile(
    const ir::Kernel& offloaded, const ir::SNodeTree& snodes) {
  set_snodes(&snodes);
  const std::string key = cache_
                              ? GpuCacheKey(*cache_, offloaded, snodes,
                                            config(), *compiler_, cache_target_)
                              : "";
  QD_ASSIGN_OR_RETURN(auto generated,
                      offline_cache::LoadOrGenerate<std::shared_ptr<GpuModule>>(
                          cache_ ? &*cache_ : nullptr, key, &cache_stats_,
                          [&] {
                            return GenerateGpuKernel(offloaded, snodes,
                                                     config(), *compiler_);
                          },
                          [&](const CompiledKernelData& artifact) {
                            return GpuModule::Load(driver_, artifact.binary);
                          }));
  return Instantiate(key, generated.first, std::move(generated.second));
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> DriverBackend::LoadCached(
    const std::string& key, const ir::SNodeTree& snodes) {
  auto hit = offline_cache::LoadExisting<std::shared_ptr<GpuModule>>(
      cache_ ? &*cache_ : nullptr, key, &cache_stats_,
      [&](const CompiledKernelData& artifact) {
        return GpuModule::Load(driver_, artifact.binary);
      });
  if (!hit)
    return std::shared_ptr<CompiledKernel>();
  set_snodes(&snodes);
  return Instantiate(key, hit->first, std::move(hit->second));
}

absl::StatusOr<std::shared_ptr<CompiledKernel>> DriverBackend::Instantiate(
    const std::string& key, const CompiledKernelData& artifact,
    std::shared_ptr<GpuModule> module) {
  std::shared_ptr<ModuleKernel> compiled = NewKernel(artifact, std::move(module));
  QD_RETURN_IF_ERROR(
      compiled->AddTasks(artifact.tasks, [&](const std::string& name) {
        return compiled->module->Function(name);
      }));
  for (const GpuTask& task : compiled->tasks) {
    if (task.shared_bytes == 0)
      continue;
    for (void* function : {task.run, task.device_range_run}) {
      if (function == nullptr)
        continue;
      if (absl::Status s = driver_->AllowSharedMemory(function, task.shared_bytes);
          !s.ok()) {
        return MakeError(ErrorKind::kCompilation, task.loc,
                         absl::StrCat("kernel '", artifact.facts.kernel_name,
                                      "': ", s.message()));
      }
    }
  }
  compiled->set_cache_key(key);
  return compiled;
}

std::shared_ptr<ModuleKernel> DriverBackend::NewKernel(
    const CompiledKernelData& artifact,
    std::shared_ptr<GpuModule> module) const {
  return std::make_shared<ModuleKernel>(artifact, std::move(module));
}

}  // namespace quadrants::gpu
