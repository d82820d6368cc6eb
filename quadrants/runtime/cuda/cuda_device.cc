#include "quadrants/runtime/cuda/cuda_device.h"

#include <cstring>
#include <vector>

#include "quadrants/common/status_macros.h"

namespace quadrants::cuda {

absl::StatusOr<uint64_t> CudaDevice::Allocate(int64_t bytes) {
  CUdeviceptr address = 0;
  QD_RETURN_IF_ERROR(driver_->Check(
      driver_->cuMemAlloc(&address, static_cast<size_t>(bytes)), "cuMemAlloc"));
  return static_cast<uint64_t>(address);
}

void CudaDevice::Free(uint64_t address) {
  driver_->cuMemFree(static_cast<CUdeviceptr>(address));
}

absl::Status CudaDevice::CopyToDevice(uint64_t address, const void* data,
                                      int64_t bytes) {
  return driver_->Check(
      driver_->cuMemcpyHtoD(static_cast<CUdeviceptr>(address), data, bytes),
      "cuMemcpyHtoD");
}

absl::Status CudaDevice::CopyToHost(void* data, uint64_t address,
                                    int64_t bytes) {
  return driver_->Check(
      driver_->cuMemcpyDtoH(data, static_cast<CUdeviceptr>(address), bytes),
      "cuMemcpyDtoH");
}

absl::Status CudaDevice::Launch(const gpu::KernelLaunch& launch) {
  std::vector<void*> pointers;
  for (const uint64_t& value : launch.params)
    pointers.push_back(const_cast<uint64_t*>(&value));
  return driver_->Check(
      driver_->cuLaunchKernel(static_cast<CUfunction>(launch.function),
                              launch.grid, 1, 1, launch.block, 1, 1, 0, nullptr,
                              pointers.data(), nullptr),
      "cuLaunchKernel");
}

absl::Status CudaDevice::Synchronize() {
  return driver_->Check(driver_->cuCtxSynchronize(), "cuCtxSynchronize");
}

absl::StatusOr<void*> ManagedMemoryAllocator::Allocate(int64_t bytes) {
  CUdeviceptr ptr = 0;
  const size_t size = static_cast<size_t>((bytes + 255) / 256 * 256);
  QD_RETURN_IF_ERROR(driver_->Check(
      driver_->cuMemAllocManaged(&ptr, size, CU_MEM_ATTACH_GLOBAL),
      "cuMemAllocManaged"));
  void* data = reinterpret_cast<void*>(ptr);
  std::memset(data, 0, size);
  return data;
}

void ManagedMemoryAllocator::Free(void* data) {
  driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(data));
}

}  // namespace quadrants::cuda
