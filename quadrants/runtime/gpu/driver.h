#ifndef QUADRANTS_RUNTIME_GPU_DRIVER_H_
#define QUADRANTS_RUNTIME_GPU_DRIVER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "quadrants/runtime/gpu/device.h"

namespace quadrants::gpu {

// What the launcher sizes work and the adstack heap by.
struct DeviceLimits {
  int resident_threads = 1;
  int64_t total_memory = 0;  // bytes
};

// A vendor driver API (CUDA's driver API, HIP) as the shared GPU runtime
// calls it: the launcher's device interface plus modules and the device's
// limits. Each GPU backend implements these hooks over its
// dlopen'd function table; module and function handles are the driver's,
// opaque here. Errors name the driver call that failed.
class Driver : public Device {
 public:
  // Loads a compiled module (PTX text, an HSACO code object).
  virtual absl::StatusOr<void*> LoadModule(const std::string& binary) = 0;
  virtual void UnloadModule(void* module) = 0;
  virtual absl::StatusOr<void*> Function(void* module,
                                         const std::string& name) = 0;
  virtual absl::StatusOr<DeviceLimits> Limits() = 0;
  // Threads per subgroup (warp, wavefront) and the most block-shared
  // memory one block may take, in bytes.
  virtual int SubgroupSize() const = 0;
  virtual absl::StatusOr<int64_t> MaxSharedBytes() = 0;
  // Lets `function` take `shared_bytes` of dynamic block-shared memory;
  // an error names the device's limit when it allows less.
  virtual absl::Status AllowSharedMemory(void* function,
                                         int64_t shared_bytes) = 0;

  absl::Status Launch(const KernelLaunch& launch) final {
    std::vector<void*> params = ParamPointers(launch);
    return LaunchKernel(launch.function, launch.grid, launch.block,
                        launch.shared_bytes, params.data());
  }

  // Pointers to each parameter value, as the drivers take them.
  static std::vector<void*> ParamPointers(const KernelLaunch& launch) {
    std::vector<void*> pointers;
    for (const uint64_t& value : launch.params)
      pointers.push_back(const_cast<uint64_t*>(&value));
    return pointers;
  }

 protected:
  // Queues a 1-D launch on the default stream.
  virtual absl::Status LaunchKernel(void* function, unsigned grid,
                                    unsigned block, unsigned shared_bytes,
                                    void** params) = 0;
};

}  // namespace quadrants::gpu

#endif  // QUADRANTS_RUNTIME_GPU_DRIVER_H_
