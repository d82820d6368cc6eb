#include "quadrants/runtime/amdgpu/hip_driver.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::amdgpu {

absl::Status HipDriver::Initialize(int device_id) {
  QD_ASSIGN_OR_RETURN(
      library_, DynamicLibrary::Open({"libamdhip64.so.5", "libamdhip64.so"}));
  QD_HIP_DRIVER_FUNCTIONS(QD_GPU_LOAD_ENTRY)
#define QD_LOAD_TYPED_MEMBER(member, symbol, type) \
  QD_RETURN_IF_ERROR(library_->Load(symbol, &member));
  QD_HIP_DRIVER_OVERLOADED_FUNCTIONS(QD_LOAD_TYPED_MEMBER)
#undef QD_LOAD_TYPED_MEMBER
  QD_RETURN_IF_ERROR(Check(hipInit(0), "hipInit"));
  int count = 0;
  QD_RETURN_IF_ERROR(Check(hipGetDeviceCount(&count), "hipGetDeviceCount"));
  if (count == 0)
    return absl::UnavailableError("no AMD GPU found");
  if (device_id < 0 || device_id >= count) {
    return absl::UnavailableError(absl::StrCat(
        "device_id ", device_id, " names no GPU: this machine has ", count,
        " AMD GPU", count == 1 ? "" : "s", " (device_id 0 to ", count - 1,
        ")"));
  }
  device_ = device_id;
  QD_RETURN_IF_ERROR(MakeCurrent());
  QD_RETURN_IF_ERROR(
      Check(hipDriverGetVersion(&driver_version_), "hipDriverGetVersion"));
  char name[256] = {};
  QD_RETURN_IF_ERROR(
      Check(hipDeviceGetName(name, sizeof(name), device_), "hipDeviceGetName"));
  device_name_ = name;
  // Newer runtimes keep this entry point's layout and add fields at the
  // end of theirs; the spare room guards against a longer one anyway.
  struct {
    hipDeviceProp_t props;
    char spare[4096];
  } storage = {};
  QD_RETURN_IF_ERROR(Check(hipGetDeviceProperties(&storage.props, device_),
                           "hipGetDeviceProperties"));
  const hipDeviceProp_t& props = storage.props;
  const std::string arch(props.gcnArchName,
                         strnlen(props.gcnArchName, sizeof(props.gcnArchName)));
  gfx_target_ = arch.substr(0, arch.find(':'));  // "gfx90a:sramecc+:xnack-"
  if (gfx_target_.empty())
    return absl::UnavailableError("the device reports no GPU architecture");
  resident_threads_ =
      props.multiProcessorCount * props.maxThreadsPerMultiProcessor;
  total_memory_ = static_cast<int64_t>(props.totalGlobalMem);
  return absl::OkStatus();
}

absl::Status HipDriver::MakeCurrent() {
  return Check(hipSetDevice(device_), "hipSetDevice");
}

absl::Status HipDriver::Check(hipError_t result, const char* what) const {
  if (result == hipSuccess)
    return absl::OkStatus();
  return gpu::CallError(
      what, hipGetErrorString != nullptr ? hipGetErrorString(result) : nullptr,
      "hipError_t", static_cast<int>(result));
}

}  // namespace quadrants::amdgpu
