#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::vulkan {

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

absl::StatusOr<VkPipelineLayout> CreatePipelineLayout(
    const VulkanDevice& device) {
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            codegen::spirv::abi::kPushConstantBytes};
  VkPipelineLayoutCreateInfo info{
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  QD_RETURN_IF_ERROR(
      VulkanApi::Check(device.api().vkCreatePipelineLayout(
                           device.device(), &info, nullptr, &layout),
                       "vkCreatePipelineLayout"));
  return layout;
}

absl::Status CreateCommands(const VulkanDevice& device,
                            VkCommandBuffer* commands, VkFence* fence) {
  const VulkanApi& api = device.api();
  VkCommandBufferAllocateInfo info{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  info.commandPool = device.command_pool();
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkAllocateCommandBuffers(device.device(), &info, commands),
      "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  return VulkanApi::Check(
      api.vkCreateFence(device.device(), &fence_info, nullptr, fence),
      "vkCreateFence");
}

void DestroyCommands(const VulkanDevice& device, VkCommandBuffer* commands,
                     VkFence* fence) {
  const VulkanApi& api = device.api();
  if (*fence != VK_NULL_HANDLE)
    api.vkDestroyFence(device.device(), *fence, nullptr);
  if (*commands != VK_NULL_HANDLE) {
    api.vkFreeCommandBuffers(device.device(), device.command_pool(), 1,
                             commands);
  }
  *fence = VK_NULL_HANDLE;
  *commands = VK_NULL_HANDLE;
}

void RecordBarrier(const VulkanDevice& device, VkCommandBuffer commands,
                   VkPipelineStageFlags src, VkAccessFlags src_access,
                   VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  device.api().vkCmdPipelineBarrier(commands, src, dst, 0, 1, &b, 0, nullptr,
                                    0, nullptr);
}

absl::Status BeginCommands(const VulkanDevice& device,
                           VkCommandBuffer commands) {
  const VulkanApi& api = device.api();
  QD_RETURN_IF_ERROR(VulkanApi::Check(api.vkResetCommandBuffer(commands, 0),
                                      "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  return VulkanApi::Check(api.vkBeginCommandBuffer(commands, &begin),
                          "vkBeginCommandBuffer");
}

absl::Status SubmitAndWait(const VulkanDevice& device, VkCommandBuffer commands,
                           VkFence fence) {
  const VulkanApi& api = device.api();
  QD_RETURN_IF_ERROR(
      VulkanApi::Check(api.vkEndCommandBuffer(commands), "vkEndCommandBuffer"));
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkQueueSubmit(device.queue(), 1, &submit, fence), "vkQueueSubmit"));
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkWaitForFences(device.device(), 1, &fence, VK_TRUE, UINT64_MAX),
      "vkWaitForFences"));
  return VulkanApi::Check(api.vkResetFences(device.device(), 1, &fence),
                          "vkResetFences");
}

}  // namespace quadrants::vulkan
