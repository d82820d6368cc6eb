#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_GRAPH_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_GRAPH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/gpu/device.h"

namespace quadrants::cuda {

// An instantiated CUDA graph running a list of launches in order, each
// waiting for the one before. The parameters are fixed when it is built.
class CudaGraph {
 public:
  static absl::StatusOr<std::unique_ptr<CudaGraph>> Build(
      std::shared_ptr<CudaDriver> driver,
      absl::Span<const gpu::KernelLaunch> launches);

  CudaGraph(std::shared_ptr<CudaDriver> driver, CUgraph graph, CUgraphExec exec)
      : driver_(std::move(driver)), graph_(graph), exec_(exec) {}
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Queues one replay on the default stream.
  absl::Status Launch() const;

 private:
  std::shared_ptr<CudaDriver> driver_;
  CUgraph graph_;
  CUgraphExec exec_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_GRAPH_H_
