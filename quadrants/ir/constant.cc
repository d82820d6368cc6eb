#include "quadrants/ir/constant.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace quadrants::ir {
namespace {

int64_t WrapToWidth(PrimitiveType type, uint64_t bits) {
  const int width = BitWidth(type);
  if (width == 64) return static_cast<int64_t>(bits);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  bits &= mask;
  if (IsSigned(type) && (bits >> (width - 1)) & 1) bits |= ~mask;
  return static_cast<int64_t>(bits);
}

double RoundToType(PrimitiveType type, double value) {
  if (type == PrimitiveType::kF32) return static_cast<float>(value);
  if (type == PrimitiveType::kF16) {
    // Round to 11 significant bits, as IEEE half does for normal numbers.
    if (value == 0 || !std::isfinite(value)) return value;
    int exponent = 0;
    double mantissa = std::frexp(value, &exponent);
    return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
  }
  return value;
}

// Float to integer with truncation toward zero; out-of-range and NaN values
// saturate so folding never hits undefined behaviour.
int64_t TruncateToInt(double value, PrimitiveType type) {
  if (std::isnan(value)) return 0;
  value = std::trunc(value);
  if (!IsSigned(type)) {
    if (value <= 0) return 0;
    if (value >= 18446744073709551615.0) return -1;  // all ones
    return static_cast<int64_t>(static_cast<uint64_t>(value));
  }
  if (value <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  if (value >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(value);
}

}  // namespace

Constant Constant::Int(PrimitiveType type, int64_t value) {
  Constant c;
  c.type_ = type;
  if (IsFloat(type)) {
    c.float_ = RoundToType(type, static_cast<double>(value));
  } else if (IsBool(type)) {
    c.int_ = value != 0;
  } else {
    c.int_ = WrapToWidth(type, static_cast<uint64_t>(value));
  }
  return c;
}

Constant Constant::Float(PrimitiveType type, double value) {
  if (!IsFloat(type)) {
    return IsBool(type) ? Int(type, value != 0)
                        : Int(type, TruncateToInt(value, type));
  }
  Constant c;
  c.type_ = type;
  c.float_ = RoundToType(type, value);
  return c;
}

Constant Constant::Cast(const Constant& value, PrimitiveType type) {
  if (value.is_float()) return Float(type, value.float_);
  if (IsFloat(type)) return Float(type, value.AsDoubleFromInt());
  return Int(type, value.int_);
}

double Constant::AsDoubleFromInt() const {
  return IsSigned(type_) ? static_cast<double>(int_)
                         : static_cast<double>(static_cast<uint64_t>(int_));
}

std::string Constant::ToString() const {
  if (is_float()) {
    if (std::isnan(float_)) return "nan";
    if (std::isinf(float_)) return float_ > 0 ? "inf" : "-inf";
    return absl::StrFormat("%.17g", float_);
  }
  if (IsSigned(type_)) return absl::StrCat(int_);
  return absl::StrCat(static_cast<uint64_t>(int_));
}

bool operator==(const Constant& a, const Constant& b) {
  if (a.type_ != b.type_) return false;
  if (a.is_float()) {
    // Bitwise, so that NaN equals itself and 0.0 differs from -0.0.
    return std::memcmp(&a.float_, &b.float_, sizeof(double)) == 0;
  }
  return a.int_ == b.int_;
}

}  // namespace quadrants::ir
