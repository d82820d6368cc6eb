#include "quadrants/runtime/vulkan/vulkan_sizer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/codegen/spirv/sizer_bytecode.h"
#include "quadrants/codegen/spirv/sizer_shader.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

namespace quadrants::vulkan {
namespace sizer = codegen::spirv::sizer;

absl::StatusOr<SizerMode> SizerModeFromEnvironment() {
  const options::Option option = options::Option::kVulkanSizer;
  absl::StatusOr<options::Value> checked = options::EnvValue(option);
  if (!checked.ok())
    return MakeError(ErrorKind::kRuntime, checked.status().message());
  const std::string mode = options::EnvString(option);
  if (mode == "shader")
    return SizerMode::kShader;
  if (mode == "host")
    return SizerMode::kHost;
  return SizerMode::kAuto;
}

namespace {

// Whether the shader sizes `stacks` under `mode`.
bool WantsShader(const std::vector<AdStackSpec>& stacks, SizerMode mode) {
  bool evaluated = false, reads = false;
  for (const AdStackSpec& stack : stacks) {
    if (stack.static_capacity > 0 || !stack.size_expr || stack.checkpoints)
      continue;
    evaluated = true;
    reads = reads || sizer::ReadsData(*stack.size_expr);
  }
  return mode == SizerMode::kShader ? evaluated : reads;
}

}  // namespace

std::vector<std::vector<int64_t>> SizerPrograms(
    const std::vector<std::vector<AdStackSpec>>& tasks,
    const ir::SNodeTree& snodes, const std::vector<ir::KernelParam>& params,
    const CompileConfig& config, SizerMode mode) {
  std::vector<std::vector<int64_t>> programs(tasks.size());
  if (mode == SizerMode::kHost || config.ad_stack_size > 0)
    return programs;
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (!WantsShader(tasks[t], mode))
      continue;
    // What the shader cannot read (or a malformed expression, which the
    // host reports) stays on the host.
    absl::StatusOr<std::vector<int64_t>> words = sizer::EncodeSizer(
        tasks[t], snodes, params, config.default_ad_stack_size);
    if (words.ok())
      programs[t] = std::move(*words);
  }
  return programs;
}

absl::StatusOr<std::unique_ptr<VulkanSizer>> VulkanSizer::Create(
    std::shared_ptr<VulkanDevice> device, VkPipelineLayout layout) {
  const std::vector<uint32_t> words = sizer::BuildSizerShader();
  const std::string what = "the adstack sizer shader";
  QD_RETURN_IF_ERROR(codegen::spirv::ValidateModule(words, what));
  QD_ASSIGN_OR_RETURN(VkPipeline pipeline,
                      CreatePipeline(*device, layout, words, what));
  return std::unique_ptr<VulkanSizer>(
      new VulkanSizer(std::move(device), pipeline));
}

VulkanSizer::~VulkanSizer() {
  if (pipeline_ != VK_NULL_HANDLE)
    device_->api().vkDestroyPipeline(device_->device(), pipeline_, nullptr);
  DestroyBuffer(*device_, &buffer_);
}

absl::Status VulkanSizer::Record(VkCommandBuffer cmd, VkPipelineLayout layout,
                                 absl::Span<const int64_t> program,
                                 uint64_t context, uint64_t record) {
  const int64_t code_at = sizer::kJobBytes + sizer::kStatusBytes;
  const int64_t need = code_at + 8 * static_cast<int64_t>(program.size());
  if (buffer_.buffer == VK_NULL_HANDLE || buffer_.bytes < need) {
    DestroyBuffer(*device_, &buffer_);
    QD_ASSIGN_OR_RETURN(
        buffer_, CreateBuffer(*device_, std::max<int64_t>(need, 4096), false));
  }
  char* host = buffer_.host;
  auto put = [&](int64_t offset, uint64_t value) {
    std::memcpy(host + offset, &value, 8);
  };
  put(sizer::kJobContext, context);
  put(sizer::kJobRecord, record);
  put(sizer::kJobStatus, buffer_.address + sizer::kJobBytes);
  put(sizer::kJobCode, buffer_.address + code_at);
  std::memset(host + sizer::kJobBytes, 0, sizer::kStatusBytes);
  std::memcpy(host + code_at, program.data(), 8 * program.size());
  const VulkanApi& api = device_->api();
  const uint64_t job = buffer_.address;
  api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  api.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         codegen::spirv::abi::kPushConstantBytes, &job);
  api.vkCmdDispatch(cmd, 1, 1, 1);
  return absl::OkStatus();
}

SizerResult VulkanSizer::Result() const {
  SizerResult result;
  const char* status = buffer_.host + sizer::kJobBytes;
  auto get = [&](uint32_t offset) {
    int64_t value = 0;
    std::memcpy(&value, status + offset, 8);
    return value;
  };
  result.outcome = get(sizer::kStatusOutcome);
  result.float_stride = get(sizer::kStatusFloatStride);
  result.int_stride = get(sizer::kStatusIntStride);
  result.iterations = get(sizer::kStatusIterations);
  result.stack = get(sizer::kStatusStack);
  return result;
}

}  // namespace quadrants::vulkan
