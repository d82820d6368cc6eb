#include "quadrants/runtime/compile_config.h"

#include <cstring>
#include <variant>

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

namespace config_detail {

template <>
bool DefaultOf<bool>(options::Option option) {
  if (option == options::Option::kOfflineCache)
    return false;
  const options::Value v = options::DefaultValue(options::Spec(option));
  return std::holds_alternative<bool>(v) && std::get<bool>(v);
}

template <>
int64_t DefaultOf<int64_t>(options::Option option) {
  const options::Value v = options::DefaultValue(options::Spec(option));
  return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : 0;
}

template <>
double DefaultOf<double>(options::Option option) {
  const options::Value v = options::DefaultValue(options::Spec(option));
  return std::holds_alternative<double>(v) ? std::get<double>(v) : 0.0;
}

template <>
std::string DefaultOf<std::string>(options::Option option) {
  const options::Value v = options::DefaultValue(options::Spec(option));
  return std::holds_alternative<std::string>(v) ? std::get<std::string>(v)
                                                : std::string();
}

template <>
ir::PrimitiveType DefaultOf<ir::PrimitiveType>(options::Option option) {
  absl::StatusOr<ir::PrimitiveType> t =
      ir::ParsePrimitiveType(DefaultOf<std::string>(option));
  return t.ok() ? *t : ir::PrimitiveType::kF32;
}

}  // namespace config_detail

namespace {

uint64_t HashOf(bool v) { return v; }
uint64_t HashOf(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t HashOf(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
uint64_t HashOf(ir::PrimitiveType v) { return static_cast<uint64_t>(v); }
uint64_t HashOf(const std::string& v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : v)
    h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace

uint64_t CompileConfig::CodegenHash() const {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
  };
  mix(static_cast<uint64_t>(arch));
  VisitOptionFields([&](const char*, ConfigRole role, auto member) {
    if (role == ConfigRole::kCodegen)
      mix(HashOf(this->*member));
  });
  return h;
}

}  // namespace quadrants
