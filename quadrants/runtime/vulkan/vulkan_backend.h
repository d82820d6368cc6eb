#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/host/host_max_reducer.h"
#include "quadrants/runtime/vulkan/vulkan_adstack.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_max_reducer.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"
#include "quadrants/runtime/vulkan/vulkan_sizer.h"
#include "quadrants/runtime/vulkan/vulkan_stream.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::vulkan {

struct PipelineSet;

struct VulkanTask;

// The Vulkan backend: kernels lowered to SPIR-V (one compute pipeline per
// task, plus one per range_for task computing its range on the device),
// fields and ndarrays in device buffers addressed through buffer device
// addresses. A launch records its tasks with a barrier between consecutive
// dispatches. A kernel that can record no error, prints nothing and has no
// adstacks is queued (VulkanStream) and the launch returns; any other
// launch drains the queue, submits its own command buffer and waits on its
// fence, so its errors and prints are known when it returns. Host access
// to fields and ndarrays, Synchronize and the adstack sizers drain the
// queue first.
class VulkanBackend : public Backend {
 public:
  absl::Status UpdateConfig(const CompileConfig& config) override {
    config_ = config;
    return absl::OkStatus();
  }
  static absl::StatusOr<std::unique_ptr<VulkanBackend>> Create(
      const CompileConfig& config);
  // OK when a loader and a usable device are present; else the Unavailable
  // error naming what is missing.
  static absl::Status Probe();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  absl::StatusOr<std::shared_ptr<CompiledKernel>> LoadCached(
      const std::string& key, const ir::SNodeTree& snodes) override;
  void SetRoot(char* root) override { root_ = root; }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override;
  absl::Status Synchronize() override { return stream_->Drain(); }
  absl::optional<RuntimeErrorRecord> TakeError() override;
  PrintBatch TakePrints() override;
  std::shared_ptr<ArrayMemory> memory() override { return memory_; }
  bool stages_host_arrays() const override { return true; }
  int num_threads() const override;
  SimtLimits simt_limits() const override;
  std::vector<std::pair<std::string, int64_t>> device_capabilities()
      const override;
  std::string device_description() const override {
    return device_->ReadableDescription();
  }
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  VulkanBackend(const CompileConfig& config,
                std::shared_ptr<VulkanDevice> device);
  ~VulkanBackend() override;

 private:
  codegen::spirv::CodegenOptions CodegenOptions() const;
  // Whether a launch of `kernel` may be queued (see the class comment).
  bool Queueable(const CompiledKernel& kernel) const;
  absl::StatusOr<BackendLaunchStats> Queue(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args);
  // Writes the launch context of `kernel` with `args` at `ctx`.
  absl::Status FillContext(char* ctx, const CompiledKernel& kernel,
                           absl::Span<const ResolvedArgument> args);
  // Records task `t`'s dispatches with the launch context at `ctx_address`.
  void RecordTask(VkCommandBuffer cmd, const VulkanTask& task, size_t t,
                  int64_t groups, uint64_t ctx_address,
                  BackendLaunchStats* stats);
  // The workgroups a dispatch of `task` uses before adstack limits.
  int64_t TaskGroups(const VulkanTask& task) const;
  absl::StatusOr<CompiledKernelData> Generate(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes);
  // The pipelines of an artifact's tasks.
  absl::StatusOr<std::shared_ptr<PipelineSet>> LoadPipelines(
      const CompiledKernelData& artifact);
  // The launchable kernel of an artifact and its pipelines.
  std::shared_ptr<CompiledKernel> Instantiate(
      const std::string& key, CompiledKernelData artifact,
      std::shared_ptr<PipelineSet> pipelines, const ir::SNodeTree& snodes);
  absl::Status EnsureBounds(int tasks);
  absl::Status EnsurePrintBuffer(int64_t bytes);
  // The sizer shader's pipeline, made at its first use.
  absl::StatusOr<VulkanSizer*> Sizer();
  // The max-reducer of a launch's captured MaxOverRanges: the reducer
  // shader (made at its first use), unless QD_VULKAN_SIZER=host or staged
  // buffers hold the current copies on the host.
  absl::StatusOr<adstack::MaxReducer*> Reducer();
  // The record of the adstack overflow the launch's pushes left, if any
  // (then cleared), for the task layouts it ran with.
  absl::optional<RuntimeErrorRecord> TakeAdStackOverflow(
      const std::vector<adstack::AdStackLayout>& layouts);

  CompileConfig config_;
  std::shared_ptr<VulkanDevice> device_;
  std::shared_ptr<VulkanMemory> memory_;
  char* root_ = nullptr;
  const ir::SNodeTree* snodes_ = nullptr;
  VulkanAdStacks adstacks_;
  SizerMode sizer_mode_ = SizerMode::kAuto;
  std::unique_ptr<VulkanSizer> sizer_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  // Queued launches; shared so that kernels and arrays outliving the
  // backend see it gone.
  std::shared_ptr<VulkanStream> stream_;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;  // a launch waited for
  VkFence fence_ = VK_NULL_HANDLE;
  VulkanBuffer runtime_;  // the runtime record (shader_abi.h)
  uint64_t published_root_ = 0;  // the root address in runtime_
  VulkanBuffer context_;  // the launch context
  VulkanBuffer bounds_;   // per-task range records
  VulkanBuffer prints_;   // print() records
  int64_t print_capacity_ = 0;
  bool print_overflowed_ = false;
  PrintBatch pending_prints_;
  absl::optional<RuntimeErrorRecord> pending_;
  uint64_t launches_ = 0;
  AdStackStats adstack_stats_;
  // Evaluates captured adstack MaxOverRanges on host threads, reading the
  // arrays' host copies (refreshed first); made at first use.
  std::unique_ptr<adstack::MaxReducer> host_reducer_;
  // Evaluates them with the reducer shader; falls back to host_reducer_.
  std::unique_ptr<VulkanMaxReducer> device_reducer_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_
