#include "quadrants/runtime/cuda/cuda_growable_memory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::cuda {
namespace {

size_t RoundUp(size_t value, size_t step) {
  return (value + step - 1) / step * step;
}

CUmemAllocationProp DeviceProperties(CUdevice device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

CudaGrowableMemory::~CudaGrowableMemory() {
  absl::MutexLock lock(&mutex_);
  if (!ranges_.empty() && !cu_->MakeCurrent().ok())
    return;
  for (auto& [address, range] : ranges_)
    Release(range);
  ranges_.clear();
}

absl::StatusOr<uint64_t> CudaGrowableMemory::Allocate(int64_t bytes,
                                                      int64_t max_bytes) {
  QD_RETURN_IF_ERROR(cu_->MakeCurrent());
  int supported = 0;
  cu_->cuDeviceGetAttribute(
      &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
      cu_->device());
  if (!supported)
    return 0;
  absl::MutexLock lock(&mutex_);
  if (granularity_ == 0) {
    CUmemAllocationProp prop = DeviceProperties(cu_->device());
    if (cu_->cuMemGetAllocationGranularity(
            &granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS ||
        granularity_ == 0) {
      granularity_ = 0;
      return 0;
    }
  }
  Range range;
  range.reserved =
      granularity_ +
      RoundUp(static_cast<size_t>(std::max(bytes, max_bytes)) + kSlackBytes,
              granularity_);
  CUdeviceptr base = 0;
  if (cu_->cuMemAddressReserve(&base, range.reserved, 0, 0, 0) !=
      CUDA_SUCCESS) {
    return 0;  // no room to reserve: an ordinary allocation
  }
  range.base = static_cast<uint64_t>(base);
  absl::Status mapped = MapChunk(
      range, RoundUp(granularity_ + static_cast<size_t>(bytes) + kSlackBytes,
                     granularity_));
  if (!mapped.ok()) {
    Release(range);
    return mapped;
  }
  const uint64_t address = range.base + granularity_;
  ranges_[address] = std::move(range);
  return address;
}

absl::Status CudaGrowableMemory::Grow(uint64_t address, int64_t new_bytes) {
  QD_RETURN_IF_ERROR(cu_->MakeCurrent());
  absl::MutexLock lock(&mutex_);
  auto it = ranges_.find(address);
  if (it == ranges_.end()) {
    return MakeError(ErrorKind::kRuntime,
                     "growing device memory that was not reserved to grow");
  }
  Range& range = it->second;
  const size_t want =
      RoundUp(granularity_ + static_cast<size_t>(new_bytes) + kSlackBytes,
              granularity_);
  if (want <= range.mapped)
    return absl::OkStatus();
  if (want > range.reserved) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("growing to ", new_bytes, " bytes passes the ",
                                  range.reserved, " bytes reserved for it"));
  }
  return MapChunk(range, want - range.mapped);
}

bool CudaGrowableMemory::Free(uint64_t address) {
  absl::MutexLock lock(&mutex_);
  auto it = ranges_.find(address);
  if (it == ranges_.end())
    return false;
  if (cu_->MakeCurrent().ok()) {
    cu_->cuCtxSynchronize();  // launches may still use it
    Release(it->second);
  }
  ranges_.erase(it);
  return true;
}

absl::Status CudaGrowableMemory::MapChunk(Range& range, size_t bytes) {
  bytes = RoundUp(std::max<size_t>(bytes, 1), granularity_);
  const uint64_t at = range.base + range.mapped;
  CUmemAllocationProp prop = DeviceProperties(cu_->device());
  CUmemGenericAllocationHandle handle = 0;
  absl::Status status =
      cu_->Check(cu_->cuMemCreate(&handle, bytes, &prop, 0), "cuMemCreate");
  if (!status.ok()) {
    return MakeError(ErrorKind::kRuntime,
                     absl::StrCat("out of device memory for ", bytes,
                                  " bytes: ", status.message()));
  }
  status = cu_->Check(cu_->cuMemMap(at, bytes, 0, handle, 0), "cuMemMap");
  if (!status.ok()) {
    cu_->cuMemRelease(handle);
    return status;
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  status = cu_->Check(cu_->cuMemSetAccess(at, bytes, &access, 1),
                      "cuMemSetAccess");
  if (status.ok()) {
    // Queued behind the launches so far, like every copy and launch after.
    status = cu_->Check(cu_->cuMemsetD8Async(at, 0, bytes, nullptr),
                        "cuMemsetD8Async");
  }
  if (!status.ok()) {
    cu_->cuMemUnmap(at, bytes);
    cu_->cuMemRelease(handle);
    return status;
  }
  range.chunks.push_back({handle, at, bytes});
  range.mapped += bytes;
  return absl::OkStatus();
}

void CudaGrowableMemory::Release(Range& range) {
  for (const Chunk& chunk : range.chunks) {
    cu_->cuMemUnmap(chunk.address, chunk.bytes);
    cu_->cuMemRelease(chunk.handle);
  }
  range.chunks.clear();
  cu_->cuMemAddressFree(range.base, range.reserved);
}

}  // namespace quadrants::cuda
