#include "quadrants/ir/print_format.h"

#include <cstdio>
#include <cstring>

namespace quadrants::ir {
namespace {

// Reads up to two digits at `*i`; false when there are more.
bool SkipNumber(absl::string_view spec, size_t* i) {
  size_t digits = 0;
  while (*i < spec.size() && spec[*i] >= '0' && spec[*i] <= '9') {
    ++*i;
    ++digits;
  }
  return digits <= 2;
}

}  // namespace

bool IsValidPrintSpec(absl::string_view spec, PrimitiveType type) {
  if (spec.empty())
    return true;
  if (spec.size() < 2 || spec[0] != '%')
    return false;
  size_t i = 1;
  while (i < spec.size() && std::strchr("-+ #0", spec[i]) != nullptr &&
         spec[i] != '\0') {
    ++i;
  }
  if (!SkipNumber(spec, &i))
    return false;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    const size_t start = i;
    if (!SkipNumber(spec, &i) || i == start)
      return false;
  }
  if (i + 1 != spec.size())
    return false;
  const char conversion = spec[i];
  if (IsFloat(type))
    return std::strchr("eEfFgGaA", conversion) != nullptr;
  if (std::strchr("oxX", conversion) != nullptr)
    return true;
  const bool is_signed = IsSigned(type) && type != PrimitiveType::kU1;
  return is_signed ? (conversion == 'd' || conversion == 'i')
                   : conversion == 'u';
}

bool IsValidPrintSite(const PrintSite& site) {
  if (site.pieces.size() != site.types.size() + 1 ||
      site.specs.size() != site.types.size()) {
    return false;
  }
  for (size_t k = 0; k < site.types.size(); ++k) {
    if (!IsValidPrintSpec(site.specs[k], site.types[k]))
      return false;
  }
  return true;
}

std::string FormatPrintValue(absl::string_view spec, PrimitiveType type,
                             int64_t bits) {
  char buffer[512];  // fits any value at width and precision <= 99
  if (IsFloat(type)) {
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    const std::string format = spec.empty() ? "%f" : std::string(spec);
    std::snprintf(buffer, sizeof(buffer), format.c_str(), value);
    return buffer;
  }
  if (spec.empty()) {
    if (type == PrimitiveType::kU1)
      return bits != 0 ? "True" : "False";
    return IsSigned(type) ? std::to_string(bits)
                          : std::to_string(static_cast<uint64_t>(bits));
  }
  // The flags, width and precision, then a 64-bit conversion.
  const std::string head(spec.substr(0, spec.size() - 1));
  const char conversion = spec.back();
  const std::string format = head + "ll" + conversion;
  if (conversion == 'd' || conversion == 'i') {
    std::snprintf(buffer, sizeof(buffer), format.c_str(),
                  static_cast<long long>(bits));
  } else {
    // o, x and X show the value's own width, not the 64-bit extension.
    const int width = BitWidth(type);
    uint64_t value = static_cast<uint64_t>(bits);
    if (width < 64)
      value &= (uint64_t{1} << width) - 1;
    std::snprintf(buffer, sizeof(buffer), format.c_str(),
                  static_cast<unsigned long long>(value));
  }
  return buffer;
}

std::string FormatPrintRecord(const PrintSite& site, const int64_t* values) {
  std::string text = site.pieces.empty() ? "" : site.pieces[0];
  for (size_t k = 0; k < site.types.size(); ++k) {
    text += FormatPrintValue(site.specs[k], site.types[k], values[k]);
    text += site.pieces[k + 1];
  }
  return text;
}

}  // namespace quadrants::ir
