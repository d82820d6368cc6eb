#include "quadrants/runtime/cuda/cuda_graph.h"

#include <cstring>
#include <map>
#include <utility>

#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/gpu/driver.h"

namespace quadrants::cuda {

namespace {

// Adds nodes to graphs, each depending on the node before it in its graph.
class NodeAdder {
 public:
  NodeAdder(CudaDriver& driver, const GraphLoopKernels& kernels)
      : driver_(driver), kernels_(kernels) {}

  absl::Status Kernel(CUgraph graph, const gpu::KernelLaunch& launch,
                      CUgraphNode* last) {
    std::vector<void*> pointers = gpu::Driver::ParamPointers(launch);
    CUDA_KERNEL_NODE_PARAMS params = {};
    params.func = static_cast<CUfunction>(launch.function);
    params.gridDimX = launch.grid;
    params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = launch.block;
    params.blockDimY = params.blockDimZ = 1;
    params.sharedMemBytes = launch.shared_bytes;
    params.kernelParams = pointers.data();
    CUgraphNode node = nullptr;
    QD_RETURN_IF_ERROR(driver_.Check(
        driver_.cuGraphAddKernelNode(&node, graph, *last ? last : nullptr,
                                     *last ? 1 : 0, &params),
        "cuGraphAddKernelNode"));
    Count(graph);
    *last = node;
    return absl::OkStatus();
  }

  // Tasks in order, each region's sections as branches and a join.
  absl::Status Tasks(CUgraph graph, absl::Span<const GraphTask> tasks,
                     CUgraphNode* last) {
    size_t i = 0;
    while (i < tasks.size()) {
      const int region = tasks[i].region;
      if (region < 0) {
        QD_RETURN_IF_ERROR(Kernel(graph, tasks[i++].launch, last));
        continue;
      }
      const CUgraphNode start = *last;
      std::map<int, CUgraphNode> ends;  // each section's last node
      for (; i < tasks.size() && tasks[i].region == region; ++i) {
        CUgraphNode& end = ends.try_emplace(tasks[i].section, start).first->second;
        QD_RETURN_IF_ERROR(Kernel(graph, tasks[i].launch, &end));
      }
      if (ends.size() == 1) {  // one section: a plain chain
        *last = ends.begin()->second;
        continue;
      }
      std::vector<CUgraphNode> branches;
      for (const auto& [section, end] : ends) {
        if (end != nullptr)
          branches.push_back(end);
      }
      CUgraphNode join = nullptr;
      QD_RETURN_IF_ERROR(driver_.Check(
          driver_.cuGraphAddEmptyNode(&join, graph, branches.data(),
                                      branches.size()),
          "cuGraphAddEmptyNode"));
      Count(graph);
      *last = join;
    }
    return absl::OkStatus();
  }

  absl::Status Steps(CUgraph graph, absl::Span<const GraphPlanNode> steps,
                     CUgraphNode* last) {
    for (const GraphPlanNode& step : steps) {
      if (step.loop)
        QD_RETURN_IF_ERROR(Loop(graph, step, last));
      else
        QD_RETURN_IF_ERROR(Tasks(graph, step.launches, last));
    }
    return absl::OkStatus();
  }

  // Nodes added to the top-level graph `top`.
  void set_top(CUgraph top) { top_ = top; }
  int num_nodes() const { return num_nodes_; }

 private:
  void Count(CUgraph graph) { num_nodes_ += graph == top_; }

  absl::Status Loop(CUgraph graph, const GraphPlanNode& loop,
                    CUgraphNode* last) {
    CUgraphConditionalHandle handle = 0;
    QD_RETURN_IF_ERROR(driver_.Check(
        driver_.cuGraphConditionalHandleCreate(&handle, graph,
                                               driver_.context(), 0, 0),
        "cuGraphConditionalHandleCreate"));
    // Armed on every arrival at the loop, so a nested loop runs its body
    // again in each iteration of the loop around it.
    QD_RETURN_IF_ERROR(Kernel(graph, {kernels_.arm, 1, 1, {handle}}, last));
    CUgraphNodeParams params;
    std::memset(&params, 0, sizeof(params));  // reserved fields must be 0
    params.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    params.conditional.handle = handle;
    params.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    params.conditional.size = 1;
    params.conditional.ctx = driver_.context();
    CUgraphNode node = nullptr;
    QD_RETURN_IF_ERROR(driver_.Check(
        driver_.cuGraphAddNode(&node, graph, last, nullptr, 1, &params),
        "cuGraphAddNode (conditional while)"));
    Count(graph);
    // The body graph is the driver's, owned by the node.
    CUgraph body = params.conditional.phGraph_out[0];
    CUgraphNode body_last = nullptr;
    QD_RETURN_IF_ERROR(Steps(body, loop.body, &body_last));
    QD_RETURN_IF_ERROR(Kernel(
        body, {kernels_.check, 1, 1, {handle, loop.counter_slot}}, &body_last));
    *last = node;
    return absl::OkStatus();
  }

  CudaDriver& driver_;
  const GraphLoopKernels& kernels_;
  CUgraph top_ = nullptr;
  int num_nodes_ = 0;
};

absl::StatusOr<std::unique_ptr<CudaGraph>> Instantiate(
    std::shared_ptr<CudaDriver> driver, CUgraph graph,
    const absl::Status& built, int num_nodes) {
  CUgraphExec exec = nullptr;
  absl::Status status = built;
  if (status.ok()) {
    status = driver->Check(driver->cuGraphInstantiate(&exec, graph, 0),
                           "cuGraphInstantiate");
  }
  if (!status.ok()) {
    driver->cuGraphDestroy(graph);
    return status;
  }
  return std::make_unique<CudaGraph>(std::move(driver), graph, exec,
                                     num_nodes);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaGraph>> CudaGraph::Build(
    std::shared_ptr<CudaDriver> driver, absl::Span<const GraphTask> tasks) {
  QD_RETURN_IF_ERROR(driver->MakeCurrent());
  CUgraph graph = nullptr;
  QD_RETURN_IF_ERROR(
      driver->Check(driver->cuGraphCreate(&graph, 0), "cuGraphCreate"));
  GraphLoopKernels none;
  NodeAdder adder(*driver, none);
  adder.set_top(graph);
  CUgraphNode last = nullptr;
  absl::Status built = adder.Tasks(graph, tasks, &last);
  return Instantiate(std::move(driver), graph, built, adder.num_nodes());
}

absl::StatusOr<std::unique_ptr<CudaGraph>> CudaGraph::BuildPlan(
    std::shared_ptr<CudaDriver> driver, absl::Span<const GraphPlanNode> plan,
    const GraphLoopKernels& kernels) {
  QD_RETURN_IF_ERROR(driver->MakeCurrent());
  CUgraph graph = nullptr;
  QD_RETURN_IF_ERROR(
      driver->Check(driver->cuGraphCreate(&graph, 0), "cuGraphCreate"));
  NodeAdder adder(*driver, kernels);
  adder.set_top(graph);
  CUgraphNode last = nullptr;
  absl::Status built = adder.Steps(graph, plan, &last);
  return Instantiate(std::move(driver), graph, built, adder.num_nodes());
}

CudaGraph::~CudaGraph() {
  driver_->cuGraphExecDestroy(exec_);
  driver_->cuGraphDestroy(graph_);
}

absl::Status CudaGraph::Launch(CUstream stream) const {
  QD_RETURN_IF_ERROR(driver_->MakeCurrent());
  return driver_->Check(driver_->cuGraphLaunch(exec_, stream),
                        "cuGraphLaunch");
}

}  // namespace quadrants::cuda
