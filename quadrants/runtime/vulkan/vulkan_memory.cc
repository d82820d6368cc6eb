#include "quadrants/runtime/vulkan/vulkan_memory.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

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
  DestroyCommands(*device_, &commands_, &fence_);
}

absl::Status VulkanMemory::Drain() {
  std::function<absl::Status()> drain;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drain = drain_;
  }
  return drain ? drain() : absl::OkStatus();
}

absl::StatusOr<void*> VulkanMemory::Allocate(int64_t bytes) {
  QD_ASSIGN_OR_RETURN(VulkanBuffer buffer, CreateBuffer(*device_, bytes, true));
  if (buffer.staging != VK_NULL_HANDLE) {
    // Device-local memory starts undefined; the staging copy is zeroed.
    absl::Status zeroed = RunTransfers({{&buffer, 0, buffer.bytes}}, true, true);
    if (!zeroed.ok()) {
      DestroyBuffer(*device_, &buffer);
      return zeroed;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  char* host = buffer.host;
  buffers_[host] = buffer;
  return host;
}

void VulkanMemory::Free(void* data) {
  // Queued launches may still use the buffer; a failed drain (a lost
  // device) leaves nothing to wait for.
  (void)Drain();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.find(static_cast<const char*>(data));
  if (it == buffers_.end())
    return;
  DestroyBuffer(*device_, &it->second);
  buffers_.erase(it);
}

const VulkanBuffer* VulkanMemory::Find(const void* p, int64_t bytes) const {
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = buffers_.upper_bound(c);
  if (it == buffers_.begin())
    return nullptr;
  --it;
  const VulkanBuffer& buffer = it->second;
  if (c < buffer.host || c + bytes > buffer.host + buffer.bytes)
    return nullptr;
  return &buffer;
}

uint64_t VulkanMemory::DeviceAddress(const void* p) const {
  const VulkanBuffer* buffer = Find(p, 1);
  if (buffer == nullptr)
    return 0;
  return buffer->address +
         static_cast<uint64_t>(static_cast<const char*>(p) - buffer->host);
}

absl::Status VulkanMemory::CopyToHost(void* host, const void* data,
                                      int64_t bytes) {
  if (bytes <= 0)
    return absl::OkStatus();
  QD_RETURN_IF_ERROR(Drain());
  const VulkanBuffer* buffer = Find(data, bytes);
  if (buffer != nullptr && buffer->staging != VK_NULL_HANDLE) {
    const int64_t offset = static_cast<const char*>(data) - buffer->host;
    QD_RETURN_IF_ERROR(RunTransfers({{buffer, offset, bytes}}, false, false));
  } else if (buffer == nullptr && !host_addressable()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("copying ", bytes,
                                  " bytes from memory that is in no Vulkan "
                                  "buffer"));
  }
  std::memcpy(host, data, bytes);
  return absl::OkStatus();
}

absl::Status VulkanMemory::CopyFromHost(void* data, const void* host,
                                        int64_t bytes) {
  if (bytes <= 0)
    return absl::OkStatus();
  QD_RETURN_IF_ERROR(Drain());
  const VulkanBuffer* buffer = Find(data, bytes);
  if (buffer == nullptr && !host_addressable()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("copying ", bytes,
                                  " bytes into memory that is in no Vulkan "
                                  "buffer"));
  }
  std::memcpy(data, host, bytes);
  if (buffer != nullptr && buffer->staging != VK_NULL_HANDLE) {
    const int64_t offset = static_cast<char*>(data) - buffer->host;
    QD_RETURN_IF_ERROR(RunTransfers({{buffer, offset, bytes}}, true, false));
  }
  return absl::OkStatus();
}

absl::Status VulkanMemory::RefreshHostCopies() {
  if (host_addressable())
    return absl::OkStatus();
  QD_RETURN_IF_ERROR(Drain());
  std::vector<Transfer> transfers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [host, buffer] : buffers_)
      transfers.push_back({&buffer, 0, buffer.bytes});
  }
  return RunTransfers(transfers, false, false);
}

absl::Status VulkanMemory::RunTransfers(const std::vector<Transfer>& transfers,
                                        bool upload, bool fill_zero) {
  if (transfers.empty())
    return absl::OkStatus();
  std::lock_guard<std::mutex> lock(transfer_mutex_);
  const VulkanApi& api = device_->api();
  if (commands_ == VK_NULL_HANDLE)
    QD_RETURN_IF_ERROR(CreateCommands(*device_, &commands_, &fence_));
  QD_RETURN_IF_ERROR(BeginCommands(*device_, commands_));
  // Earlier submissions' shader writes before the copies; the copies before
  // later shaders and the host's reads.
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags src_access,
                     VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    RecordBarrier(*device_, commands_, src, src_access, dst, dst_access);
  };
  const VkPipelineStageFlags compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
  const VkPipelineStageFlags transfer = VK_PIPELINE_STAGE_TRANSFER_BIT;
  barrier(compute | transfer,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, transfer,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  for (const Transfer& t : transfers) {
    const VulkanBuffer& b = *t.buffer;
    if (fill_zero) {
      api.vkCmdFillBuffer(commands_, b.buffer, 0, VK_WHOLE_SIZE, 0);
      continue;
    }
    const VkDeviceSize at = static_cast<VkDeviceSize>(kGuardBytes + t.offset);
    VkBufferCopy region{at, at, static_cast<VkDeviceSize>(t.bytes)};
    api.vkCmdCopyBuffer(commands_, upload ? b.staging : b.buffer,
                        upload ? b.buffer : b.staging, 1, &region);
  }
  barrier(transfer, VK_ACCESS_TRANSFER_WRITE_BIT,
          compute | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
              VK_ACCESS_HOST_READ_BIT);
  return SubmitAndWait(*device_, commands_, fence_);
}

}  // namespace quadrants::vulkan
