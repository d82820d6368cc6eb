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
  if (width == 64)
    return static_cast<int64_t>(bits);
  const uint64_t mask = (uint64_t{1} << width) - 1;
  bits &= mask;
  if (IsSigned(type) && (bits >> (width - 1)) & 1)
    bits |= ~mask;
  return static_cast<int64_t>(bits);
}

double RoundToType(PrimitiveType type, double value) {
  if (type == PrimitiveType::kF32)
    return static_cast<float>(value);
  if (type == PrimitiveType::kF16) {
    // IEEE half: 11 significant bits for normal numbers, a fixed 2^-24 grid
    // below 2^-14, and infinity past the largest finite half (65504).
    if (value == 0 || !std::isfinite(value))
      return value;
    const double magnitude = std::fabs(value);
    if (magnitude < 0x1p-14) {
      return std::copysign(std::nearbyint(magnitude * 0x1p24) * 0x1p-24, value);
    }
    int exponent = 0;
    double mantissa = std::frexp(value, &exponent);
    double rounded =
        std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
    return std::fabs(rounded) > 65504.0 ? std::copysign(INFINITY, value)
                                        : rounded;
  }
  return value;
}

// Float to integer with truncation toward zero; values outside `type`'s
// range saturate to its limits and NaN gives 0, as generated code does
// (llvm.fptosi.sat / fptoui.sat).
int64_t TruncateToInt(double value, PrimitiveType type) {
  if (std::isnan(value))
    return 0;
  value = std::trunc(value);
  const int width = BitWidth(type);
  if (!IsSigned(type)) {
    if (value <= 0)
      return 0;
    const double limit = std::ldexp(1.0, width);  // exclusive upper bound
    if (value >= limit) {
      return width == 64 ? -1
                         : static_cast<int64_t>((uint64_t{1} << width) - 1);
    }
    return static_cast<int64_t>(static_cast<uint64_t>(value));
  }
  const double limit = std::ldexp(1.0, width - 1);
  if (value < -limit)
    return width == 64 ? std::numeric_limits<int64_t>::min()
                       : -(int64_t{1} << (width - 1));
  if (value >= limit)
    return width == 64 ? std::numeric_limits<int64_t>::max()
                       : (int64_t{1} << (width - 1)) - 1;
  return static_cast<int64_t>(value);
}

}  // namespace

Constant Constant::Int(PrimitiveType type, int64_t value) {
  Constant c;
  c.type_ = type;
  if (type == PrimitiveType::kF32) {
    // Directly, not through double: that would round twice above 2^53.
    c.float_ = static_cast<float>(value);
  } else if (IsFloat(type)) {
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
  if (value.is_float())
    return Float(type, value.float_);
  if (type == PrimitiveType::kF32 && !IsSigned(value.type_)) {
    Constant c;
    c.type_ = type;
    c.float_ = static_cast<float>(static_cast<uint64_t>(value.int_));
    return c;
  }
  if (IsFloat(type)) {
    return IsSigned(value.type_) ? Int(type, value.int_)
                                 : Float(type, value.AsDoubleFromInt());
  }
  return Int(type, value.int_);
}

double Constant::AsDoubleFromInt() const {
  return IsSigned(type_) ? static_cast<double>(int_)
                         : static_cast<double>(static_cast<uint64_t>(int_));
}

std::string Constant::ToString() const {
  if (is_float()) {
    if (std::isnan(float_))
      return "nan";
    if (std::isinf(float_))
      return float_ > 0 ? "inf" : "-inf";
    return absl::StrFormat("%.17g", float_);
  }
  if (IsSigned(type_))
    return absl::StrCat(int_);
  return absl::StrCat(static_cast<uint64_t>(int_));
}

bool operator==(const Constant& a, const Constant& b) {
  if (a.type_ != b.type_)
    return false;
  if (a.is_float()) {
    // Bitwise, so that NaN equals itself and 0.0 differs from -0.0.
    return std::memcmp(&a.float_, &b.float_, sizeof(double)) == 0;
  }
  return a.int_ == b.int_;
}

}  // namespace quadrants::ir
