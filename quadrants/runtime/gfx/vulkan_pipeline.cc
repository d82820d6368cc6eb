#include "quadrants/runtime/gfx/vulkan_pipeline.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::gfx {

absl::StatusOr<VkPipeline> CreatePipeline(const VulkanDevice& device,
                                          VkPipelineLayout layout,
                                          const std::vector<uint32_t>& words,
                                          const std::string& what) {
  const VulkanApi& api = device.api();
  VkShaderModuleCreateInfo module_info{
      VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = 4 * words.size();
  module_info.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult result =
      api.vkCreateShaderModule(device.device(), &module_info, nullptr, &module);
  if (result != VK_SUCCESS) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat(
            "Vulkan could not load the shader of ", what, ": ",
            VulkanApi::Check(result, "vkCreateShaderModule").message()));
  }
  VkComputePipelineCreateInfo info{
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  result = api.vkCreateComputePipelines(device.device(), VK_NULL_HANDLE, 1,
                                        &info, nullptr, &pipeline);
  api.vkDestroyShaderModule(device.device(), module, nullptr);
  if (result != VK_SUCCESS) {
    return MakeError(
        ErrorKind::kCompilation,
        absl::StrCat(
            "Vulkan could not create the pipeline of ", what, ": ",
            VulkanApi::Check(result, "vkCreateComputePipelines").message()));
  }
  return pipeline;
}

}  // namespace quadrants::gfx
