#ifndef QUADRANTS_RUNTIME_CPU_CPU_BACKEND_H_
#define QUADRANTS_RUNTIME_CPU_CPU_BACKEND_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "quadrants/codegen/cpu/cpu_jit.h"
#include "quadrants/codegen/llvm/kernel_lowering.h"
#include "quadrants/runtime/adstack/launch_sizer.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "quadrants/runtime/host/thread_pool.h"
#include "quadrants/runtime/llvm/host/launch_state.h"
#include "quadrants/device_runtime/runtime_abi.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::cpu {

// The CPU backend: LLVM x86-64 code through ORC, parallel tasks on a
// thread pool, launches synchronous with the host.
class CpuBackend : public Backend {
 public:
  absl::Status UpdateConfig(const CompileConfig& config) override {
    config_ = config;
    return absl::OkStatus();
  }
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(
      const CompileConfig& config);

  absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key, const ir::SNodeTree& snodes) override;
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  void SetRoot(char* root) override { runtime_.root = root; }
  // The host CPU and the features the JIT compiles for.
  std::string device_description() const override {
    return jit_->TargetDescription();
  }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::optional<RuntimeErrorRecord> TakeError() override;
  PrintBatch TakePrints() override;
  std::shared_ptr<ArrayMemory> memory() override { return memory_; }
  int num_threads() const override { return pool_.num_threads(); }
  // Tasks in SIMD lanes do (without checks or debug mode, which keep tasks
  // scalar).
  bool fuses_sin_cos() const override;
  // The host sizes a launch's adstacks before running any task, so it can
  // pick the kernel's checkpointed variant in time.
  bool checkpoints_lazily() const override { return true; }
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  // Public for std::make_unique only; use Create().
  CpuBackend(const CompileConfig& config, std::unique_ptr<codegen::CpuJit> jit);

 private:
  // Sizes the task's stacks for this launch (static, forced, evaluated or
  // cached) unless `sized` holds them already, sizes its heap (a slice per
  // SIMD lane of each of StackSlots threads, fewer threads where the budget
  // says so), grows it if needed and publishes the metadata generated code
  // reads.
  absl::Status PublishAdStacks(const CompiledKernel& kernel, int task,
                               const QdLaunchContext& ctx,
                               absl::Span<const ResolvedArgument> args,
                               absl::Span<const uint64_t> field_generations,
                               const adstack::AdStackLayout* sized);
  // For a kernel with a checkpointed variant: each stack task's sized
  // layout, and whether one keeps more bytes at once than the budget (the
  // variant then runs instead). A gradient kernel writes adjoints only, so
  // its trip counts, and these sizes, hold for all of its tasks.
  absl::StatusOr<bool> SizeBeforeRunning(
      const CompiledKernel& kernel, const QdLaunchContext& ctx,
      absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      std::vector<absl::optional<adstack::AdStackLayout>>* sized);
  // Threads (SIMD lanes counted) whose slices `task` keeps at once.
  int64_t StackSlots(const CompiledKernel& kernel, int task) const;
  void CheckAdStackOverflow(int task);
  codegen::LoweringOptions LoweringOptions() const;
  // Lowers, links and optimizes `offloaded` to an object plus task metadata
  // (objects, one per group of CompileGroups, when there are several).
  absl::StatusOr<CompiledKernelData> Generate(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes);
  // The entry points of `lowered`'s tasks in groups compiled on threads of
  // their own: up to num_compile_threads, the hardware threads and the
  // tasks, and one per kInstructionsPerCompileThread instructions of IR (a
  // small kernel compiles faster whole than copied, relinked and joined).
  std::vector<std::vector<std::string>> CompileGroups(
      const codegen::LoweredKernel& lowered) const;
  static constexpr int64_t kInstructionsPerCompileThread = 100;
  // The artifact from the offline cache when present and loadable, else
  // freshly generated (and stored); returns it with its JIT dylib name.
  // The offline cache's key for `offloaded` ("" when caching is off).
  std::string CacheKey(const ir::Kernel& offloaded,
                       const ir::SNodeTree& snodes) const;
  // Adds an artifact's objects to the JIT; returns the library's name.
  absl::StatusOr<std::string> LinkObjects(const CompiledKernelData& artifact);
  // The launchable kernel of an artifact linked into `dylib`.
  absl::StatusOr<std::shared_ptr<CompiledKernel>> Instantiate(
      const std::string& key, CompiledKernelData lowered,
      const std::string& dylib);

  CompileConfig config_;
  std::shared_ptr<ArrayMemory> memory_ =
      std::make_shared<HostMemoryAllocator>();
  const ir::SNodeTree* snodes_ = nullptr;
  std::unique_ptr<codegen::CpuJit> jit_;
  host::ThreadPool pool_;
  // Evaluates captured adstack MaxOverRanges on pool_, between tasks.
  std::unique_ptr<host::HostMaxReducer> reducer_;
  QdRuntime runtime_{};
  absl::optional<RuntimeErrorRecord> pending_;
  // One heap per runtime, grown by amortized doubling, never shrunk.
  std::unique_ptr<char[]> adstack_heap_;
  adstack::AdStackLayout adstack_layout_;  // of the task being launched
  int adstack_threads_ = 1;  // threads the task's heap has slices for
  AdStackStats adstack_stats_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
  llvm_runtime::PrintBuffer prints_{memory_};
  // Launches so far: each one draws from fresh random streams.
  uint64_t launches_ = 0;
};

}  // namespace quadrants::cpu

#endif  // QUADRANTS_RUNTIME_CPU_CPU_BACKEND_H_
