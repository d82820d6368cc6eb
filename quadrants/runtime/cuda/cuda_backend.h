#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "quadrants/codegen/llvm/gpu_compiler.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/cuda/cuda_graph.h"
#include "quadrants/runtime/gpu/device_buffer.h"
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

  // The plan as one graph whose loops are conditional while nodes, built
  // at its first launch; false where the driver has no conditional nodes
  // or a part cannot be in a graph.
  absl::StatusOr<bool> LaunchPlan(absl::Span<const PlanStep> plan,
                                  absl::Span<const uint64_t> field_generations,
                                  uint64_t stream,
                                  std::vector<uint64_t>* launch_ids,
                                  int* graph_nodes) override;
  StreamOps* streams() override { return streams_.get(); }

 protected:
  bool HasGraphs() const override { return true; }
  // The card and its compute capability, e.g. "NVIDIA H200 (sm_90)".
  std::string device_description() const override;
  absl::Status ReplayGraph(const gpu::GpuCompiledKernel& kernel,
                           int* nodes) override;
  std::shared_ptr<gpu::ModuleKernel> NewKernel(
      const CompiledKernelData& artifact,
      std::shared_ptr<gpu::GpuModule> module) const override;

 private:
  // A plan's graph: each part reads its own launch context and each loop
  // its counter's address from a slot, uploaded before every replay.
  struct PlanGraph {
    std::vector<std::shared_ptr<const CompiledKernel>> parts;  // kept alive
    std::vector<gpu::DeviceBuffer> contexts;
    std::vector<gpu::DeviceBuffer> slots;
    std::unique_ptr<CudaGraph> graph;
    // On a stream other than the default: the contexts' host copies,
    // copied on that stream.
    std::vector<QdLaunchContext> staged;
  };
  absl::StatusOr<std::unique_ptr<PlanGraph>> BuildPlanGraph(
      absl::Span<const PlanStep> plan);
  absl::StatusOr<GraphLoopKernels> LoopKernels();

  std::shared_ptr<CudaDriver> driver_;
  // By the plan's shape (its parts' addresses and loops).
  std::map<std::string, std::unique_ptr<PlanGraph>> plan_graphs_;
  std::shared_ptr<gpu::GpuModule> loop_module_;
  GraphLoopKernels loop_kernels_;
  std::unique_ptr<StreamOps> streams_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
