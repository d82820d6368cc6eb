// Vulkan loader + Mesa lavapipe from Debian: dispatch a compute shader that
// fills a storage buffer, read it back and check every element.
#include <gtest/gtest.h>
#include <vulkan/vulkan.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "spirv-tools/libspirv.hpp"
#include "tests/third_party/fill_compute_spvasm.h"

namespace {

#define VK_OK(call) ASSERT_EQ((call), VK_SUCCESS) << #call

constexpr uint32_t kCount = 4096;
constexpr uint32_t kLocalSize = 64;

class VulkanSmokeTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (device_ != VK_NULL_HANDLE) {
      vkDeviceWaitIdle(device_);
      if (command_pool_)
        vkDestroyCommandPool(device_, command_pool_, nullptr);
      if (descriptor_pool_)
        vkDestroyDescriptorPool(device_, descriptor_pool_, nullptr);
      if (pipeline_)
        vkDestroyPipeline(device_, pipeline_, nullptr);
      if (pipeline_layout_)
        vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
      if (set_layout_)
        vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
      if (shader_)
        vkDestroyShaderModule(device_, shader_, nullptr);
      if (buffer_)
        vkDestroyBuffer(device_, buffer_, nullptr);
      if (memory_)
        vkFreeMemory(device_, memory_, nullptr);
      vkDestroyDevice(device_, nullptr);
    }
    if (instance_ != VK_NULL_HANDLE)
      vkDestroyInstance(instance_, nullptr);
  }

  // Picks lavapipe (deviceName "llvmpipe ...") or, failing that, any device
  // with a compute queue. Returns a skip reason when there is none.
  std::string PickDevice() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "quadrants-vulkan-smoke";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    VkResult result = vkCreateInstance(&info, nullptr, &instance_);
    if (result != VK_SUCCESS) {
      return "Vulkan not available: vkCreateInstance returned " +
             std::to_string(result);
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance_, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance_, &count, devices.data());
    for (VkPhysicalDevice device : devices) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(device, &props);
      uint32_t families = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(device, &families, nullptr);
      std::vector<VkQueueFamilyProperties> family_props(families);
      vkGetPhysicalDeviceQueueFamilyProperties(device, &families,
                                               family_props.data());
      for (uint32_t f = 0; f < families; ++f) {
        if (!(family_props[f].queueFlags & VK_QUEUE_COMPUTE_BIT))
          continue;
        bool lavapipe = std::strstr(props.deviceName, "llvmpipe") != nullptr;
        if (physical_ == VK_NULL_HANDLE || lavapipe) {
          physical_ = device;
          queue_family_ = f;
          device_name_ = props.deviceName;
        }
        break;
      }
    }
    if (physical_ == VK_NULL_HANDLE) {
      return "Vulkan not available: no device with a compute queue (" +
             std::to_string(count) + " devices)";
    }
    return "";
  }

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::string device_name_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkShaderModule shader_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
};

TEST_F(VulkanSmokeTest, ComputeShaderFillsStorageBuffer) {
  std::string skip = PickDevice();
  if (!skip.empty()) {
    std::cout << skip << std::endl;
    GTEST_SKIP() << skip;
  }
  std::cout << "Vulkan device: " << device_name_ << std::endl;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{
      VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  VK_OK(vkCreateDevice(physical_, &device_info, nullptr, &device_));
  VkQueue queue;
  vkGetDeviceQueue(device_, queue_family_, 0, &queue);

  // A host-visible, coherent storage buffer.
  const VkDeviceSize bytes = kCount * sizeof(uint32_t);
  VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  buffer_info.size = bytes;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  VK_OK(vkCreateBuffer(device_, &buffer_info, nullptr, &buffer_));
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(device_, buffer_, &requirements);
  VkPhysicalDeviceMemoryProperties memory_props;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_props);
  const VkMemoryPropertyFlags wanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type_index = UINT32_MAX;
  for (uint32_t t = 0; t < memory_props.memoryTypeCount; ++t) {
    if ((requirements.memoryTypeBits & (1u << t)) &&
        (memory_props.memoryTypes[t].propertyFlags & wanted) == wanted) {
      type_index = t;
      break;
    }
  }
  ASSERT_NE(type_index, UINT32_MAX) << "no host-visible coherent memory";
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = requirements.size;
  alloc.memoryTypeIndex = type_index;
  VK_OK(vkAllocateMemory(device_, &alloc, nullptr, &memory_));
  VK_OK(vkBindBufferMemory(device_, buffer_, memory_, 0));
  void* mapped = nullptr;
  VK_OK(vkMapMemory(device_, memory_, 0, bytes, 0, &mapped));
  std::memset(mapped, 0xff, bytes);

  // The shader, assembled from text by SPIRV-Tools.
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_1);
  std::vector<uint32_t> spirv;
  ASSERT_TRUE(tools.Assemble(reinterpret_cast<const char*>(kFillComputeSpvasm),
                             &spirv));
  VkShaderModuleCreateInfo shader_info{
      VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  shader_info.codeSize = spirv.size() * sizeof(uint32_t);
  shader_info.pCode = spirv.data();
  VK_OK(vkCreateShaderModule(device_, &shader_info, nullptr, &shader_));

  VkDescriptorSetLayoutBinding binding{};
  binding.binding = 0;
  binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  binding.descriptorCount = 1;
  binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  VkDescriptorSetLayoutCreateInfo set_info{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = 1;
  set_info.pBindings = &binding;
  VK_OK(vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &set_layout_));
  VkPipelineLayoutCreateInfo layout_info{
      VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &set_layout_;
  VK_OK(vkCreatePipelineLayout(device_, &layout_info, nullptr,
                               &pipeline_layout_));
  VkComputePipelineCreateInfo pipeline_info{
      VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage.sType =
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = shader_;
  pipeline_info.stage.pName = "main";
  pipeline_info.layout = pipeline_layout_;
  VK_OK(vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &pipeline_info,
                                 nullptr, &pipeline_));

  VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo pool_info{
      VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = 1;
  pool_info.pPoolSizes = &pool_size;
  VK_OK(
      vkCreateDescriptorPool(device_, &pool_info, nullptr, &descriptor_pool_));
  VkDescriptorSetAllocateInfo set_alloc{
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = descriptor_pool_;
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &set_layout_;
  VkDescriptorSet set;
  VK_OK(vkAllocateDescriptorSets(device_, &set_alloc, &set));
  VkDescriptorBufferInfo buffer_ref{buffer_, 0, bytes};
  VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  write.dstSet = set;
  write.dstBinding = 0;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &buffer_ref;
  vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);

  VkCommandPoolCreateInfo command_pool_info{
      VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  command_pool_info.queueFamilyIndex = queue_family_;
  VK_OK(vkCreateCommandPool(device_, &command_pool_info, nullptr,
                            &command_pool_));
  VkCommandBufferAllocateInfo command_alloc{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  command_alloc.commandPool = command_pool_;
  command_alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  command_alloc.commandBufferCount = 1;
  VkCommandBuffer commands;
  VK_OK(vkAllocateCommandBuffers(device_, &command_alloc, &commands));
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_OK(vkBeginCommandBuffer(commands, &begin));
  vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                          pipeline_layout_, 0, 1, &set, 0, nullptr);
  vkCmdDispatch(commands, kCount / kLocalSize, 1, 1);
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                       0, nullptr);
  VK_OK(vkEndCommandBuffer(commands));
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  VK_OK(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE));
  VK_OK(vkQueueWaitIdle(queue));

  const auto* data = static_cast<const uint32_t*>(mapped);
  for (uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(data[i], 3 * i + 1) << "element " << i;
  }
  vkUnmapMemory(device_, memory_);
}

}  // namespace
