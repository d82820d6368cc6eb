#include "quadrants/runtime/vulkan/vulkan_device.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "quadrants/codegen/spirv/shader_abi.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/options.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::vulkan {
namespace {

using options::EnvFlag;
using options::Option;

// Workgroups per dispatch on a CPU device (see max_groups()).
constexpr uint32_t kCpuDeviceMaxGroups = 256;

absl::Status Unavailable(absl::string_view reason) {
  return MakeError(ErrorKind::kUnavailable,
                   absl::StrCat("Vulkan not available: ", reason));
}

struct Features {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  // Chains the structs (the atomic float one only with its extension).
  void Link(bool with_atomic_float) {
    base.pNext = &v11;
    v11.pNext = &v12;
    v12.pNext = with_atomic_float ? &atomic_float : nullptr;
    atomic_float.pNext = nullptr;
  }
};

bool HasExtension(const VulkanApi& api, VkPhysicalDevice device,
                  const char* name) {
  uint32_t count = 0;
  api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  api.vkEnumerateDeviceExtensionProperties(device, nullptr, &count,
                                           extensions.data());
  for (const auto& e : extensions) {
    if (std::strcmp(e.extensionName, name) == 0)
      return true;
  }
  return false;
}

}  // namespace

FeatureOverrides FeatureOverrides::FromEnvironment() {
  FeatureOverrides o;
  o.no_int64_atomics = EnvFlag(Option::kVulkanNoInt64Atomics);
  o.no_float_atomics = EnvFlag(Option::kVulkanNoFloatAtomics);
  o.no_float64 = EnvFlag(Option::kVulkanNoFloat64);
  o.force_staging = EnvFlag(Option::kVulkanForceStaging);
  o.no_subgroup_ops = EnvFlag(Option::kVulkanNoSubgroupOps);
  return o;
}

absl::StatusOr<std::unique_ptr<VulkanDevice>> VulkanDevice::Create(
    const FeatureOverrides& overrides) {
  auto device = std::make_unique<VulkanDevice>();
  QD_ASSIGN_OR_RETURN(device->api_, VulkanApi::Load());
  QD_RETURN_IF_ERROR(device->Initialize(overrides));
  return device;
}

absl::Status VulkanDevice::Initialize(const FeatureOverrides& overrides) {
  const VulkanApi& api = *api_;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "quadrants";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  // Validation layers are optional: on when installed.
  const char* validation = "VK_LAYER_KHRONOS_validation";
  uint32_t layer_count = 0;
  api.vkEnumerateInstanceLayerProperties(&layer_count, nullptr);
  std::vector<VkLayerProperties> layers(layer_count);
  api.vkEnumerateInstanceLayerProperties(&layer_count, layers.data());
  for (const auto& layer : layers) {
    if (std::strcmp(layer.layerName, validation) == 0 &&
        !EnvFlag(Option::kVulkanNoValidation)) {
      info.enabledLayerCount = 1;
      info.ppEnabledLayerNames = &validation;
    }
  }
  VkResult created = api.vkCreateInstance(&info, nullptr, &instance_);
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER) {
    return Unavailable(
        "the Vulkan loader found no driver (ICD) for Vulkan 1.2; install "
        "one, e.g. mesa-vulkan-drivers for the lavapipe CPU device");
  }
  if (created != VK_SUCCESS) {
    return Unavailable(VulkanApi::Check(created, "vkCreateInstance").message());
  }
  QD_RETURN_IF_ERROR(api_->LoadInstanceFunctions(instance_));

  uint32_t count = 0;
  api.vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  api.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  if (count == 0) {
    return Unavailable(
        "the Vulkan loader found no device (no driver/ICD installed? e.g. "
        "mesa-vulkan-drivers for the lavapipe CPU device)");
  }
  std::string rejected;
  int best_rank = -1;
  for (VkPhysicalDevice candidate : devices) {
    VkPhysicalDeviceProperties props;
    api.vkGetPhysicalDeviceProperties(candidate, &props);
    Features f;
    f.Link(false);
    api.vkGetPhysicalDeviceFeatures2(candidate, &f.base);
    std::string missing;
    if (props.apiVersion < VK_API_VERSION_1_2)
      missing = "Vulkan 1.2";
    else if (!f.v12.bufferDeviceAddress)
      missing = "bufferDeviceAddress";
    else if (!f.base.features.shaderInt64)
      missing = "shaderInt64";
    uint32_t families = 0;
    api.vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, nullptr);
    std::vector<VkQueueFamilyProperties> family_props(families);
    api.vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families,
                                                 family_props.data());
    int family = -1;
    for (uint32_t q = 0; q < families; ++q) {
      if (family_props[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        family = static_cast<int>(q);
        break;
      }
    }
    if (missing.empty() && family < 0)
      missing = "a compute queue";
    if (!missing.empty()) {
      absl::StrAppend(&rejected, rejected.empty() ? "" : "; ", props.deviceName,
                      " lacks ", missing);
      continue;
    }
    const int rank = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : 1;
    if (rank > best_rank) {
      best_rank = rank;
      max_groups_ = rank == 0 ? kCpuDeviceMaxGroups : 65535;
      cpu_device_ = rank == 0;
      physical_ = candidate;
      queue_family_ = static_cast<uint32_t>(family);
      caps_.device_name = props.deviceName;
      driver_version_ = props.driverVersion;
      vendor_id_ = props.vendorID;
      api_version_ = props.apiVersion;
    }
  }
  if (physical_ == VK_NULL_HANDLE)
    return Unavailable(
        absl::StrCat("no usable Vulkan device (", rejected, ")"));

  const bool has_atomic_float =
      HasExtension(api, physical_, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
  Features available;
  available.Link(has_atomic_float);
  api.vkGetPhysicalDeviceFeatures2(physical_, &available.base);
  caps_.int8 =
      available.v12.shaderInt8 && available.v12.storageBuffer8BitAccess;
  caps_.int16 = available.base.features.shaderInt16 &&
                available.v11.storageBuffer16BitAccess;
  caps_.float16 =
      available.v12.shaderFloat16 && available.v11.storageBuffer16BitAccess;
  caps_.float64 =
      available.base.features.shaderFloat64 && !overrides.no_float64;
  caps_.int64_atomics =
      available.v12.shaderBufferInt64Atomics && !overrides.no_int64_atomics;
  caps_.float32_atomic_add =
      has_atomic_float && available.atomic_float.shaderBufferFloat32AtomicAdd &&
      !overrides.no_float_atomics;
  caps_.float64_atomic_add =
      has_atomic_float && caps_.float64 &&
      available.atomic_float.shaderBufferFloat64AtomicAdd &&
      !overrides.no_float_atomics;

  caps_.shared_int64_atomics =
      available.v12.shaderSharedInt64Atomics && !overrides.no_int64_atomics;
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &subgroup;
  api.vkGetPhysicalDeviceProperties2(physical_, &properties);
  subgroup_size_ = static_cast<int>(subgroup.subgroupSize);
  max_shared_bytes_ =
      properties.properties.limits.maxComputeSharedMemorySize;
  const VkSubgroupFeatureFlags arithmetic =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  caps_.subgroup_arithmetic =
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      (subgroup.supportedOperations & arithmetic) == arithmetic &&
      !overrides.no_subgroup_ops;

  // Enable exactly what code generation may use.
  Features enable;
  enable.Link(has_atomic_float);
  enable.base.features.shaderInt64 = VK_TRUE;
  enable.base.features.shaderInt16 = caps_.int16;
  enable.base.features.shaderFloat64 = caps_.float64;
  enable.v11.storageBuffer16BitAccess = caps_.int16 || caps_.float16;
  enable.v12.bufferDeviceAddress = VK_TRUE;
  enable.v12.shaderInt8 = caps_.int8;
  enable.v12.storageBuffer8BitAccess = caps_.int8;
  enable.v12.shaderFloat16 = caps_.float16;
  enable.v12.shaderBufferInt64Atomics = caps_.int64_atomics;
  enable.v12.shaderSharedInt64Atomics = caps_.shared_int64_atomics;
  enable.atomic_float.shaderBufferFloat32AtomicAdd = caps_.float32_atomic_add;
  enable.atomic_float.shaderBufferFloat64AtomicAdd = caps_.float64_atomic_add;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{
      VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  const char* extension = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
  VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  device_info.pNext = &enable.base;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = has_atomic_float ? 1 : 0;
  device_info.ppEnabledExtensionNames = &extension;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkCreateDevice(physical_, &device_info, nullptr, &device_),
      "vkCreateDevice"));
  api.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_family_;
  QD_RETURN_IF_ERROR(VulkanApi::Check(
      api.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_),
      "vkCreateCommandPool"));

  VkPhysicalDeviceMemoryProperties memory;
  api.vkGetPhysicalDeviceMemoryProperties(physical_, &memory);
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int host_type = -1, device_type = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((flags & host) == host && host_type < 0)
      host_type = static_cast<int>(i);
    if ((flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && device_type < 0)
      device_type = static_cast<int>(i);
  }
  if (host_type < 0)
    return Unavailable("the device has no host-visible coherent memory");
  host_memory_type_ = static_cast<uint32_t>(host_type);
  device_memory_type_ =
      static_cast<uint32_t>(device_type >= 0 ? device_type : host_type);
  const VkMemoryPropertyFlags device_flags =
      memory.memoryTypes[device_memory_type_].propertyFlags;
  device_memory_mappable_ =
      (device_flags & host) == host && !overrides.force_staging;
  return absl::OkStatus();
}

VulkanDevice::~VulkanDevice() {
  if (api_ == nullptr)
    return;
  if (device_ != VK_NULL_HANDLE) {
    api_->vkDeviceWaitIdle(device_);
    if (command_pool_ != VK_NULL_HANDLE)
      api_->vkDestroyCommandPool(device_, command_pool_, nullptr);
    api_->vkDestroyDevice(device_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE && api_->vkDestroyInstance != nullptr)
    api_->vkDestroyInstance(instance_, nullptr);
}

std::string VulkanDevice::Description() const {
  return absl::StrCat(caps_.device_name, " driver=", driver_version_,
                      " api=", VK_API_VERSION_MAJOR(api_version_), ".",
                      VK_API_VERSION_MINOR(api_version_), ".",
                      VK_API_VERSION_PATCH(api_version_));
}

std::string VulkanDevice::ReadableDescription() const {
  constexpr uint32_t kNvidia = 0x10de;
  const uint32_t v = driver_version_;
  const std::string driver =
      vendor_id_ == kNvidia
          ? absl::StrFormat("%u.%u.%02u", v >> 22, (v >> 14) & 0xff,
                            (v >> 6) & 0xff)
          : absl::StrCat(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v),
                         ".", VK_API_VERSION_PATCH(v));
  return absl::StrCat(caps_.device_name, ", driver ", driver, ", Vulkan ",
                      VK_API_VERSION_MAJOR(api_version_), ".",
                      VK_API_VERSION_MINOR(api_version_), ".",
                      VK_API_VERSION_PATCH(api_version_));
}

int64_t VulkanDevice::concurrent_invocations() const {
  if (cpu_device_) {
    return int64_t{std::max(1u, std::thread::hardware_concurrency())} *
           codegen::spirv::abi::kBlockSize;
  }
  return int64_t{1} << 18;
}

}  // namespace quadrants::vulkan
