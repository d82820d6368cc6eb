#ifndef QUADRANTS_IR_TYPES_H_
#define QUADRANTS_IR_TYPES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace quadrants::ir {

// Scalar element types of the kernel language. u1 is the boolean type that
// comparisons produce.
enum class PrimitiveType : uint8_t {
  kU1,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kF32,
  kF64,
};

absl::string_view PrimitiveTypeName(PrimitiveType type);
absl::StatusOr<PrimitiveType> ParsePrimitiveType(absl::string_view name);

int BitWidth(PrimitiveType type);
bool IsFloat(PrimitiveType type);
// Significand bits of a float type, the implicit one included (11, 24 or
// 53); 0 for other types.
int MantissaBits(PrimitiveType type);
bool IsInteger(PrimitiveType type);  // includes u1
bool IsSigned(PrimitiveType type);   // true for signed ints and floats
inline bool IsBool(PrimitiveType type) {
  return type == PrimitiveType::kU1;
}

// The type of an IR value: nothing (void), a scalar, a pointer to a scalar
// in global memory (field or ndarray element) or in a local slot, or an
// adstack handle whose slots hold the given scalar.
class DataType {
 public:
  enum class Kind : uint8_t { kVoid, kUnknown, kScalar, kPointer, kAdStack };

  constexpr DataType() = default;
  static constexpr DataType Void() { return DataType(Kind::kVoid, {}); }
  // The type of an expression before type checking assigns one.
  static constexpr DataType Unknown() { return DataType(Kind::kUnknown, {}); }
  static constexpr DataType Scalar(PrimitiveType p) {
    return DataType(Kind::kScalar, p);
  }
  static constexpr DataType Pointer(PrimitiveType p) {
    return DataType(Kind::kPointer, p);
  }
  static constexpr DataType AdStack(PrimitiveType p) {
    return DataType(Kind::kAdStack, p);
  }

  Kind kind() const { return kind_; }
  bool is_void() const { return kind_ == Kind::kVoid; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  bool is_scalar() const { return kind_ == Kind::kScalar; }
  bool is_pointer() const { return kind_ == Kind::kPointer; }
  bool is_adstack() const { return kind_ == Kind::kAdStack; }
  // The scalar type held, pointed to or stacked; meaningless for void.
  PrimitiveType element() const { return element_; }

  bool is_float_scalar() const { return is_scalar() && IsFloat(element_); }
  bool is_integer_scalar() const { return is_scalar() && IsInteger(element_); }

  std::string ToString() const;

  friend bool operator==(DataType a, DataType b) {
    return a.kind_ == b.kind_ &&
           (a.kind_ == Kind::kVoid || a.kind_ == Kind::kUnknown ||
            a.element_ == b.element_);
  }
  friend bool operator!=(DataType a, DataType b) { return !(a == b); }

 private:
  constexpr DataType(Kind kind, PrimitiveType element)
      : kind_(kind), element_(element) {}

  Kind kind_ = Kind::kVoid;
  PrimitiveType element_ = PrimitiveType::kI32;
};

// The result type of a binary arithmetic op on `a` and `b`:
// - equal types stay as they are;
// - a float and an integer give the float;
// - two floats give the wider;
// - two integers give the wider; at equal width the unsigned one.
PrimitiveType PromoteTypes(PrimitiveType a, PrimitiveType b);

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_TYPES_H_
