#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <optional>
#include <string>

#include "quadrants/codegen/cuda/ptx_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/gpu/gpu_backend.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::cuda {

// The CUDA backend: kernels lowered by the shared LLVM lowering, compiled
// to PTX for the device found at init and loaded through the driver API,
// then launched by the shared GPU launcher (gpu::GpuBackend). Fields and
// ndarrays live in unified memory (the host reads them after a
// synchronize). With LaunchOptions::graph the tasks replay as one CUDA
// graph.
class CudaBackend : public gpu::GpuBackend {
 public:
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const CompileConfig& config);
  // OK when a driver, a device and the toolkit's libdevice are present;
  // else the Unavailable error saying which is missing.
  static absl::Status Probe();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  CudaBackend(const CompileConfig& config, std::shared_ptr<CudaDriver> driver,
              std::unique_ptr<codegen::PtxCompiler> compiler);

 protected:
  bool HasGraphs() const override { return true; }
  absl::Status ReplayGraph(const gpu::GpuCompiledKernel& kernel) override;

 private:
  codegen::LoweringOptions LoweringOptions() const;
  absl::StatusOr<offline_cache::KernelArtifact> Generate(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes);
  // Compiles and loads the adstack sizing reduction for `shape`.
  absl::StatusOr<void*> LoadMaxReduce(const codegen::MaxReduceShape& shape);

  std::shared_ptr<CudaDriver> driver_;
  std::unique_ptr<codegen::PtxCompiler> compiler_;
  // The loaded reduction modules (type-erased: the module class is private
  // to the .cc), alive while their functions may run.
  std::vector<std::shared_ptr<const void>> reduce_modules_;

  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
