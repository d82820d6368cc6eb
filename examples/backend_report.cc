// Reports which Quadrants backends can run on this machine, probing each one
// for real: JIT-compiles and runs a function for the CPU, enumerates Vulkan
// devices, and loads the CUDA and HIP drivers.
#include <vulkan/vulkan.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "quadrants/runtime/amdgpu/hip_driver.h"
#include "quadrants/runtime/cuda/cuda_driver.h"

namespace {

// JIT-compiles saxpy(a, x, y) = a * x + y for doubles and evaluates it.
std::string ProbeCpu() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("probe", *context);
  llvm::Type* f64 = llvm::Type::getDoubleTy(*context);
  auto* fn = llvm::Function::Create(
      llvm::FunctionType::get(f64, {f64, f64, f64}, false),
      llvm::Function::ExternalLinkage, "saxpy", *module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(*context, "entry", fn));
  b.CreateRet(
      b.CreateFAdd(b.CreateFMul(fn->getArg(0), fn->getArg(1)), fn->getArg(2)));
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return "unavailable: " + llvm::toString(jit.takeError());
  if (auto err = (*jit)->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
    return "unavailable: " + llvm::toString(std::move(err));
  }
  auto symbol = (*jit)->lookup("saxpy");
  if (!symbol)
    return "unavailable: " + llvm::toString(symbol.takeError());
  double result = symbol->toPtr<double (*)(double, double, double)>()(2, 3, 1);
  return absl::StrCat("ready: LLVM ", LLVM_VERSION_STRING, " ORC JIT on ",
                      std::string(llvm::sys::getHostCPUName()),
                      ", saxpy(2, 3, 1) = ", result);
}

std::string ProbeVulkan() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  VkInstance instance;
  if (vkCreateInstance(&info, nullptr, &instance) != VK_SUCCESS) {
    return "unavailable: vkCreateInstance failed (no Vulkan driver)";
  }
  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance, &count, devices.data());
  std::string names;
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(device, &props);
    absl::StrAppend(&names, names.empty() ? "" : ", ", props.deviceName);
  }
  vkDestroyInstance(instance, nullptr);
  if (count == 0)
    return "unavailable: no Vulkan device";
  return "ready: " + names;
}

std::string ProbeCuda() {
  auto driver = quadrants::cuda::CudaDriver::Load();
  if (!driver.ok())
    return std::string(driver.status().message());
  return absl::StrCat("ready: ", (*driver)->device_name(), " (sm_",
                      (*driver)->compute_capability(), ")");
}

std::string ProbeAmdgpu() {
  auto driver = quadrants::amdgpu::HipDriver::Load();
  if (!driver.ok())
    return std::string(driver.status().message());
  return "ready: " + (*driver)->device_name();
}

}  // namespace

int main() {
  std::printf("Quadrants backends on this machine\n");
  std::printf("  cpu     %s\n", ProbeCpu().c_str());
  std::printf("  vulkan  %s\n", ProbeVulkan().c_str());
  std::printf("  metal   MSL generation only (Metal runs on macOS)\n");
  std::printf("  cuda    %s\n", ProbeCuda().c_str());
  std::printf("  amdgpu  %s\n", ProbeAmdgpu().c_str());
  return 0;
}
