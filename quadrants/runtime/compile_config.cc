#include "quadrants/runtime/compile_config.h"

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants {

absl::string_view ArchName(Arch arch) {
  switch (arch) {
    case Arch::kCpu:
      return "cpu";
    case Arch::kCuda:
      return "cuda";
    case Arch::kAmdgpu:
      return "amdgpu";
    case Arch::kVulkan:
      return "vulkan";
    case Arch::kMetal:
      return "metal";
  }
  return "?";
}

absl::StatusOr<Arch> ParseArch(absl::string_view name) {
  for (Arch arch :
       {Arch::kCpu, Arch::kCuda, Arch::kAmdgpu, Arch::kVulkan, Arch::kMetal}) {
    if (ArchName(arch) == name)
      return arch;
  }
  if (name == "x64")
    return Arch::kCpu;
  return MakeError(
      ErrorKind::kType,
      absl::StrCat("unknown arch '", name,
                   "' (expected cpu, x64, cuda, amdgpu, vulkan or metal)"));
}

uint64_t CompileConfig::CodegenHash() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
  };
  mix(static_cast<uint64_t>(arch));
  mix(debug);
  mix(checks_bounds());
  mix(static_cast<uint64_t>(default_fp));
  mix(static_cast<uint64_t>(default_ip));
  mix(ad_stack_experimental_enabled);
  mix(static_cast<uint64_t>(ad_stack_size));
  mix(static_cast<uint64_t>(default_ad_stack_size));
  return h;
}

}  // namespace quadrants
