#include "quadrants/program/scalar_access.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace quadrants {
namespace {

using ir::Constant;
using ir::PrimitiveType;

template <typename T>
T Load(const void* address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <typename T>
void Store(void* address, T value) {
  std::memcpy(address, &value, sizeof(T));
}

// IEEE half <-> float for host access to f16 elements.
float HalfToFloat(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa ? NAN : INFINITY;
  } else {
    value = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -value : value;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = (bits >> 16) & 0x8000;
  if (std::isnan(f))
    return sign | 0x7e00;
  float magnitude = std::fabs(f);
  if (magnitude >= 65520.0f)
    return sign | 0x7c00;
  if (magnitude < std::ldexp(1.0f, -24)) {
    return sign |
           static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  int exponent;
  float mantissa = std::frexp(magnitude, &exponent);  // [0.5, 1)
  if (exponent < -13) {                               // subnormal half
    return sign |
           static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  uint32_t m = static_cast<uint32_t>(std::nearbyint(std::ldexp(mantissa, 11)));
  if (m == 2048) {
    m = 1024;
    ++exponent;
  }
  return sign | static_cast<uint16_t>(((exponent + 14) << 10) | (m & 0x3ff));
}

}  // namespace

Constant ReadScalar(const void* address, PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kU1:
      return Constant::Bool(Load<uint8_t>(address) != 0);
    case PrimitiveType::kI8:
      return Constant::Int(type, Load<int8_t>(address));
    case PrimitiveType::kI16:
      return Constant::Int(type, Load<int16_t>(address));
    case PrimitiveType::kI32:
      return Constant::Int(type, Load<int32_t>(address));
    case PrimitiveType::kI64:
      return Constant::Int(type, Load<int64_t>(address));
    case PrimitiveType::kU8:
      return Constant::Int(type, Load<uint8_t>(address));
    case PrimitiveType::kU16:
      return Constant::Int(type, Load<uint16_t>(address));
    case PrimitiveType::kU32:
      return Constant::Int(type, Load<uint32_t>(address));
    case PrimitiveType::kU64:
      return Constant::Int(type, static_cast<int64_t>(Load<uint64_t>(address)));
    case PrimitiveType::kF16:
      return Constant::Float(type, HalfToFloat(Load<uint16_t>(address)));
    case PrimitiveType::kF32:
      return Constant::Float(type, Load<float>(address));
    case PrimitiveType::kF64:
      return Constant::Float(type, Load<double>(address));
  }
  return Constant::Int(PrimitiveType::kI32, 0);
}

void WriteScalar(void* address, PrimitiveType type, const Constant& value) {
  const Constant v = Constant::Cast(value, type);
  switch (type) {
    case PrimitiveType::kU1:
      Store<uint8_t>(address, v.is_zero() ? 0 : 1);
      break;
    case PrimitiveType::kI8:
    case PrimitiveType::kU8:
      Store<uint8_t>(address, static_cast<uint8_t>(v.as_uint()));
      break;
    case PrimitiveType::kI16:
    case PrimitiveType::kU16:
      Store<uint16_t>(address, static_cast<uint16_t>(v.as_uint()));
      break;
    case PrimitiveType::kI32:
    case PrimitiveType::kU32:
      Store<uint32_t>(address, static_cast<uint32_t>(v.as_uint()));
      break;
    case PrimitiveType::kI64:
    case PrimitiveType::kU64:
      Store<uint64_t>(address, v.as_uint());
      break;
    case PrimitiveType::kF16:
      Store<uint16_t>(address, FloatToHalf(static_cast<float>(v.as_float())));
      break;
    case PrimitiveType::kF32:
      Store<float>(address, static_cast<float>(v.as_float()));
      break;
    case PrimitiveType::kF64:
      Store<double>(address, v.as_float());
      break;
  }
}

int64_t ArgumentSlot(const Constant& value) {
  int64_t slot = 0;
  WriteScalar(&slot, value.type(), value);
  if (!value.is_float() && ir::IsSigned(value.type()))
    return value.as_int();
  if (!value.is_float())
    return static_cast<int64_t>(value.as_uint());
  return slot;
}

}  // namespace quadrants
