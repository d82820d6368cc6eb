#include "quadrants/ir/types.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"

namespace quadrants::ir {
namespace {

struct TypeInfo {
  PrimitiveType type;
  absl::string_view name;
  int bits;
  bool is_float;
  bool is_signed;
};

constexpr std::array<TypeInfo, 12> kTypes = {{
    {PrimitiveType::kU1, "u1", 1, false, false},
    {PrimitiveType::kI8, "i8", 8, false, true},
    {PrimitiveType::kI16, "i16", 16, false, true},
    {PrimitiveType::kI32, "i32", 32, false, true},
    {PrimitiveType::kI64, "i64", 64, false, true},
    {PrimitiveType::kU8, "u8", 8, false, false},
    {PrimitiveType::kU16, "u16", 16, false, false},
    {PrimitiveType::kU32, "u32", 32, false, false},
    {PrimitiveType::kU64, "u64", 64, false, false},
    {PrimitiveType::kF16, "f16", 16, true, true},
    {PrimitiveType::kF32, "f32", 32, true, true},
    {PrimitiveType::kF64, "f64", 64, true, true},
}};

const TypeInfo& Info(PrimitiveType type) {
  return kTypes[static_cast<size_t>(type)];
}

}  // namespace

absl::string_view PrimitiveTypeName(PrimitiveType type) {
  return Info(type).name;
}

absl::StatusOr<PrimitiveType> ParsePrimitiveType(absl::string_view name) {
  for (const TypeInfo& info : kTypes) {
    if (info.name == name)
      return info.type;
  }
  return MakeError(ErrorKind::kType,
                   absl::StrCat("unknown type '", name,
                                "' (expected one of u1 i8 i16 i32 i64 u8 u16 "
                                "u32 u64 f16 f32 f64)"));
}

int BitWidth(PrimitiveType type) {
  return Info(type).bits;
}
int MantissaBits(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF16:
      return 11;
    case PrimitiveType::kF32:
      return 24;
    case PrimitiveType::kF64:
      return 53;
    default:
      return 0;
  }
}
bool IsFloat(PrimitiveType type) {
  return Info(type).is_float;
}
bool IsInteger(PrimitiveType type) {
  return !Info(type).is_float;
}
bool IsSigned(PrimitiveType type) {
  return Info(type).is_signed;
}

std::string DataType::ToString() const {
  switch (kind_) {
    case Kind::kVoid:
      return "void";
    case Kind::kUnknown:
      return "unknown";
    case Kind::kScalar:
      return std::string(PrimitiveTypeName(element_));
    case Kind::kPointer:
      return absl::StrCat("*", PrimitiveTypeName(element_));
    case Kind::kAdStack:
      return absl::StrCat("adstack<", PrimitiveTypeName(element_), ">");
  }
  return "?";
}

PrimitiveType PromoteTypes(PrimitiveType a, PrimitiveType b) {
  if (a == b)
    return a;
  const bool a_float = IsFloat(a), b_float = IsFloat(b);
  if (a_float != b_float)
    return a_float ? a : b;
  if (BitWidth(a) != BitWidth(b))
    return BitWidth(a) > BitWidth(b) ? a : b;
  // Same width, different signedness (floats of equal width are equal).
  return IsSigned(a) ? b : a;
}

}  // namespace quadrants::ir
