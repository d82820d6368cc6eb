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
  X(hipMemcpyDtoH, "hipMemcpyDtoH")                   \
  X(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync")         \
  X(hipMemsetD8Async, "hipMemsetD8Async")             \
  X(hipHostFree, "hipHostFree")

// X(member, symbol, type): entry points the C++ header overloads, so their C
// signature is spelled out.
using HipMallocFunction = hipError_t (*)(void**, size_t);
using HipHostMallocFunction = hipError_t (*)(void**, size_t, unsigned int);
#define QD_HIP_DRIVER_OVERLOADED_FUNCTIONS(X)  \
  X(hipMalloc, "hipMalloc", HipMallocFunction) \
  X(hipHostMalloc, "hipHostMalloc", HipHostMallocFunction)

// The loaded HIP runtime with one device selected, and what the backend
// needs to know about that device.
class HipDriver : public gpu::DriverLibrary {
 public:
  // Fails with an Unavailable error "AMDGPU not available: <reason>" when the
  // library, the driver or a device is missing.
  static absl::StatusOr<std::unique_ptr<HipDriver>> Load(int device_id = 0) {
    return LoadAs<HipDriver>("AMDGPU", device_id);
  }

  absl::Status Check(hipError_t result, const char* what) const;
  // Selects the device on the calling thread: HIP keeps the current device
  // per thread, and kernels may be launched from any Python thread.
  absl::Status MakeCurrent();
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
  absl::Status Initialize(int device_id);

  int device_ = 0;
  std::string gfx_target_;
  int resident_threads_ = 0;
  int64_t total_memory_ = 0;
};

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_
