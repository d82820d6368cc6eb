#include "quadrants/runtime/cuda/cuda_driver.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::cuda {

absl::Status CudaDriver::Initialize(int device_id) {
  QD_ASSIGN_OR_RETURN(library_,
                      DynamicLibrary::Open({"libcuda.so.1", "libcuda.so"}));
  QD_CUDA_DRIVER_FUNCTIONS(QD_GPU_LOAD_ENTRY)
#define QD_CUDA_LOAD_OPTIONAL(member, symbol) \
  (void)library_->Load(symbol, &member);
  QD_CUDA_OPTIONAL_DRIVER_FUNCTIONS(QD_CUDA_LOAD_OPTIONAL)
#undef QD_CUDA_LOAD_OPTIONAL
  QD_RETURN_IF_ERROR(Check(cuInit(0), "cuInit"));
  QD_RETURN_IF_ERROR(
      Check(cuDriverGetVersion(&driver_version_), "cuDriverGetVersion"));
  int count = 0;
  QD_RETURN_IF_ERROR(Check(cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0)
    return absl::UnavailableError("no CUDA device found");
  if (device_id < 0 || device_id >= count) {
    return absl::UnavailableError(absl::StrCat(
        "device_id ", device_id, " names no GPU: this machine has ", count,
        " CUDA GPU", count == 1 ? "" : "s", " (device_id 0 to ", count - 1,
        ")"));
  }
  QD_RETURN_IF_ERROR(Check(cuDeviceGet(&device_, device_id), "cuDeviceGet"));
  char name[256] = {};
  QD_RETURN_IF_ERROR(
      Check(cuDeviceGetName(name, sizeof(name), device_), "cuDeviceGetName"));
  device_name_ = name;
  int major = 0, minor = 0;
  QD_RETURN_IF_ERROR(
      Check(cuDeviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
            "cuDeviceGetAttribute"));
  QD_RETURN_IF_ERROR(
      Check(cuDeviceGetAttribute(
                &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
            "cuDeviceGetAttribute"));
  compute_capability_ = major * 10 + minor;
  QD_RETURN_IF_ERROR(Check(cuDevicePrimaryCtxRetain(&context_, device_),
                           "cuDevicePrimaryCtxRetain"));
  return Check(cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

absl::Status CudaDriver::MakeCurrent() {
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
    return absl::OkStatus();
  return Check(cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

CudaDriver::~CudaDriver() {
  if (context_ != nullptr)
    cuDevicePrimaryCtxRelease(device_);
}

absl::Status CudaDriver::Check(CUresult result, const char* what) const {
  if (result == CUDA_SUCCESS)
    return absl::OkStatus();
  const char* message = nullptr;
  if (cuGetErrorString == nullptr ||
      cuGetErrorString(result, &message) != CUDA_SUCCESS) {
    message = nullptr;
  }
  return gpu::CallError(what, message, "CUresult", static_cast<int>(result));
}

absl::StatusOr<std::shared_ptr<CudaDriver>> CudaDriver::Shared(int device_id) {
  static absl::Mutex mutex(absl::kConstInit);
  static auto* drivers = new std::map<int, std::shared_ptr<CudaDriver>>();
  absl::MutexLock lock(&mutex);
  auto found = drivers->find(device_id);
  if (found != drivers->end())
    return found->second;
  QD_ASSIGN_OR_RETURN(std::unique_ptr<CudaDriver> loaded, Load(device_id));
  std::shared_ptr<CudaDriver> driver = std::move(loaded);
  (*drivers)[device_id] = driver;
  return driver;
}

}  // namespace quadrants::cuda
