#include "quadrants/runtime/vulkan/vulkan_stream.h"

#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/vulkan/vulkan_pipeline.h"

namespace quadrants::vulkan {
namespace {

// Launch contexts are 256-byte aligned within a batch's buffer.
constexpr int64_t kContextStride =
    (codegen::spirv::abi::kCtxBytes + 255) / 256 * 256;

// From the shader writes recorded so far to `dst`.
void Barrier(const VulkanDevice& device, VkCommandBuffer commands,
             VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  RecordBarrier(device, commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT, dst, dst_access);
}

}  // namespace

absl::StatusOr<std::unique_ptr<VulkanStream>> VulkanStream::Create(
    std::shared_ptr<VulkanDevice> device) {
  std::unique_ptr<VulkanStream> stream(new VulkanStream(std::move(device)));
  for (Batch& batch : stream->batches_) {
    QD_RETURN_IF_ERROR(
        CreateCommands(*stream->device_, &batch.commands, &batch.fence));
    QD_ASSIGN_OR_RETURN(batch.contexts,
                        CreateBuffer(*stream->device_,
                                     kContextStride * kLaunchesPerBatch, false));
  }
  return stream;
}

VulkanStream::~VulkanStream() {
  (void)Drain();
  for (Batch& batch : batches_) {
    DestroyCommands(*device_, &batch.commands, &batch.fence);
    DestroyBuffer(*device_, &batch.contexts);
  }
}

absl::StatusOr<VulkanStream::Slot> VulkanStream::Next() {
  Batch& batch = batches_[current_];
  if (!batch.open) {
    // Its contexts and command buffer were the device's until now.
    QD_RETURN_IF_ERROR(Wait(batch));
    QD_RETURN_IF_ERROR(BeginCommands(*device_, batch.commands));
    batch.open = true;
    batch.launches = 0;
  }
  if (batch.launches > 0) {
    // After the launches before it, whose writes it may read (range-for
    // bounds and indirect dispatch arguments included).
    Barrier(*device_, batch.commands,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                VK_ACCESS_INDIRECT_COMMAND_READ_BIT);
  }
  Slot slot;
  slot.commands = batch.commands;
  slot.context = batch.contexts.host + kContextStride * batch.launches;
  slot.context_address =
      batch.contexts.address + kContextStride * batch.launches;
  return slot;
}

absl::Status VulkanStream::Commit() {
  Batch& batch = batches_[current_];
  ++batch.launches;
  ++queued_;
  if (batch.launches < kLaunchesPerBatch)
    return absl::OkStatus();
  QD_RETURN_IF_ERROR(Submit(batch));
  current_ = 1 - current_;
  return absl::OkStatus();
}

absl::Status VulkanStream::Submit(Batch& batch) {
  if (!batch.open)
    return absl::OkStatus();
  batch.open = false;
  const VulkanApi& api = device_->api();
  // Before the host's reads (once the fence is waited on) and every later
  // submission's commands: transfers, sizers, reducers, launches.
  Barrier(*device_, batch.commands,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
              VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
              VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT |
              VK_ACCESS_HOST_READ_BIT);
  QD_RETURN_IF_ERROR(VulkanApi::Check(api.vkEndCommandBuffer(batch.commands),
                                      "vkEndCommandBuffer"));
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &batch.commands;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkQueueSubmit(device_->queue(), 1, &submit, batch.fence),
      "vkQueueSubmit"));
  batch.in_flight = true;
  ++submissions_;
  return absl::OkStatus();
}

absl::Status VulkanStream::Wait(Batch& batch) {
  if (!batch.in_flight)
    return absl::OkStatus();
  const VulkanApi& api = device_->api();
  batch.in_flight = false;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkWaitForFences(device_->device(), 1, &batch.fence, VK_TRUE,
                          UINT64_MAX),
      "vkWaitForFences"));
  return VulkanApi::Check(api.vkResetFences(device_->device(), 1, &batch.fence),
                          "vkResetFences");
}

absl::Status VulkanStream::Drain() {
  // The other batch was submitted before the current one.
  Batch& older = batches_[1 - current_];
  Batch& newer = batches_[current_];
  QD_RETURN_IF_ERROR(Submit(newer));
  QD_RETURN_IF_ERROR(Wait(older));
  return Wait(newer);
}

}  // namespace quadrants::vulkan
