#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quadrants/codegen/spirv/kernel_codegen.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/cpu/cpu_max_reducer.h"
#include "quadrants/runtime/vulkan/vulkan_adstack.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_max_reducer.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"
#include "quadrants/runtime/vulkan/vulkan_sizer.h"
#include "quadrants/runtime/offline_cache/offline_cache.h"

namespace quadrants::vulkan {

// The Vulkan backend: kernels lowered to SPIR-V (one compute pipeline per
// task, plus one per range_for task computing its range on the device),
// fields and ndarrays in device buffers addressed through buffer device
// addresses. A launch records its tasks into one command buffer with a
// barrier between consecutive dispatches, submits it and waits on a fence,
// so errors and prints are known when it returns.
class VulkanBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<VulkanBackend>> Create(
      const CompileConfig& config);
  // OK when a loader and a usable device are present; else the Unavailable
  // error naming what is missing.
  static absl::Status Probe();

  absl::StatusOr<std::shared_ptr<CompiledKernel>> Compile(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes) override;
  void SetRoot(char* root) override { root_ = root; }
  absl::StatusOr<BackendLaunchStats> Launch(
      const CompiledKernel& kernel, absl::Span<const ResolvedArgument> args,
      absl::Span<const uint64_t> field_generations,
      const LaunchOptions& options) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::optional<RuntimeErrorRecord> TakeError() override;
  PrintBatch TakePrints() override;
  std::shared_ptr<ArrayMemory> memory() override { return memory_; }
  bool stages_host_arrays() const override { return true; }
  int num_threads() const override;
  const AdStackStats& adstack_stats() const override { return adstack_stats_; }
  const OfflineCacheStats& offline_cache_stats() const override {
    return cache_stats_;
  }

  VulkanBackend(const CompileConfig& config,
                std::shared_ptr<VulkanDevice> device);
  ~VulkanBackend() override;

 private:
  codegen::spirv::CodegenOptions CodegenOptions() const;
  absl::StatusOr<CompiledKernelData> Generate(
      const ir::Kernel& offloaded, const ir::SNodeTree& snodes);
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
      const std::vector<VulkanAdStackLayout>& layouts);

  CompileConfig config_;
  std::shared_ptr<VulkanDevice> device_;
  std::shared_ptr<VulkanMemory> memory_;
  char* root_ = nullptr;
  const ir::SNodeTree* snodes_ = nullptr;
  VulkanAdStacks adstacks_;
  SizerMode sizer_mode_ = SizerMode::kAuto;
  std::unique_ptr<VulkanSizer> sizer_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VulkanBuffer runtime_;  // the runtime record (shader_abi.h)
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
  // same host-addressable memory as the serial walk; made at first use.
  std::unique_ptr<cpu::CpuMaxReducer> host_reducer_;
  // Evaluates them with the reducer shader; falls back to host_reducer_.
  std::unique_ptr<VulkanMaxReducer> device_reducer_;
  OfflineCacheStats cache_stats_;  // before cache_, which notes its directory
  std::optional<offline_cache::OfflineCache> cache_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_BACKEND_H_
