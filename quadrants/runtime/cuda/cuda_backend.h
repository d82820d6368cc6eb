#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "quadrants/codegen/cuda/ptx_compiler.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/cuda/cuda_driver.h"
#include "quadrants/runtime/cuda/cuda_graph.h"
#include "quadrants/runtime/cuda/device_buffer.h"
#include "quadrants/runtime/llvm/host/launch_state.h"
#include "quadrants/runtime/llvm/runtime_module/runtime_abi.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::cuda {

// The CUDA backend: kernels lowered by the shared LLVM lowering, compiled
// to PTX for the device found at init and loaded through the driver API.
// Fields and ndarrays live in unified memory (the host reads them after a
// synchronize); the runtime record, the launch context and the adstack heap
// and metadata live in device memory. A launch queues its tasks in order
// (waiting before a task whose adstacks are sized on the host) and
// synchronizes at its end, so errors and prints are known when it returns.
// With LaunchOptions::graph the tasks replay as one CUDA graph.
class CudaBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      const CompileConfig& config);
  // OK when a driver, a device and the toolkit's libdevice are present;
  // else the Unavailable error saying which is missing.
  static absl::Status Probe();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  void SetRoot(char* root) override { runtime_.root = root; }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override;
  absl::Status Synchronize() override;
  absl::optional<RuntimeErrorRecord> TakeError() override;
  PrintBatch TakePrints() override;
  std::shared_ptr<SharedMemoryAllocator> memory() override { return memory_; }
  bool stages_host_arrays() const override { return true; }
  // Threads the device keeps resident: the most an adstack task runs.
  int num_threads() const override { return resident_threads_; }
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  CudaBackend(const CompileConfig& config, std::shared_ptr<CudaDriver> driver,
              std::unique_ptr<codegen::PtxCompiler> compiler);

  // One task of a compiled kernel, as launched.
  struct TaskLaunch;

 private:
  codegen::LoweringOptions LoweringOptions() const;
  absl::StatusOr<offline_cache::KernelArtifact> Generate(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes);
  // Grid and block for `iterations` iterations of a task.
  void Shape(int64_t iterations, bool has_stacks, unsigned* grid,
             unsigned* block) const;
  // Sizes the task's stacks for this launch (into adstack_layout_) and
  // lowers `grid` so the heap stays within the budget.
  absl::Status SizeAdStacks(const CompiledKernel& kernel, int task,
                            const QdLaunchContext& ctx,
                            absl::Span<const ResolvedArgument> args,
                            absl::Span<const uint64_t> field_generations,
                            unsigned block, unsigned* grid);
  // Grows the heap for `threads` and publishes the layout.
  absl::Status PublishAdStacks(const CompiledKernel& kernel, int task,
                               int64_t threads);
  // The launch of a task without adstacks that needs nothing from the
  // host at launch time, so it can be queued or put in a graph.
  KernelLaunch QueuedLaunch(const TaskLaunch& task) const;
  // Waits for queued tasks (when `*queued`) and reads back the runtime
  // record they may have written.
  absl::Status FinishQueued(const CompiledKernel& kernel, bool* queued);
  absl::Status ReplayGraph(const CompiledKernel& kernel);
  // Sizes, publishes and runs a task with adstacks, synchronously.
  absl::Status RunTask(const TaskLaunch& task, const CompiledKernel& kernel,
                       int index, const QdLaunchContext& ctx,
                       absl::Span<const ResolvedArgument> args,
                       absl::Span<const uint64_t> field_generations);
  // Copies the host's runtime record to the device when it differs from
  // what the device holds, and back.
  absl::Status UploadRuntime();
  absl::Status DownloadRuntime();

  CompileConfig config_;
  std::shared_ptr<CudaDriver> driver_;
  std::unique_ptr<codegen::PtxCompiler> compiler_;
  std::shared_ptr<SharedMemoryAllocator> memory_;
  const ir::SNodeTree* snodes_ = nullptr;
  int multiprocessors_ = 1;
  int resident_threads_ = 1;
  int64_t heap_budget_ = 0;  // bytes the adstack heap may take

  QdRuntime runtime_{};  // the host's copy; the device's is device_runtime_
  // What device_runtime_ holds, unless a kernel that may write it ran.
  std::optional<QdRuntime> device_runtime_copy_;
  DeviceBuffer device_runtime_;
  DeviceBuffer device_context_;
  DeviceBuffer device_bounds_;
  llvm_runtime::PrintBuffer prints_{memory_};
  std::optional<RuntimeErrorRecord> pending_;
  uint64_t launches_ = 0;

  // One heap per runtime, grown by amortized doubling, never shrunk.
  DeviceBuffer adstack_heap_;
  // Per-stack offsets, then capacities; `published_metadata_` is what the
  // device holds, so an unchanged layout is not copied again.
  DeviceBuffer adstack_metadata_;
  std::vector<int64_t> published_metadata_;
  adstack::AdStackLayout adstack_layout_;  // of the task being launched
  AdStackStats adstack_stats_;

  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_BACKEND_H_
