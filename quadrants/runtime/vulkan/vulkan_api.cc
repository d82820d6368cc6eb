#include "quadrants/runtime/vulkan/vulkan_api.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/common/status_macros.h"

namespace quadrants::vulkan {

absl::StatusOr<std::unique_ptr<VulkanApi>> VulkanApi::Load() {
  auto api = std::make_unique<VulkanApi>();
  absl::StatusOr<std::unique_ptr<DynamicLibrary>> library =
      DynamicLibrary::Open({"libvulkan.so.1", "libvulkan.so"});
  if (!library.ok()) {
    return MakeError(
        ErrorKind::kUnavailable,
        absl::StrCat("Vulkan not available: no Vulkan loader (",
                     library.status().message(), "; install libvulkan1)"));
  }
  api->library_ = *std::move(library);
  if (absl::Status s = api->library_->Load("vkGetInstanceProcAddr",
                                           &api->vkGetInstanceProcAddr);
      !s.ok()) {
    return MakeError(ErrorKind::kUnavailable,
                     absl::StrCat("Vulkan not available: ", s.message()));
  }
#define QD_LOAD_GLOBAL(name)                                           \
  api->name = reinterpret_cast<PFN_##name>(                            \
      api->vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));              \
  if (api->name == nullptr) {                                          \
    return MakeError(ErrorKind::kUnavailable,                          \
                     "Vulkan not available: the loader lacks " #name); \
  }
  QD_VULKAN_GLOBAL_FUNCTIONS(QD_LOAD_GLOBAL)
#undef QD_LOAD_GLOBAL
  return api;
}

absl::Status VulkanApi::LoadInstanceFunctions(VkInstance instance) {
#define QD_LOAD_INSTANCE(name)                                                 \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name)); \
  if (name == nullptr) {                                                       \
    return MakeError(ErrorKind::kUnavailable,                                  \
                     "Vulkan not available: the loader lacks " #name);         \
  }
  QD_VULKAN_INSTANCE_FUNCTIONS(QD_LOAD_INSTANCE)
#undef QD_LOAD_INSTANCE
  return absl::OkStatus();
}

absl::Status VulkanApi::Check(VkResult result, const char* what) {
  if (result == VK_SUCCESS)
    return absl::OkStatus();
  const char* name = "VkResult";
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      name = "VK_ERROR_OUT_OF_HOST_MEMORY";
      break;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      name = "VK_ERROR_OUT_OF_DEVICE_MEMORY";
      break;
    case VK_ERROR_INITIALIZATION_FAILED:
      name = "VK_ERROR_INITIALIZATION_FAILED";
      break;
    case VK_ERROR_DEVICE_LOST:
      name = "VK_ERROR_DEVICE_LOST";
      break;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      name = "VK_ERROR_INCOMPATIBLE_DRIVER";
      break;
    case VK_ERROR_FEATURE_NOT_PRESENT:
      name = "VK_ERROR_FEATURE_NOT_PRESENT";
      break;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      name = "VK_ERROR_EXTENSION_NOT_PRESENT";
      break;
    case VK_ERROR_LAYER_NOT_PRESENT:
      name = "VK_ERROR_LAYER_NOT_PRESENT";
      break;
    case VK_TIMEOUT:
      name = "VK_TIMEOUT";
      break;
    default:
      break;
  }
  return MakeError(ErrorKind::kRuntime,
                   absl::StrCat(what, " failed: ", name, " (",
                                static_cast<int>(result), ")"));
}

}  // namespace quadrants::vulkan
