#ifndef QUADRANTS_RUNTIME_VULKAN_VULKAN_SIZER_H_
#define QUADRANTS_RUNTIME_VULKAN_VULKAN_SIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/snode.h"
#include "quadrants/runtime/backend.h"
#include "quadrants/runtime/compile_config.h"
#include "quadrants/runtime/vulkan/vulkan_device.h"
#include "quadrants/runtime/vulkan/vulkan_memory.h"

namespace quadrants::vulkan {

// Where a task's adstacks are sized (QD_VULKAN_SIZER): by the sizer shader
// when the size expressions read field or ndarray contents (auto, the
// default), whenever they are evaluated at launch (shader), or never (host).
enum class SizerMode { kAuto, kShader, kHost };
absl::StatusOr<SizerMode> SizerModeFromEnvironment();

// Per task, the sizer bytecode when the shader sizes it, else empty: the
// host sizes tasks whose expressions the shader cannot read, tasks with
// nothing to evaluate and every task under a forced ad_stack_size.
std::vector<std::vector<int64_t>> SizerPrograms(
    const std::vector<std::vector<AdStackSpec>>& tasks,
    const ir::SNodeTree& snodes, const std::vector<ir::KernelParam>& params,
    const CompileConfig& config, SizerMode mode);

// What one sizer run left.
struct SizerResult {
  int64_t outcome = 0;  // codegen::spirv::sizer::Outcome
  int64_t float_stride = 0;
  int64_t int_stride = 0;
  int64_t iterations = 0;
  int64_t stack = 0;
};

// The sizer shader's pipeline and the host-visible buffer of its job,
// status and bytecode. One run at a time: the caller waits for a run's
// commands before recording the next.
class VulkanSizer {
 public:
  // Builds and validates the shader and creates its pipeline.
  static absl::StatusOr<std::unique_ptr<VulkanSizer>> Create(
      std::shared_ptr<VulkanDevice> device, VkPipelineLayout layout);
  ~VulkanSizer();
  VulkanSizer(const VulkanSizer&) = delete;
  VulkanSizer& operator=(const VulkanSizer&) = delete;

  // Records one run over `program` into `cmd`, reading the launch context
  // at `context` and writing the record at `record`.
  absl::Status Record(VkCommandBuffer cmd, VkPipelineLayout layout,
                      absl::Span<const int64_t> program, uint64_t context,
                      uint64_t record);
  // The status of the last run, once its commands finished.
  SizerResult Result() const;

 private:
  VulkanSizer(std::shared_ptr<VulkanDevice> device, VkPipeline pipeline)
      : device_(std::move(device)), pipeline_(pipeline) {}

  std::shared_ptr<VulkanDevice> device_;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VulkanBuffer buffer_;
};

}  // namespace quadrants::vulkan

#endif  // QUADRANTS_RUNTIME_VULKAN_VULKAN_SIZER_H_
