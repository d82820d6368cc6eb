#ifndef QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_
#define QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_

#include <cuda.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/runtime/gpu/driver_library.h"

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
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                        \
  X(cuCtxSynchronize, "cuCtxSynchronize")                      \
  X(cuCtxSetLimit, "cuCtxSetLimit")                            \
  X(cuModuleLoadData, "cuModuleLoadData")                      \
  X(cuModuleUnload, "cuModuleUnload")                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2")                           \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                 \
  X(cuMemsetD8Async, "cuMemsetD8Async")                        \
  X(cuMemHostAlloc, "cuMemHostAlloc")                          \
  X(cuMemFreeHost, "cuMemFreeHost")                            \
  X(cuLaunchKernel, "cuLaunchKernel")                          \
  X(cuFuncSetAttribute, "cuFuncSetAttribute")                  \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx")                  \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2")                   \
  X(cuGraphCreate, "cuGraphCreate")                            \
  X(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2")           \
  X(cuGraphAddEmptyNode, "cuGraphAddEmptyNode")                \
  X(cuStreamCreate, "cuStreamCreate")                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                     \
  X(cuStreamSynchronize, "cuStreamSynchronize")                \
  X(cuEventCreate, "cuEventCreate")                            \
  X(cuEventDestroy, "cuEventDestroy_v2")                       \
  X(cuEventRecord, "cuEventRecord")                            \
  X(cuEventSynchronize, "cuEventSynchronize")                  \
  X(cuStreamWaitEvent, "cuStreamWaitEvent")                    \
  X(cuGraphInstantiate, "cuGraphInstantiateWithFlags")         \
  X(cuGraphLaunch, "cuGraphLaunch")                            \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")                  \
  X(cuGraphDestroy, "cuGraphDestroy")                         \
  X(cuMemAddressReserve, "cuMemAddressReserve")               \
  X(cuMemAddressFree, "cuMemAddressFree")                     \
  X(cuMemCreate, "cuMemCreate")                               \
  X(cuMemRelease, "cuMemRelease")                             \
  X(cuMemMap, "cuMemMap")                                     \
  X(cuMemUnmap, "cuMemUnmap")                                 \
  X(cuMemSetAccess, "cuMemSetAccess")                         \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")

// Entry points of newer drivers, null where the driver lacks them.
#define QD_CUDA_OPTIONAL_DRIVER_FUNCTIONS(X)                            \
  X(cuGraphConditionalHandleCreate, "cuGraphConditionalHandleCreate") \
  X(cuGraphAddNode, "cuGraphAddNode_v2")

// The loaded driver library with an initialized primary context on one
// device.
class CudaDriver : public gpu::DriverLibrary {
 public:
  // Loads libcuda, calls cuInit and retains device `device_id`'s primary
  // context. Fails with an Unavailable error "CUDA not available: <reason>"
  // when the library, the driver or a device is missing, or the id names
  // no device (the reason says how many there are).
  static absl::StatusOr<std::unique_ptr<CudaDriver>> Load(int device_id = 0) {
    return LoadAs<CudaDriver>("CUDA", device_id);
  }
  // The driver of device `device_id`, loaded once per process: its primary
  // context then lives from the first probe or qd.init to the process's
  // end, instead of being created again (hundreds of milliseconds) by the
  // probe and by every qd.init after it. Libraries that run on the
  // session's device (cuSOLVER) share it.
  static absl::StatusOr<std::shared_ptr<CudaDriver>> Shared(int device_id);
  ~CudaDriver();

  // OK, or an error naming `what` and the driver's message for `result`.
  absl::Status Check(CUresult result, const char* what) const;

  // Makes the primary context current on the calling thread. The driver
  // keeps the current context per thread and kernels may be launched from
  // any Python thread, so every entry point of the device calls this first.
  absl::Status MakeCurrent();

  CUdevice device() const { return device_; }
  // Compute capability as major * 10 + minor (e.g. 90 for sm_90).
  int compute_capability() const { return compute_capability_; }
  CUcontext context() const { return context_; }
  // Graphs with conditional while nodes set from device code (CUDA 12.4
  // drivers and later).
  bool has_conditional_nodes() const {
    return driver_version_ >= 12040 &&
           cuGraphConditionalHandleCreate != nullptr &&
           cuGraphAddNode != nullptr;
  }

  QD_CUDA_DRIVER_FUNCTIONS(QD_GPU_DECLARE_ENTRY)
  QD_CUDA_OPTIONAL_DRIVER_FUNCTIONS(QD_GPU_DECLARE_ENTRY)

 private:
  friend class gpu::DriverLibrary;
  CudaDriver() = default;
  absl::Status Initialize(int device_id);

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int compute_capability_ = 0;
};

}  // namespace quadrants::cuda

#endif  // QUADRANTS_RUNTIME_CUDA_CUDA_DRIVER_H_
