#include "quadrants/common/options.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace quadrants::options {
namespace {

constexpr OptionSpec kOptions[] = {
#define QD_OPTION(id, name, scope, env, type, default_value, accepted, check, \
                  doc)                                                        \
  {Option::k##id, name,     Scope::scope, env, Type::type,                    \
   default_value, accepted, Check::check, doc},
#include "quadrants/common/options.def"
#undef QD_OPTION
};

// The name an error gives: the variable, else the qd.init keyword.
std::string Label(const OptionSpec& spec) {
  return spec.env[0] != '\0' ? spec.env : spec.name;
}

// "a, b or c".
std::string JoinAlternatives(const std::vector<std::string>& items) {
  if (items.size() <= 1)
    return items.empty() ? "" : items[0];
  std::vector<std::string> head(items.begin(), items.end() - 1);
  return absl::StrCat(absl::StrJoin(head, ", "), " or ", items.back());
}

std::string DescribeChoices(const std::vector<Choice>& choices) {
  std::vector<std::string> items;
  for (const Choice& choice : choices) {
    items.push_back(choice.meaning.empty() ? choice.value
                                           : absl::StrCat(choice.value, " (",
                                                          choice.meaning, ")"));
  }
  return JoinAlternatives(items);
}

absl::string_view DescribeCheck(Check check) {
  switch (check) {
    case Check::kAny:
      return "";
    case Check::kNonNegative:
      return " >= 0";
    case Check::kPositive:
      return " > 0";
    case Check::kFraction:
      return " in (0, 1]";
    case Check::kUnit:
      return " in [0, 1]";
  }
  return "";
}

bool Passes(Check check, double value) {
  switch (check) {
    case Check::kAny:
      return true;
    case Check::kNonNegative:
      return value >= 0;
    case Check::kPositive:
      return value > 0;
    case Check::kFraction:
      return value > 0 && value <= 1;
    case Check::kUnit:
      return value >= 0 && value <= 1;
  }
  return true;
}

bool IsChoice(const std::vector<Choice>& choices, absl::string_view value) {
  for (const Choice& choice : choices) {
    if (choice.value == value)
      return true;
  }
  return false;
}

std::vector<std::string> SplitList(absl::string_view text) {
  std::vector<std::string> items;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty())
      items.emplace_back(part);
  }
  return items;
}

absl::Status Invalid(const OptionSpec& spec, absl::string_view text) {
  const std::string label = Label(spec);
  return absl::InvalidArgumentError(
      absl::StrCat(label, "='", text, "': ", label, " must be ",
                   DescribeAccepted(spec), ", got '", text, "'"));
}

// Paths and strings keep their blanks; every other type ignores them.
bool IsFreeText(Type type) {
  return type == Type::kString || type == Type::kPath;
}

absl::StatusOr<Value> ParseNumber(const OptionSpec& spec,
                                  absl::string_view text) {
  if (spec.type == Type::kInt) {
    int64_t value = 0;
    if (absl::SimpleAtoi(text, &value) &&
        Passes(spec.check, static_cast<double>(value)))
      return Value(value);
  } else {
    double value = 0;
    if (absl::SimpleAtod(text, &value) && std::isfinite(value) &&
        Passes(spec.check, value))
      return Value(value);
  }
  return Invalid(spec, text);
}

absl::StatusOr<Value> ParseList(const OptionSpec& spec,
                                absl::string_view text) {
  std::vector<std::string> items = SplitList(text);
  const std::vector<Choice> choices = Choices(spec);
  for (const std::string& item : items) {
    if (!choices.empty() && !IsChoice(choices, item))
      return Invalid(spec, text);
  }
  return Value(std::move(items));
}

absl::StatusOr<Value> ParseTrimmed(const OptionSpec& spec,
                                   absl::string_view text) {
  switch (spec.type) {
    case Type::kBool:
      // A flag may declare only the value it supports (see options.def).
      if ((text == "0" || text == "1") && IsChoice(Choices(spec), text))
        return Value(text == "1");
      return Invalid(spec, text);
    case Type::kInt:
    case Type::kFloat:
      return ParseNumber(spec, text);
    case Type::kList:
      return ParseList(spec, text);
    default:  // enums and Quadrants types: one of the choices
      if (!IsChoice(Choices(spec), text))
        return Invalid(spec, text);
      return Value(std::string(text));
  }
}

}  // namespace

absl::Span<const OptionSpec> AllOptions() {
  return kOptions;
}

const OptionSpec& Spec(Option option) {
  return kOptions[static_cast<int>(option)];
}

const OptionSpec* FindSpec(absl::string_view name) {
  for (const OptionSpec& spec : kOptions) {
    if (spec.name == name)
      return &spec;
  }
  return nullptr;
}

absl::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kInit:
      return "init";
    case Scope::kInitEnvOff:
      return "init_env_off";
    case Scope::kLibrary:
      return "library";
    case Scope::kTool:
      return "tool";
  }
  return "?";
}

absl::string_view TypeName(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "string";
    case Type::kPath:
      return "path";
    case Type::kEnum:
      return "enum";
    case Type::kList:
      return "list";
    case Type::kFloatType:
      return "float_type";
    case Type::kIntType:
      return "int_type";
  }
  return "?";
}

absl::string_view CheckName(Check check) {
  switch (check) {
    case Check::kAny:
      return "any";
    case Check::kNonNegative:
      return "non_negative";
    case Check::kPositive:
      return "positive";
    case Check::kFraction:
      return "fraction";
    case Check::kUnit:
      return "unit";
  }
  return "?";
}

std::vector<Choice> Choices(const OptionSpec& spec) {
  absl::string_view accepted = spec.accepted;
  if (accepted.empty() && spec.type == Type::kBool)
    accepted = "0: off|1: on";
  std::vector<Choice> choices;
  for (absl::string_view item :
       absl::StrSplit(accepted, '|', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    choices.push_back({std::string(absl::StripAsciiWhitespace(parts.first)),
                       std::string(absl::StripAsciiWhitespace(parts.second))});
  }
  return choices;
}

std::string DescribeAccepted(const OptionSpec& spec) {
  const std::vector<Choice> choices = Choices(spec);
  switch (spec.type) {
    case Type::kBool:
    case Type::kEnum:
      return DescribeChoices(choices);
    case Type::kInt:
      return absl::StrCat("an integer", DescribeCheck(spec.check));
    case Type::kFloat:
      return absl::StrCat("a number", DescribeCheck(spec.check));
    case Type::kString:
      return "any text";
    case Type::kPath:
      return "a path";
    case Type::kList:
      if (choices.empty())
        return "a comma-separated list";
      return absl::StrCat("a comma-separated list of ",
                          DescribeChoices(choices));
    case Type::kFloatType:
      return absl::StrCat("a floating-point type: ", DescribeChoices(choices));
    case Type::kIntType:
      return absl::StrCat("an integer type: ", DescribeChoices(choices));
  }
  return "";
}

absl::StatusOr<Value> ParseValue(const OptionSpec& spec,
                                 absl::string_view text) {
  if (IsFreeText(spec.type))
    return text.empty() ? Value() : Value(std::string(text));
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty())
    return Value();
  return ParseTrimmed(spec, trimmed);
}

Value DefaultValue(const OptionSpec& spec) {
  absl::StatusOr<Value> value = ParseValue(spec, spec.default_value);
  return value.ok() ? *std::move(value) : Value();
}

std::optional<std::string> EnvText(Option option) {
  const OptionSpec& spec = Spec(option);
  if (spec.env[0] == '\0')
    return std::nullopt;
  const char* value = std::getenv(spec.env);
  if (value == nullptr || value[0] == '\0')
    return std::nullopt;
  return std::string(value);
}

absl::StatusOr<Value> EnvValue(Option option) {
  std::optional<std::string> text = EnvText(option);
  if (!text)
    return Value();
  return ParseValue(Spec(option), *text);
}

bool EnvFlag(Option option) {
  std::optional<std::string> text = EnvText(option);
  if (!text) {
    const Value value = DefaultValue(Spec(option));
    return std::holds_alternative<bool>(value) && std::get<bool>(value);
  }
  const absl::string_view trimmed = absl::StripAsciiWhitespace(*text);
  return !trimmed.empty() && trimmed != "0";
}

std::string EnvString(Option option) {
  const OptionSpec& spec = Spec(option);
  std::optional<std::string> text = EnvText(option);
  if (!text)
    return spec.default_value;
  if (IsFreeText(spec.type))
    return *text;
  return std::string(absl::StripAsciiWhitespace(*text));
}

std::vector<std::string> EnvList(Option option) {
  std::optional<std::string> text = EnvText(option);
  return SplitList(text ? *text : Spec(option).default_value);
}

}  // namespace quadrants::options
