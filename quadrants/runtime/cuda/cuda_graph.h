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

// A launch in a graph, with its qd.graph.parallel() section: consecutive
// launches of one region (`region` >= 0) run as one branch per section,
// all waiting for what came before and joined by an empty node after.
struct GraphTask {
  gpu::KernelLaunch launch;
  int region = -1;
  int section = -1;
};

// A step of a graph with device-side loops: a part's launches, in order,
// or a loop (`loop`) repeating `body` while the i32 counter whose address
// is stored at device address `counter_slot` is nonzero after the body.
struct GraphPlanNode {
  std::vector<GraphTask> launches;
  bool loop = false;
  uint64_t counter_slot = 0;
  std::vector<GraphPlanNode> body;
};

// The loaded kernels of codegen/llvm/graph_loop_kernels.h.
struct GraphLoopKernels {
  void* arm = nullptr;
  void* check = nullptr;
};

// An instantiated CUDA graph running a list of launches in order, each
// waiting for the one before. The parameters are fixed when it is built.
class CudaGraph {
 public:
  static absl::StatusOr<std::unique_ptr<CudaGraph>> Build(
      std::shared_ptr<CudaDriver> driver, absl::Span<const GraphTask> tasks);
  // A graph of a plan whose loops are conditional while nodes: each loop
  // node is preceded by an arm kernel (condition 1: do-while) and its body
  // ends with a check kernel setting the condition from the counter.
  static absl::StatusOr<std::unique_ptr<CudaGraph>> BuildPlan(
      std::shared_ptr<CudaDriver> driver, absl::Span<const GraphPlanNode> plan,
      const GraphLoopKernels& kernels);

  CudaGraph(std::shared_ptr<CudaDriver> driver, CUgraph graph, CUgraphExec exec,
            int num_nodes)
      : driver_(std::move(driver)),
        graph_(graph),
        exec_(exec),
        num_nodes_(num_nodes) {}
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Queues one replay on `stream` (the legacy default stream by default).
  absl::Status Launch(CUstream stream = nullptr) const;
  // The nodes of the top-level graph (kernels, joins, loop nodes).
  int num_nodes() const { return num_nodes_; }

 private:
  std::shared_ptr<CudaDriver> driver_;
  CUgraph graph_;
  CUgraphExec exec_;
  int num_nodes_ = 0;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_GRAPH_H_
