#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <cuda.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/common/dynamic_library.h"

namespace quadrants::cuda {

// X(member, symbol): the driver entry points Quadrants calls. Symbols are the
// versioned names that cuda.h's macros resolve to.
#define QD_CUDA_DRIVER_FUNCTIONS(X)                            \
  X(cuInit, "cuInit")                                          \
  X(cuGetErrorString, "cuGetErrorString")                      \
  X(cuDriverGetVersion, "cuDriverGetVersion")                  \
  X(cuDeviceGetCount, "cuDeviceGetCount")                      \
  X(cuDeviceGet, "cuDeviceGet")                                \
  X(cuDeviceGetName, "cuDeviceGetName")                        \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")              \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                        \
  X(cuCtxSynchronize, "cuCtxSynchronize")                      \
  X(cuModuleLoadData, "cuModuleLoadData")                      \
  X(cuModuleUnload, "cuModuleUnload")                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                           \
  X(cuLaunchKernel, "cuLaunchKernel")                          \
  X(cuMemAllocManaged, "cuMemAllocManaged")                    \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx")                  \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2")                   \
  X(cuGraphCreate, "cuGraphCreate")                            \
  X(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2")           \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags")         \
  X(cuGraphLaunch, "cuGraphLaunch")                            \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")                  \
  X(cuGraphDestroy, "cuGraphDestroy")

// The loaded driver library with an initialized primary context on device 0.
class CudaDriver {
 public:
  // Loads libcuda, calls cuInit and retains device 0's primary context.
  // Fails with an Unavailable error "CUDA not available: <reason>" when the
  // library, the driver or a device is missing.
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load();

  // Public for std::make_unique only; the Key keeps callers on Load().
  class Key {
    friend class CudaDriver;
    Key() = default;
  };
  explicit CudaDriver(Key) {}
  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  // OK, or an error naming `what` and the driver's message for `result`.
  absl::Status Check(CUresult result, const char* what) const;

  CUdevice device() const { return device_; }
  const std::string& device_name() const { return device_name_; }
  int driver_version() const { return driver_version_; }
  // Compute capability as major * 10 + minor (e.g. 90 for sm_90).
  int compute_capability() const { return compute_capability_; }

#define QD_DECLARE_MEMBER(member, symbol) decltype(&::member) member = nullptr;
  QD_CUDA_DRIVER_FUNCTIONS(QD_DECLARE_MEMBER)
#undef QD_DECLARE_MEMBER

 private:
  absl::Status Initialize();

  std::unique_ptr<DynamicLibrary> library_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string device_name_;
  int driver_version_ = 0;
  int compute_capability_ = 0;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_
