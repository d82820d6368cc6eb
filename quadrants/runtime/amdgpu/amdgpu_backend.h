#ifndef QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_
#define QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_

#include <memory>
#include <optional>
#include <vector>

#include "quadrants/codegen/amdgpu/hsaco_compiler.h"
#include "quadrants/runtime/amdgpu/hip_driver.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/gpu/gpu_backend.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::amdgpu {

// The AMDGPU backend: kernels lowered by the shared LLVM lowering, compiled
// to HSACO code objects for the device's gfx target, loaded through HIP
// (dlopen'd libamdhip64) and launched by the shared GPU launcher
// (gpu::GpuBackend), which keeps the launch context, the runtime record and
// the adstack heap and metadata in device memory. Fields and ndarrays live
// in managed memory. There are no graphs: graph=True launches plainly.
class AmdgpuBackend : public gpu::GpuBackend {
 public:
  static absl::StatusOr<std::unique_ptr<AmdgpuBackend>> Create(
      const CompileConfig& config);
  // OK when HIP, a device and the code generator's tools are present; else
  // the Unavailable error "AMDGPU not available: ..." saying which is
  // missing.
  static absl::Status Probe();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  AmdgpuBackend(const CompileConfig& config, std::shared_ptr<HipDriver> driver,
                std::unique_ptr<codegen::HsacoCompiler> compiler);

 private:
  // Compiles and loads the adstack sizing reduction for `shape`.
  absl::StatusOr<void*> LoadMaxReduce(const codegen::MaxReduceShape& shape);

  std::shared_ptr<HipDriver> driver_;
  std::unique_ptr<codegen::HsacoCompiler> compiler_;
  // The loaded reduction modules (type-erased: the module class is private
  // to the .cc), alive while their functions may run.
  std::vector<std::shared_ptr<const void>> reduce_modules_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

// The amdgpu arch's backend: codegen-only when QD_AMDGPU_CODEGEN_ONLY names
// targets (see codegen_only.h), else AmdgpuBackend.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const CompileConfig& config);
absl::Status ProbeBackend();

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_AMDGPU_BACKEND_H_
