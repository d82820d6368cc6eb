#include "quadrants/runtime/vulkan/vulkan_memory.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::vulkan {
namespace {

absl::Status MakeBuffer(const VulkanDevice& device, int64_t bytes,
                        uint32_t memory_type, VkBufferUsageFlags usage,
                        VkBuffer* buffer, VkDeviceMemory* memory) {
  const VulkanApi& api = device.api();
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = static_cast<VkDeviceSize>(bytes);
  info.usage = usage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkCreateBuffer(device.device(), &info, nullptr, buffer),
      "vkCreateBuffer"));
  VkMemoryRequirements requirements;
  api.vkGetBufferMemoryRequirements(device.device(), *buffer, &requirements);
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.pNext = &flags;
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = memory_type;
  absl::Status allocated = VulkanApi::Check(
      api.vkAllocateMemory(device.device(), &allocate, nullptr, memory),
      "vkAllocateMemory");
  if (!allocated.ok()) {
    api.vkDestroyBuffer(device.device(), *buffer, nullptr);
    *buffer = VK_NULL_HANDLE;
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("out of Vulkan memory allocating ", bytes,
                                  " bytes (", allocated.message(), ")"));
  }
  return VulkanApi::Check(
      api.vkBindBufferMemory(device.device(), *buffer, *memory, 0),
      "vkBindBufferMemory");
}

}  // namespace

absl::StatusOr<VulkanBuffer> CreateBuffer(const VulkanDevice& device,
                                       int64_t bytes, bool device_local) {
  const VulkanApi& api = device.api();
  VulkanBuffer out;
  out.bytes = std::max<int64_t>(bytes, 16);
  const int64_t padded = out.bytes + 2 * kGuardBytes;
  const bool staged = device_local && !device.device_memory_mappable();
  const uint32_t type =
      device_local ? device.device_memory_type() : device.host_memory_type();
  absl::Status status = MakeBuffer(
      device, padded, type,
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
          VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
          VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
          VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
      &out.buffer, &out.memory);
  if (status.ok() && staged) {
    status = MakeBuffer(
        device, padded, device.host_memory_type(),
        VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        &out.staging, &out.staging_memory);
  }
  if (status.ok()) {
    void* mapped = nullptr;
    status = VulkanApi::Check(
        api.vkMapMemory(device.device(),
                        staged ? out.staging_memory : out.memory, 0,
                        VK_WHOLE_SIZE, 0, &mapped),
        "vkMapMemory");
    out.host = static_cast<char*>(mapped) + kGuardBytes;
  }
  if (!status.ok()) {
    DestroyBuffer(device, &out);
    return status;
  }
  std::memset(out.host - kGuardBytes, 0, padded);
  VkBufferDeviceAddressInfo address{
      VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  address.buffer = out.buffer;
  out.address =
      api.vkGetBufferDeviceAddress(device.device(), &address) + kGuardBytes;
  return out;
}

void DestroyBuffer(const VulkanDevice& device, VulkanBuffer* buffer) {
  const VulkanApi& api = device.api();
  VkDevice d = device.device();
  if (buffer->buffer != VK_NULL_HANDLE)
    api.vkDestroyBuffer(d, buffer->buffer, nullptr);
  if (buffer->memory != VK_NULL_HANDLE)
    api.vkFreeMemory(d, buffer->memory, nullptr);
  if (buffer->staging != VK_NULL_HANDLE)
    api.vkDestroyBuffer(d, buffer->staging, nullptr);
  if (buffer->staging_memory != VK_NULL_HANDLE)
    api.vkFreeMemory(d, buffer->staging_memory, nullptr);
  *buffer = VulkanBuffer();
}

VulkanMemory::~VulkanMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [host, buffer] : buffers_)
    DestroyBuffer(*device_, &buffer);
}

absl::StatusOr<void*> VulkanMemory::Allocate(int64_t bytes) {
  QD_ASSIGN_OR_RETURN(VulkanBuffer buffer, CreateBuffer(*device_, bytes, true));
  std::lock_guard<std::mutex> lock(mutex_);
  char* host = buffer.host;
  buffers_[host] = buffer;
  return host;
}

void VulkanMemory::Free(void* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.find(static_cast<const char*>(data));
  if (it == buffers_.end())
    return;
  DestroyBuffer(*device_, &it->second);
  buffers_.erase(it);
}

uint64_t VulkanMemory::DeviceAddress(const void* p) const {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.upper_bound(c);
  if (it == buffers_.begin())
    return 0;
  --it;
  const VulkanBuffer& buffer = it->second;
  if (c < buffer.host || c >= buffer.host + buffer.bytes)
    return 0;
  return buffer.address + static_cast<uint64_t>(c - buffer.host);
}

bool VulkanMemory::has_staged() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [host, buffer] : buffers_) {
    if (buffer.staging != VK_NULL_HANDLE)
      return true;
  }
  return false;
}

void VulkanMemory::RecordCopies(VkCommandBuffer commands, bool upload) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [host, buffer] : buffers_) {
    if (buffer.staging == VK_NULL_HANDLE)
      continue;
    VkBufferCopy region{kGuardBytes, kGuardBytes,
                        static_cast<VkDeviceSize>(buffer.bytes)};
    device_->api().vkCmdCopyBuffer(
        commands, upload ? buffer.staging : buffer.buffer,
        upload ? buffer.buffer : buffer.staging, 1, &region);
  }
}

}  // namespace quadrants::vulkan
