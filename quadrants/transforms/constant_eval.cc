#include "quadrants/transforms/constant_eval.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::Constant;
using ir::PrimitiveType;
using ir::UnaryOpKind;

bool IsF32(PrimitiveType t) {
  return t != PrimitiveType::kF64;
}

template <typename F32Fn, typename F64Fn>
double Math(PrimitiveType t, double x, F32Fn f32, F64Fn f64) {
  return IsF32(t) ? static_cast<double>(f32(static_cast<float>(x))) : f64(x);
}

absl::optional<Constant> EvalFloatUnary(UnaryOpKind op, double x,
                                        PrimitiveType t) {
  double r;
  switch (op) {
    case UnaryOpKind::kNeg:
      r = -x;
      break;
    case UnaryOpKind::kAbs:
      r = std::fabs(x);
      break;
    case UnaryOpKind::kStopGrad:
      r = x;
      break;
    case UnaryOpKind::kFloor:
      r = std::floor(x);
      break;
    case UnaryOpKind::kCeil:
      r = std::ceil(x);
      break;
    case UnaryOpKind::kSqrt:
      r = Math(
          t, x, [](float v) { return std::sqrt(v); },
          [](double v) { return std::sqrt(v); });
      break;
    case UnaryOpKind::kRsqrt:
      r = Math(
          t, x, [](float v) { return 1.0f / std::sqrt(v); },
          [](double v) { return 1.0 / std::sqrt(v); });
      break;
    case UnaryOpKind::kSin:
      r = Math(
          t, x, [](float v) { return std::sin(v); },
          [](double v) { return std::sin(v); });
      break;
    case UnaryOpKind::kCos:
      r = Math(
          t, x, [](float v) { return std::cos(v); },
          [](double v) { return std::cos(v); });
      break;
    case UnaryOpKind::kTan:
      r = Math(
          t, x, [](float v) { return std::tan(v); },
          [](double v) { return std::tan(v); });
      break;
    case UnaryOpKind::kTanh:
      r = Math(
          t, x, [](float v) { return std::tanh(v); },
          [](double v) { return std::tanh(v); });
      break;
    case UnaryOpKind::kExp:
      r = Math(
          t, x, [](float v) { return std::exp(v); },
          [](double v) { return std::exp(v); });
      break;
    case UnaryOpKind::kLog:
      r = Math(
          t, x, [](float v) { return std::log(v); },
          [](double v) { return std::log(v); });
      break;
    case UnaryOpKind::kAsin:
      r = Math(
          t, x, [](float v) { return std::asin(v); },
          [](double v) { return std::asin(v); });
      break;
    case UnaryOpKind::kAcos:
      r = Math(
          t, x, [](float v) { return std::acos(v); },
          [](double v) { return std::acos(v); });
      break;
    default:
      return absl::nullopt;
  }
  return Constant::Float(t, r);
}

absl::optional<Constant> EvalIntUnary(UnaryOpKind op, const Constant& x,
                                      PrimitiveType t) {
  const uint64_t v = x.as_uint();
  switch (op) {
    case UnaryOpKind::kNeg:
      return Constant::Int(t, static_cast<int64_t>(0 - v));
    case UnaryOpKind::kBitNot:
      return Constant::Int(t, static_cast<int64_t>(~v));
    case UnaryOpKind::kAbs:
      return Constant::Int(t, ir::IsSigned(t) && x.as_int() < 0
                                  ? static_cast<int64_t>(0 - v)
                                  : x.as_int());
    case UnaryOpKind::kFloor:
    case UnaryOpKind::kCeil:
    case UnaryOpKind::kStopGrad:
      return Constant::Int(t, x.as_int());
    default:
      return absl::nullopt;
  }
}

// The bits of `c` as an unsigned integer of its width.
uint64_t BitsOf(const Constant& c) {
  const int width = ir::BitWidth(c.type());
  if (c.type() == PrimitiveType::kF64) {
    const double d = c.as_float();
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits;
  }
  if (c.type() == PrimitiveType::kF32) {
    const float f = static_cast<float>(c.as_float());
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  return width == 64 ? c.as_uint() : c.as_uint() & ((uint64_t{1} << width) - 1);
}

absl::optional<Constant> BitCast(const Constant& x, PrimitiveType to) {
  // f16 constants have no exact bit-level form here: left to run time.
  if (x.type() == PrimitiveType::kF16 || to == PrimitiveType::kF16)
    return absl::nullopt;
  const uint64_t bits = BitsOf(x);
  if (to == PrimitiveType::kF64) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return Constant::Float(to, d);
  }
  if (to == PrimitiveType::kF32) {
    const uint32_t word = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &word, sizeof f);
    return Constant::Float(to, f);
  }
  return Constant::Int(to, static_cast<int64_t>(bits));
}

// clz, popcnt and ffs over the bit pattern of `x`'s width.
Constant BitCount(UnaryOpKind op, const Constant& x) {
  const int width = ir::BitWidth(x.type());
  const uint64_t bits = BitsOf(x);
  int r = 0;
  switch (op) {
    case UnaryOpKind::kClz:
      r = width;
      for (int k = width - 1; k >= 0; --k) {
        if ((bits >> k) & 1) {
          r = width - 1 - k;
          break;
        }
      }
      break;
    case UnaryOpKind::kPopcnt:
      for (int k = 0; k < width; ++k)
        r += static_cast<int>((bits >> k) & 1);
      break;
    default:  // ffs: 1-based position of the lowest set bit, 0 for none
      for (int k = 0; k < width; ++k) {
        if ((bits >> k) & 1) {
          r = k + 1;
          break;
        }
      }
      break;
  }
  return Constant::Int(PrimitiveType::kI32, r);
}

// Round half away from zero (C's round); frexp as C's, with exponent 0 for
// zero, infinities and NaN.
absl::optional<Constant> EvalRounding(UnaryOpKind op, const Constant& x,
                                      PrimitiveType result) {
  const double v = x.as_float();
  if (op == UnaryOpKind::kRound)
    return Constant::Float(result, std::round(v));
  int exponent = 0;
  double mantissa = v;
  if (std::isfinite(v) && v != 0)
    mantissa = std::frexp(v, &exponent);
  if (op == UnaryOpKind::kFrexpExponent)
    return Constant::Int(PrimitiveType::kI32, exponent);
  return Constant::Float(result, mantissa);
}

// Python's floor division and modulo on signed integers.
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}
int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

absl::optional<Constant> Compare(BinaryOpKind op, const Constant& a,
                                 const Constant& b) {
  int sign;  // -1, 0, 1 for a <, ==, > b
  const PrimitiveType t = a.type();
  if (ir::IsFloat(t)) {
    const double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y))
      return Constant::Bool(op == BinaryOpKind::kNe);
    sign = x < y ? -1 : (x > y ? 1 : 0);
  } else if (ir::IsSigned(t)) {
    sign = a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  } else {
    sign = a.as_uint() < b.as_uint() ? -1 : (a.as_uint() > b.as_uint() ? 1 : 0);
  }
  switch (op) {
    case BinaryOpKind::kLt:
      return Constant::Bool(sign < 0);
    case BinaryOpKind::kLe:
      return Constant::Bool(sign <= 0);
    case BinaryOpKind::kGt:
      return Constant::Bool(sign > 0);
    case BinaryOpKind::kGe:
      return Constant::Bool(sign >= 0);
    case BinaryOpKind::kEq:
      return Constant::Bool(sign == 0);
    case BinaryOpKind::kNe:
      return Constant::Bool(sign != 0);
    default:
      return absl::nullopt;
  }
}

absl::optional<Constant> EvalFloatBinary(BinaryOpKind op, double x, double y,
                                         PrimitiveType t) {
  double r;
  switch (op) {
    case BinaryOpKind::kAdd:
      r = x + y;
      break;
    case BinaryOpKind::kSub:
      r = x - y;
      break;
    case BinaryOpKind::kMul:
      r = x * y;
      break;
    case BinaryOpKind::kDiv:
      r = x / y;
      break;
    case BinaryOpKind::kFloorDiv:
      r = std::floor(x / y);
      break;
    case BinaryOpKind::kMod:
      r = x - y * std::floor(x / y);
      break;
    case BinaryOpKind::kMin:
      r = std::fmin(x, y);
      break;
    case BinaryOpKind::kMax:
      r = std::fmax(x, y);
      break;
    case BinaryOpKind::kPow:
      r = IsF32(t) ? std::pow(static_cast<float>(x), static_cast<float>(y))
                   : std::pow(x, y);
      break;
    case BinaryOpKind::kAtan2:
      r = IsF32(t) ? std::atan2(static_cast<float>(x), static_cast<float>(y))
                   : std::atan2(x, y);
      break;
    default:
      return absl::nullopt;
  }
  if (IsF32(t))
    r = static_cast<float>(r);
  return Constant::Float(t, r);
}

absl::optional<Constant> EvalIntBinary(BinaryOpKind op, const Constant& a,
                                       const Constant& b, PrimitiveType t) {
  const bool is_signed = ir::IsSigned(t);
  const int width = ir::BitWidth(t);
  const uint64_t x = a.as_uint(), y = b.as_uint();
  auto wrap = [&](uint64_t v) {
    return Constant::Int(t, static_cast<int64_t>(v));
  };
  switch (op) {
    case BinaryOpKind::kAdd:
      return wrap(x + y);
    case BinaryOpKind::kSub:
      return wrap(x - y);
    case BinaryOpKind::kMul:
      return wrap(x * y);
    case BinaryOpKind::kBitAnd:
      return wrap(x & y);
    case BinaryOpKind::kBitOr:
      return wrap(x | y);
    case BinaryOpKind::kBitXor:
      return wrap(x ^ y);
    case BinaryOpKind::kMin:
      return is_signed ? (a.as_int() < b.as_int() ? a : b) : (x < y ? a : b);
    case BinaryOpKind::kMax:
      return is_signed ? (a.as_int() > b.as_int() ? a : b) : (x > y ? a : b);
    case BinaryOpKind::kFloorDiv:
    case BinaryOpKind::kMod: {
      if (y == 0)
        return absl::nullopt;
      if (!is_signed)
        return wrap(op == BinaryOpKind::kMod ? x % y : x / y);
      if (a.as_int() == INT64_MIN && b.as_int() == -1)
        return absl::nullopt;
      return Constant::Int(t, op == BinaryOpKind::kMod
                                  ? FloorMod(a.as_int(), b.as_int())
                                  : FloorDiv(a.as_int(), b.as_int()));
    }
    case BinaryOpKind::kShl:
    case BinaryOpKind::kShr: {
      if (y >= static_cast<uint64_t>(width))
        return absl::nullopt;
      if (op == BinaryOpKind::kShl)
        return wrap(x << y);
      return is_signed ? Constant::Int(t, a.as_int() >> y) : wrap(x >> y);
    }
    case BinaryOpKind::kPow: {
      if (is_signed && b.as_int() < 0)
        return absl::nullopt;
      uint64_t result = 1, base = x;
      for (uint64_t e = y; e != 0; e >>= 1) {
        if (e & 1)
          result *= base;
        base *= base;
      }
      return wrap(result);
    }
    default:
      return absl::nullopt;
  }
}

}  // namespace

absl::optional<Constant> EvalUnary(UnaryOpKind op, const Constant& x,
                                   PrimitiveType result) {
  if (op == UnaryOpKind::kCast)
    return Constant::Cast(x, result);
  if (op == UnaryOpKind::kLogicalNot)
    return Constant::Bool(x.is_zero());
  if (op == UnaryOpKind::kBitCast)
    return BitCast(x, result);
  if (ir::IsBitCount(op))
    return ir::IsInteger(x.type()) ? absl::make_optional(BitCount(op, x))
                                   : absl::nullopt;
  if (op == UnaryOpKind::kRound || op == UnaryOpKind::kFrexpMantissa ||
      op == UnaryOpKind::kFrexpExponent) {
    return x.is_float() ? EvalRounding(op, x, result) : absl::nullopt;
  }
  if (ir::IsFloat(result))
    return EvalFloatUnary(op, x.as_float(), result);
  return EvalIntUnary(op, x, result);
}

absl::optional<Constant> EvalBinary(BinaryOpKind op, const Constant& a,
                                    const Constant& b, PrimitiveType result) {
  if (a.type() != b.type())
    return absl::nullopt;  // not type checked
  if (ir::IsComparison(op))
    return Compare(op, a, b);
  if (op == BinaryOpKind::kLogicalAnd) {
    return Constant::Bool(!a.is_zero() && !b.is_zero());
  }
  if (op == BinaryOpKind::kLogicalOr) {
    return Constant::Bool(!a.is_zero() || !b.is_zero());
  }
  if (a.type() != result)
    return absl::nullopt;
  if (ir::IsFloat(result)) {
    return EvalFloatBinary(op, a.as_float(), b.as_float(), result);
  }
  return EvalIntBinary(op, a, b, result);
}

}  // namespace quadrants::transforms
