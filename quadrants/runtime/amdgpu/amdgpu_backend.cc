#include "quadrants/runtime/amdgpu/amdgpu_backend.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "quadrants/codegen/amdgpu/hsaco_compiler.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"
#include "quadrants/runtime/amdgpu/amdgpu_codegen.h"
#include "quadrants/runtime/amdgpu/codegen_only.h"
#include "quadrants/runtime/amdgpu/hip_driver.h"
#include "quadrants/runtime/gpu/driver.h"
#include "quadrants/runtime/gpu/driver_backend.h"
#include "quadrants/runtime/gpu/gpu_codegen.h"

namespace quadrants::amdgpu {
namespace {

hipDeviceptr_t DevicePointer(uint64_t address) {
  return reinterpret_cast<hipDeviceptr_t>(address);
}

// The shared GPU runtime's driver hooks over HIP: hipMalloc memory for
// everything kernels address, copies and module launches on the null
// stream, pinned staging from hipHostMalloc, code objects loaded as they
// are. Every entry point selects the device on the calling thread first.
class HipDevice final : public gpu::Driver {
 public:
  static constexpr int64_t kLds = 64 * 1024;
  explicit HipDevice(std::shared_ptr<HipDriver> driver)
      : hip_(std::move(driver)) {}

  absl::StatusOr<uint64_t> Allocate(int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    void* address = nullptr;
    absl::Status status = hip_->Check(
        hip_->hipMalloc(&address, static_cast<size_t>(bytes)), "hipMalloc");
    if (!status.ok()) {
      return MakeError(ErrorKind::kRuntime,
                       absl::StrCat("out of device memory for ", bytes,
                                    " bytes: ", status.message()));
    }
    return reinterpret_cast<uint64_t>(address);
  }
  void Free(uint64_t address) override {
    if (hip_->MakeCurrent().ok())
      (void)hip_->hipFree(reinterpret_cast<void*>(address));
  }
  absl::Status CopyToDevice(uint64_t address, const void* data,
                            int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(hip_->hipMemcpyHtoD(DevicePointer(address),
                                           const_cast<void*>(data), bytes),
                       "hipMemcpyHtoD");
  }
  absl::Status CopyToHost(void* data, uint64_t address,
                          int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(hip_->hipMemcpyDtoH(data, DevicePointer(address), bytes),
                       "hipMemcpyDtoH");
  }
  absl::Status CopyToDeviceAsync(uint64_t address, const void* pinned,
                                 int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(
        hip_->hipMemcpyHtoDAsync(DevicePointer(address),
                                 const_cast<void*>(pinned), bytes, nullptr),
        "hipMemcpyHtoDAsync");
  }
  absl::Status Zero(uint64_t address, int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(
        hip_->hipMemsetD8Async(DevicePointer(address), 0, bytes, nullptr),
        "hipMemsetD8Async");
  }
  absl::StatusOr<void*> AllocatePinned(int64_t bytes) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    void* data = nullptr;
    QD_RETURN_IF_ERROR(
        hip_->Check(hip_->hipHostMalloc(&data, static_cast<size_t>(bytes), 0),
                    "hipHostMalloc"));
    return data;
  }
  void FreePinned(void* data) override { (void)hip_->hipHostFree(data); }
  absl::Status Synchronize() override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(hip_->hipDeviceSynchronize(), "hipDeviceSynchronize");
  }

  absl::StatusOr<void*> LoadModule(const std::string& hsaco) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    hipModule_t module = nullptr;
    QD_RETURN_IF_ERROR(hip_->Check(
        hip_->hipModuleLoadData(&module, hsaco.data()), "hipModuleLoadData"));
    return static_cast<void*>(module);
  }
  void UnloadModule(void* module) override {
    (void)hip_->hipModuleUnload(static_cast<hipModule_t>(module));
  }
  absl::StatusOr<void*> Function(void* module,
                                 const std::string& name) override {
    hipFunction_t fn = nullptr;
    QD_RETURN_IF_ERROR(
        hip_->Check(hip_->hipModuleGetFunction(
                        &fn, static_cast<hipModule_t>(module), name.c_str()),
                    "hipModuleGetFunction"));
    return static_cast<void*>(fn);
  }

  // Read when the driver loaded.
  absl::StatusOr<gpu::DeviceLimits> Limits() override {
    return gpu::DeviceLimits{hip_->resident_threads(), hip_->total_memory()};
  }

  // Wave64 on the CDNA GPUs the backend compiles for.
  int SubgroupSize() const override { return 64; }
  absl::StatusOr<int64_t> MaxSharedBytes() override { return kLds; }
  // AMDGPU kernels take up to the device's LDS (64 KiB) without opting in.
  absl::Status AllowSharedMemory(void* function,
                                 int64_t shared_bytes) override {
    if (shared_bytes > kLds) {
      return absl::InvalidArgumentError(absl::StrCat(
          "its shared arrays take ", shared_bytes,
          " bytes of block-shared memory; AMDGPU allows ", kLds, " per block"));
    }
    return absl::OkStatus();
  }

 protected:
  absl::Status LaunchKernel(void* function, unsigned grid, unsigned block,
                            unsigned shared_bytes, void** params) override {
    QD_RETURN_IF_ERROR(hip_->MakeCurrent());
    return hip_->Check(hip_->hipModuleLaunchKernel(
                           static_cast<hipFunction_t>(function), grid, 1, 1,
                           block, 1, 1, shared_bytes, nullptr, params, nullptr),
                       "hipModuleLaunchKernel");
  }

 private:
  std::shared_ptr<HipDriver> hip_;
};

absl::StatusOr<std::unique_ptr<Backend>> CreateHipBackend(
    const CompileConfig& config) {
  QD_ASSIGN_OR_RETURN(std::shared_ptr<HipDriver> driver,
                      HipDriver::Load(config.device_id));
  QD_ASSIGN_OR_RETURN(auto compiler,
                      codegen::CreateHsacoCompiler(driver->gfx_target()));
  gpu::GpuCacheTarget cache_target = HsacoCacheTarget(*compiler);
  auto backend = std::make_unique<gpu::DriverBackend>(
      config, std::make_shared<HipDevice>(driver), std::move(compiler),
      std::move(cache_target));
  QD_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(
    const CompileConfig& config) {
  const std::vector<std::string> targets = CodegenOnlyTargets();
  if (!targets.empty())
    return CreateCodegenOnlyBackend(config, targets);
  return CreateHipBackend(config);
}

absl::Status ProbeBackend() {
  const std::vector<std::string> targets = CodegenOnlyTargets();
  if (!targets.empty())
    return CodegenOnlyCompiler::Create(targets).status();
  QD_ASSIGN_OR_RETURN(std::unique_ptr<HipDriver> driver, HipDriver::Load());
  return codegen::CreateHsacoCompiler(driver->gfx_target()).status();
}

}  // namespace quadrants::amdgpu
