#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/gpu/driver_backend.h"

namespace quadrants::cuda {

// The CUDA backend: the shared driver backend (gpu::DriverBackend) over the
// CUDA driver API's hooks and the PTX compiler for the device found at init.
// With LaunchOptions::graph the tasks replay as one CUDA graph.
class CudaBackend : public gpu::DriverBackend {
 public:
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const CompileConfig& config);
  // OK when a driver, a device and the toolkit's libdevice are present;
  // else the Unavailable error saying which is missing.
  static absl::Status Probe();

  CudaBackend(const CompileConfig& config, std::shared_ptr<CudaDriver> driver,
              std::unique_ptr<codegen::GpuCompiler> compiler,
              gpu::GpuCacheTarget cache_target);

 protected:
  bool HasGraphs() const override { return true; }
  // The card and its compute capability, e.g. "NVIDIA H200 (sm_90)".
  std::string device_description() const override;
  absl::Status ReplayGraph(const gpu::GpuCompiledKernel& kernel) override;
  std::shared_ptr<gpu::ModuleKernel> NewKernel(
      const CompiledKernelData& artifact,
      std::shared_ptr<gpu::GpuModule> module) const override;

 private:
  std::shared_ptr<CudaDriver> driver_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
