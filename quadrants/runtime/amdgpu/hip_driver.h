#ifndef QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_
#define QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/runtime/gpu/driver_library.h"

namespace quadrants::amdgpu {

// X(member, symbol): the HIP entry points Quadrants calls.
#define QD_HIP_DRIVER_FUNCTIONS(X)                    \
  X(hipInit, "hipInit")                               \
  X(hipGetErrorString, "hipGetErrorString")           \
  X(hipDriverGetVersion, "hipDriverGetVersion")       \
  X(hipGetDeviceCount, "hipGetDeviceCount")           \
  X(hipDeviceGetName, "hipDeviceGetName")             \
  X(hipSetDevice, "hipSetDevice")                     \
  X(hipGetDeviceProperties, "hipGetDeviceProperties") \
  X(hipDeviceSynchronize, "hipDeviceSynchronize")     \
  X(hipModuleLoadData, "hipModuleLoadData")           \
  X(hipModuleUnload, "hipModuleUnload")               \
  X(hipModuleGetFunction, "hipModuleGetFunction")     \
  X(hipModuleLaunchKernel, "hipModuleLaunchKernel")   \
  X(hipFree, "hipFree")                               \
  X(hipMemcpyHtoD, "hipMemcpyHtoD")                   \
  X(hipMemcpyDtoH, "hipMemcpyDtoH")

// X(member, symbol, type): entry points the C++ header overloads, so their C
// signature is spelled out.
using HipMallocFunction = hipError_t (*)(void**, size_t);
using HipMallocManagedFunction = hipError_t (*)(void**, size_t, unsigned int);
#define QD_HIP_DRIVER_OVERLOADED_FUNCTIONS(X)  \
  X(hipMalloc, "hipMalloc", HipMallocFunction) \
  X(hipMallocManaged, "hipMallocManaged", HipMallocManagedFunction)

// The loaded HIP runtime with device 0 selected, and what the backend needs
// to know about that device.
class HipDriver : public gpu::DriverLibrary {
 public:
  // Fails with an Unavailable error "AMDGPU not available: <reason>" when the
  // library, the driver or a device is missing.
  static absl::StatusOr<std::unique_ptr<HipDriver>> Load() {
    return LoadAs<HipDriver>("AMDGPU");
  }

  absl::Status Check(hipError_t result, const char* what) const;
  // The device's ISA without feature suffixes, e.g. "gfx90a".
  const std::string& gfx_target() const { return gfx_target_; }
  int resident_threads() const { return resident_threads_; }
  int64_t total_memory() const { return total_memory_; }

  QD_HIP_DRIVER_FUNCTIONS(QD_GPU_DECLARE_ENTRY)
#define QD_DECLARE_TYPED_MEMBER(member, symbol, type) type member = nullptr;
  QD_HIP_DRIVER_OVERLOADED_FUNCTIONS(QD_DECLARE_TYPED_MEMBER)
#undef QD_DECLARE_TYPED_MEMBER

 private:
  friend class gpu::DriverLibrary;
  HipDriver() = default;
  absl::Status Initialize();

  std::string gfx_target_;
  int resident_threads_ = 0;
  int64_t total_memory_ = 0;
};

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_
