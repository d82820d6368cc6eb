#ifndef QUADRANTS_RUNTIME_COMPILE_CONFIG_H_
#define QUADRANTS_RUNTIME_COMPILE_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "quadrants/common/options.h"
#include "quadrants/ir/types.h"

namespace quadrants {

enum class Arch { kCpu, kCuda, kAmdgpu, kVulkan, kMetal };

absl::string_view ArchName(Arch arch);
absl::StatusOr<Arch> ParseArch(absl::string_view name);

// Whether an option CompileConfig holds changes generated code.
enum class ConfigRole {
  kCodegen,  // part of the compile-cache key (CodegenHash)
  kRuntime,  // read at run time only
};

namespace config_detail {
// The C++ type a CompileConfig member holding an option of type T has.
template <options::Type T>
struct FieldType {
  using type = std::string;  // kString, kPath, kEnum, kList
};
template <>
struct FieldType<options::Type::kBool> {
  using type = bool;
};
template <>
struct FieldType<options::Type::kInt> {
  using type = int64_t;
};
template <>
struct FieldType<options::Type::kFloat> {
  using type = double;
};
template <>
struct FieldType<options::Type::kFloatType> {
  using type = ir::PrimitiveType;
};
template <>
struct FieldType<options::Type::kIntType> {
  using type = ir::PrimitiveType;
};
template <options::Option O>
using Field = typename FieldType<options::TypeOf(O)>::type;

// The declared default of `option` (none: zero, empty), as a T; except
// that a config built in C++ (tests, tools) keeps no offline cache unless
// asked (qd.init's default turns it on).
template <typename T>
T DefaultOf(options::Option option);
template <>
bool DefaultOf<bool>(options::Option option);
template <>
int64_t DefaultOf<int64_t>(options::Option option);
template <>
double DefaultOf<double>(options::Option option);
template <>
std::string DefaultOf<std::string>(options::Option option);
template <>
ir::PrimitiveType DefaultOf<ir::PrimitiveType>(options::Option option);
}  // namespace config_detail

// The options of qd.init() that the C++ core acts on: one member per
// QD_CONFIG in quadrants/common/options.def, of the type and with the
// default declared there. Python sets them by name (qd.init).
struct CompileConfig {
  Arch arch = Arch::kCpu;
#define QD_CONFIG(id, field, role)                                   \
  config_detail::Field<options::Option::k##id> field =                \
      config_detail::DefaultOf<config_detail::Field<options::Option::k##id>>( \
          options::Option::k##id);
#include "quadrants/common/options.def"

  // Calls visit(name, role, &CompileConfig::member) for every option
  // member, in declaration order.
  template <typename Visitor>
  static void VisitOptionFields(Visitor&& visit) {
#define QD_CONFIG(id, field, role) \
  visit(#field, ConfigRole::role, &CompileConfig::field);
#include "quadrants/common/options.def"
  }

  // Out-of-bound checks are on when asked for or in debug mode.
  bool checks_bounds() const { return check_out_of_bound || debug; }
  // A hash of every kCodegen option and the arch (compile cache key).
  uint64_t CodegenHash() const;
};

}  // namespace quadrants

#endif  // QUADRANTS_RUNTIME_COMPILE_CONFIG_H_
