#ifndef QUADRANTS_IR_CONSTANT_H_
#define QUADRANTS_IR_CONSTANT_H_

#include <cstdint>
#include <string>

#include "quadrants/ir/types.h"

namespace quadrants::ir {

// A compile-time scalar. Integers are stored normalized to their type's width
// (wrapped, then sign- or zero-extended to 64 bits) so equal values compare
// equal; floats are stored as double (f32/f16 values rounded to their type).
class Constant {
 public:
  static Constant Int(PrimitiveType type, int64_t value);
  static Constant Float(PrimitiveType type, double value);
  static Constant Bool(bool value) { return Int(PrimitiveType::kU1, value); }
  // Converts `value` to `type` with the language's cast semantics
  // (float -> int truncates toward zero; int -> narrower int wraps).
  static Constant Cast(const Constant& value, PrimitiveType type);

  PrimitiveType type() const { return type_; }
  bool is_float() const { return IsFloat(type_); }
  int64_t as_int() const { return int_; }
  uint64_t as_uint() const { return static_cast<uint64_t>(int_); }
  double as_float() const { return is_float() ? float_ : AsDoubleFromInt(); }
  bool is_zero() const { return is_float() ? float_ == 0 : int_ == 0; }
  bool is_one() const { return is_float() ? float_ == 1 : int_ == 1; }

  // Round-trip exact text: integers in decimal, floats with 17 digits.
  std::string ToString() const;

  friend bool operator==(const Constant& a, const Constant& b);
  friend bool operator!=(const Constant& a, const Constant& b) {
    return !(a == b);
  }

 private:
  double AsDoubleFromInt() const;

  PrimitiveType type_ = PrimitiveType::kI32;
  int64_t int_ = 0;
  double float_ = 0;
};

}  // namespace quadrants::ir

#endif  // QUADRANTS_IR_CONSTANT_H_
