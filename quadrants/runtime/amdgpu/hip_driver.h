#ifndef QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_
#define QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_

#include <hip/hip_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/common/dynamic_library.h"

namespace quadrants::amdgpu {

// X(member, symbol): the HIP entry points Quadrants calls.
#define QD_HIP_DRIVER_FUNCTIONS(X)              \
  X(hipInit, "hipInit")                         \
  X(hipGetErrorString, "hipGetErrorString")     \
  X(hipDriverGetVersion, "hipDriverGetVersion") \
  X(hipGetDeviceCount, "hipGetDeviceCount")     \
  X(hipDeviceGetName, "hipDeviceGetName")

// The loaded HIP runtime with device 0 selected.
class HipDriver {
 public:
  // Fails with an Unavailable error "AMDGPU not available: <reason>" when the
  // library, the driver or a device is missing.
  static absl::StatusOr<std::unique_ptr<HipDriver>> Load();

  // Public for std::make_unique only; the Key keeps callers on Load().
  class Key {
    friend class HipDriver;
    Key() = default;
  };
  explicit HipDriver(Key) {}

  absl::Status Check(hipError_t result, const char* what) const;
  const std::string& device_name() const { return device_name_; }

#define QD_DECLARE_MEMBER(member, symbol) decltype(&::member) member = nullptr;
  QD_HIP_DRIVER_FUNCTIONS(QD_DECLARE_MEMBER)
#undef QD_DECLARE_MEMBER

 private:
  absl::Status Initialize();

  std::unique_ptr<DynamicLibrary> library_;
  std::string device_name_;
};

}  // namespace quadrants::amdgpu

#endif  // QUADRANTS_RUNTIME_AMDGPU_HIP_DRIVER_H_
