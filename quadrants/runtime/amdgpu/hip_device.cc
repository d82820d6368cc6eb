#include "quadrants/runtime/amdgpu/hip_device.h"

#include <cstring>
#include <vector>

#include "quadrants/common/status_macros.h"

namespace quadrants::amdgpu {

absl::StatusOr<uint64_t> HipDevice::Allocate(int64_t bytes) {
  void* address = nullptr;
  QD_RETURN_IF_ERROR(driver_->Check(
      driver_->hipMalloc(&address, static_cast<size_t>(bytes)), "hipMalloc"));
  return reinterpret_cast<uint64_t>(address);
}

void HipDevice::Free(uint64_t address) {
  (void)driver_->hipFree(reinterpret_cast<void*>(address));
}

absl::Status HipDevice::CopyToDevice(uint64_t address, const void* data,
                                     int64_t bytes) {
  return driver_->Check(
      driver_->hipMemcpyHtoD(reinterpret_cast<hipDeviceptr_t>(address),
                             const_cast<void*>(data), bytes),
      "hipMemcpyHtoD");
}

absl::Status HipDevice::CopyToHost(void* data, uint64_t address,
                                   int64_t bytes) {
  return driver_->Check(
      driver_->hipMemcpyDtoH(data, reinterpret_cast<hipDeviceptr_t>(address),
                             bytes),
      "hipMemcpyDtoH");
}

absl::Status HipDevice::Launch(const gpu::KernelLaunch& launch) {
  std::vector<void*> pointers;
  for (const uint64_t& value : launch.params)
    pointers.push_back(const_cast<uint64_t*>(&value));
  return driver_->Check(
      driver_->hipModuleLaunchKernel(
          static_cast<hipFunction_t>(launch.function), launch.grid, 1, 1,
          launch.block, 1, 1, 0, nullptr, pointers.data(), nullptr),
      "hipModuleLaunchKernel");
}

absl::Status HipDevice::Synchronize() {
  return driver_->Check(driver_->hipDeviceSynchronize(),
                        "hipDeviceSynchronize");
}

absl::StatusOr<void*> HipManagedMemoryAllocator::Allocate(int64_t bytes) {
  void* data = nullptr;
  const size_t size = static_cast<size_t>((bytes + 255) / 256 * 256);
  QD_RETURN_IF_ERROR(
      driver_->Check(driver_->hipMallocManaged(&data, size, hipMemAttachGlobal),
                     "hipMallocManaged"));
  std::memset(data, 0, size);
  return data;
}

void HipManagedMemoryAllocator::Free(void* data) {
  (void)driver_->hipFree(data);
}

}  // namespace quadrants::amdgpu
