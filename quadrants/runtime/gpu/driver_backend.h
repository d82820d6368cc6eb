#ifndef QUADRANTS_RUNTIME_GPU_DRIVER_BACKEND_H_
#define QUADRANTS_RUNTIME_GPU_DRIVER_BACKEND_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/codegen/llvm/max_reduce_kernel.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/gpu/driver.h"
#include "quadrants/runtime/gpu/gpu_backend.h"
#include "quadrants/runtime/gpu/gpu_codegen.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::gpu {

// A loaded module, unloaded when the last kernel using it goes away.
class GpuModule {
 public:
  static absl::StatusOr<std::shared_ptr<GpuModule>> Load(
      std::shared_ptr<Driver> driver, const std::string& binary);

  GpuModule(std::shared_ptr<Driver> driver, void* handle)
      : driver_(std::move(driver)), handle_(handle) {}
  ~GpuModule() { driver_->UnloadModule(handle_); }
  GpuModule(const GpuModule&) = delete;
  GpuModule& operator=(const GpuModule&) = delete;

  absl::StatusOr<void*> Function(const std::string& name) const {
    return driver_->Function(handle_, name);
  }

 private:
  std::shared_ptr<Driver> driver_;
  void* handle_;
};

// A compiled kernel whose entries live in a loaded module.
class ModuleKernel : public GpuCompiledKernel {
 public:
  ModuleKernel(const CompiledKernelData& artifact,
               std::shared_ptr<GpuModule> module)
      : GpuCompiledKernel(artifact),
        module(std::move(module)) {}

  std::shared_ptr<GpuModule> module;
};

// A GPU backend over a vendor driver's hooks (gpu::Driver) and its target's
// compiler (codegen::GpuCompiler): kernels lowered by the shared LLVM
// lowering, compiled through the offline cache, loaded as modules and
// launched by GpuBackend. Fields and ndarrays live in device memory; the
// adstack sizing reductions run as device kernels.
class DriverBackend : public GpuBackend {
 public:
  // `cache_target` keys the binaries `compiler` makes.
  DriverBackend(const CompileConfig& config, std::shared_ptr<Driver> driver,
                std::unique_ptr<codegen::GpuCompiler> compiler,
                GpuCacheTarget cache_target);

  // Sizes the launcher for the device; once, before the first launch.
  absl::Status Init();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key, const ir::SNodeTree& snodes) override;
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }
  SimtLimits simt_limits() const override { return simt_limits_; }

 protected:
  // The compiled kernel over `module`; a backend keeping more per kernel
  // (CUDA's graph) returns its own subclass.
  virtual std::shared_ptr<ModuleKernel> NewKernel(
      const CompiledKernelData& artifact,
      std::shared_ptr<GpuModule> module) const;
  codegen::GpuCompiler& compiler() const { return *compiler_; }
  absl::StatusOr<std::shared_ptr<GpuModule>> LoadModule(
      const std::string& binary) const {
    return GpuModule::Load(driver_, binary);
  }

 private:
  // The launchable kernel of a loaded artifact, known by `key`.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Instantiate(
      const std::string& key, const CompiledKernelData& artifact,
      std::shared_ptr<GpuModule> module);
  // Compiles and loads the adstack sizing reduction for `shape`.
  absl::StatusOr<void*> LoadMaxReduce(const codegen::MaxReduceShape& shape);

  std::shared_ptr<Driver> driver_;
  std::unique_ptr<codegen::GpuCompiler> compiler_;
  SimtLimits simt_limits_;
  GpuCacheTarget cache_target_;
  // The loaded reduction modules, alive while their functions may run.
  std::vector<std::shared_ptr<GpuModule>> reduce_modules_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DRIVER_BACKEND_H_
