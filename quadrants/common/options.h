#ifndef QUADRANTS_COMMON_OPTIONS_H_
#define QUADRANTS_COMMON_OPTIONS_H_

// The registry of qd.init options and environment variables declared in
// options.def, and the one place that reads the environment.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace quadrants::options {

enum class Option {
#define QD_OPTION(id, ...) k##id,
#include "quadrants/common/options.def"
#undef QD_OPTION
};

// See options.def for what each enumerator means.
enum class Scope { kInit, kInitEnvOff, kLibrary, kTool };
enum class Type {
  kBool,
  kInt,
  kFloat,
  kString,
  kPath,
  kEnum,
  kList,
  kFloatType,
  kIntType,
};
enum class Check { kAny, kNonNegative, kPositive, kFraction, kUnit };

// Each option's declared type, for code that needs it at compile time (the
// CompileConfig members options.def declares).
inline constexpr Type kOptionTypes[] = {
#define QD_OPTION(id, name, scope, env, type, ...) Type::type,
#include "quadrants/common/options.def"
#undef QD_OPTION
};
constexpr Type TypeOf(Option option) {
  return kOptionTypes[static_cast<int>(option)];
}

struct OptionSpec {
  Option id;
  const char* name;
  Scope scope;
  const char* env;  // "" when the option has no variable
  Type type;
  const char* default_value;  // "" for none
  const char* accepted;
  Check check;
  const char* doc;
};

// One accepted value and what it means ("" when undocumented).
struct Choice {
  std::string value;
  std::string meaning;
};

// A parsed value: none, or of the C++ type the option's Type reads as
// (kEnum, kPath, kString and the Quadrants types are strings).
using Value = std::variant<std::monostate, bool, int64_t, double, std::string,
                           std::vector<std::string>>;

absl::Span<const OptionSpec> AllOptions();
const OptionSpec& Spec(Option option);
// nullptr when no option has that name.
const OptionSpec* FindSpec(absl::string_view name);

absl::string_view ScopeName(Scope scope);
absl::string_view TypeName(Type type);
absl::string_view CheckName(Check check);

// The values `spec` accepts (empty: any of its type).
std::vector<Choice> Choices(const OptionSpec& spec);
// What `spec` accepts, in words: "0 (off) or 1 (on)", "an integer >= 0".
std::string DescribeAccepted(const OptionSpec& spec);

// `text` read as `spec` declares; the error names the variable (or the
// option), the text and what is accepted. Empty text is the empty Value;
// so is blank text, except for paths and strings, which keep their blanks.
absl::StatusOr<Value> ParseValue(const OptionSpec& spec,
                                 absl::string_view text);
// The declared default, parsed.
Value DefaultValue(const OptionSpec& spec);

// The variable's value, nullopt when it is unset, empty or the option has
// no variable.
std::optional<std::string> EnvText(Option option);
// The variable's value parsed as declared (empty when unset).
absl::StatusOr<Value> EnvValue(Option option);

// Typed reads for call sites. A value that qd.init would reject reads as
// it always has: a flag is on for anything but 0, a string is taken as is.
bool EnvFlag(Option option);
std::string EnvString(Option option);  // the declared default when unset
std::vector<std::string> EnvList(Option option);

}  // namespace quadrants::options

#endif  // QUADRANTS_COMMON_OPTIONS_H_
