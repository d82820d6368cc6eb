#include "quadrants/runtime/cuda/cuda_graph.h"

#include <utility>

#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/gpu/driver.h"

namespace quadrants::cuda {

absl::StatusOr<std::unique_ptr<CudaGraph>> CudaGraph::Build(
    std::shared_ptr<CudaDriver> driver,
    absl::Span<const gpu::KernelLaunch> launches) {
  QD_RETURN_IF_ERROR(driver->MakeCurrent());
  CUgraph graph = nullptr;
  QD_RETURN_IF_ERROR(
      driver->Check(driver->cuGraphCreate(&graph, 0), "cuGraphCreate"));
  // Owns the graph until it is instantiated.
  auto destroy = [&] { driver->cuGraphDestroy(graph); };
  CUgraphNode previous = nullptr;
  for (const gpu::KernelLaunch& launch : launches) {
    std::vector<void*> pointers = gpu::Driver::ParamPointers(launch);
    CUDA_KERNEL_NODE_PARAMS params = {};
    params.func = static_cast<CUfunction>(launch.function);
    params.gridDimX = launch.grid;
    params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = launch.block;
    params.blockDimY = params.blockDimZ = 1;
    params.kernelParams = pointers.data();
    CUgraphNode node = nullptr;
    absl::Status added =
        driver->Check(driver->cuGraphAddKernelNode(
                          &node, graph, previous ? &previous : nullptr,
                          previous ? 1 : 0, &params),
                      "cuGraphAddKernelNode");
    if (!added.ok()) {
      destroy();
      return added;
    }
    previous = node;
  }
  CUgraphExec exec = nullptr;
  absl::Status instantiated = driver->Check(
      driver->cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  if (!instantiated.ok()) {
    destroy();
    return instantiated;
  }
  return std::make_unique<CudaGraph>(std::move(driver), graph, exec);
}

CudaGraph::~CudaGraph() {
  driver_->cuGraphExecDestroy(exec_);
  driver_->cuGraphDestroy(graph_);
}

absl::Status CudaGraph::Launch() const {
  QD_RETURN_IF_ERROR(driver_->MakeCurrent());
  return driver_->Check(driver_->cuGraphLaunch(exec_, nullptr),
                        "cuGraphLaunch");
}

}  // namespace quadrants::cuda
