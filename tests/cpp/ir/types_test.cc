// Primitive types, DataType, type promotion and Constant semantics.
#include "quadrants/ir/types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "quadrants/common/errors.h"
#include "quadrants/ir/constant.h"

namespace quadrants::ir {
namespace {

using ::testing::HasSubstr;
using P = PrimitiveType;

constexpr P kAllTypes[] = {P::kU1,  P::kI8,  P::kI16, P::kI32,
                           P::kI64, P::kU8,  P::kU16, P::kU32,
                           P::kU64, P::kF16, P::kF32, P::kF64};

// ---- PrimitiveType ----------------------------------------------------------

TEST(PrimitiveTypeTest, NameParseRoundTrip) {
  for (P type : kAllTypes) {
    absl::StatusOr<P> parsed = ParsePrimitiveType(PrimitiveTypeName(type));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, type) << PrimitiveTypeName(type);
  }
  EXPECT_EQ(PrimitiveTypeName(P::kU1), "u1");
  EXPECT_EQ(PrimitiveTypeName(P::kU16), "u16");
  EXPECT_EQ(PrimitiveTypeName(P::kF64), "f64");
}

TEST(PrimitiveTypeTest, ParseRejectsUnknownNames) {
  for (const char* name : {"float32", "I32", "", "i33", "f32 "}) {
    absl::StatusOr<P> parsed = ParsePrimitiveType(name);
    ASSERT_FALSE(parsed.ok()) << name;
    EXPECT_EQ(GetErrorKind(parsed.status()), ErrorKind::kType);
    EXPECT_THAT(std::string(parsed.status().message()),
                HasSubstr(std::string("unknown type '") + name + "'"));
  }
}

TEST(PrimitiveTypeTest, Properties) {
  EXPECT_EQ(BitWidth(P::kU1), 1);
  EXPECT_EQ(BitWidth(P::kI8), 8);
  EXPECT_EQ(BitWidth(P::kU16), 16);
  EXPECT_EQ(BitWidth(P::kF16), 16);
  EXPECT_EQ(BitWidth(P::kI64), 64);
  EXPECT_TRUE(IsInteger(P::kU1));
  EXPECT_TRUE(IsBool(P::kU1));
  EXPECT_FALSE(IsBool(P::kU8));
  EXPECT_FALSE(IsSigned(P::kU1));
  EXPECT_TRUE(IsSigned(P::kI16));
  EXPECT_FALSE(IsSigned(P::kU32));
  EXPECT_TRUE(IsSigned(P::kF32));
  for (P type : kAllTypes) {
    EXPECT_NE(IsFloat(type), IsInteger(type)) << PrimitiveTypeName(type);
  }
  EXPECT_TRUE(IsFloat(P::kF16));
  EXPECT_FALSE(IsFloat(P::kI64));
}

// ---- DataType ---------------------------------------------------------------

TEST(DataTypeTest, ToStringAndEquality) {
  EXPECT_EQ(DataType::Void().ToString(), "void");
  EXPECT_EQ(DataType::Unknown().ToString(), "unknown");
  EXPECT_EQ(DataType::Scalar(P::kI32).ToString(), "i32");
  EXPECT_EQ(DataType::Pointer(P::kF32).ToString(), "*f32");
  EXPECT_EQ(DataType::AdStack(P::kF64).ToString(), "adstack<f64>");
  EXPECT_EQ(DataType().ToString(), "void");

  EXPECT_EQ(DataType::Scalar(P::kF32), DataType::Scalar(P::kF32));
  EXPECT_NE(DataType::Scalar(P::kF32), DataType::Scalar(P::kF64));
  EXPECT_NE(DataType::Scalar(P::kF32), DataType::Pointer(P::kF32));
  EXPECT_NE(DataType::Pointer(P::kF32), DataType::AdStack(P::kF32));
  EXPECT_NE(DataType::Void(), DataType::Unknown());
  EXPECT_EQ(DataType::Void(), DataType());
  EXPECT_TRUE(DataType::Scalar(P::kU1).is_integer_scalar());
  EXPECT_FALSE(DataType::Pointer(P::kI32).is_integer_scalar());
  EXPECT_TRUE(DataType::Scalar(P::kF16).is_float_scalar());
  EXPECT_EQ(DataType::Pointer(P::kU8).element(), P::kU8);
}

// ---- PromoteTypes -----------------------------------------------------------

struct Promotion {
  P a, b, expected;
};

TEST(PromoteTypesTest, Table) {
  const Promotion table[] = {
      // Identical types stay.
      {P::kI32, P::kI32, P::kI32},
      {P::kU1, P::kU1, P::kU1},
      {P::kF16, P::kF16, P::kF16},
      // Integers: the wider wins, whatever its signedness.
      {P::kI8, P::kI32, P::kI32},
      {P::kI32, P::kI64, P::kI64},
      {P::kU8, P::kI16, P::kI16},
      {P::kI8, P::kU16, P::kU16},
      {P::kU32, P::kI64, P::kI64},
      {P::kU1, P::kI32, P::kI32},
      {P::kU1, P::kU8, P::kU8},
      // Equal width, different signedness: the unsigned one.
      {P::kI8, P::kU8, P::kU8},
      {P::kI16, P::kU16, P::kU16},
      {P::kI32, P::kU32, P::kU32},
      {P::kI64, P::kU64, P::kU64},
      // Integer with float: the float, however wide the integer.
      {P::kI32, P::kF32, P::kF32},
      {P::kI64, P::kF16, P::kF16},
      {P::kU1, P::kF64, P::kF64},
      {P::kU64, P::kF32, P::kF32},
      // Floats: the wider.
      {P::kF16, P::kF32, P::kF32},
      {P::kF16, P::kF64, P::kF64},
      {P::kF32, P::kF64, P::kF64},
  };
  for (const Promotion& p : table) {
    EXPECT_EQ(PromoteTypes(p.a, p.b), p.expected)
        << PrimitiveTypeName(p.a) << ", " << PrimitiveTypeName(p.b);
    EXPECT_EQ(PromoteTypes(p.b, p.a), p.expected)
        << PrimitiveTypeName(p.b) << ", " << PrimitiveTypeName(p.a);
  }
}

TEST(PromoteTypesTest, CommutativeOverAllPairs) {
  for (P a : kAllTypes) {
    for (P b : kAllTypes) {
      EXPECT_EQ(PromoteTypes(a, b), PromoteTypes(b, a))
          << PrimitiveTypeName(a) << ", " << PrimitiveTypeName(b);
    }
  }
}

// ---- Constant ---------------------------------------------------------------

TEST(ConstantTest, IntegersWrapToTheirWidth) {
  EXPECT_EQ(Constant::Int(P::kI8, 200).as_int(), -56);
  EXPECT_EQ(Constant::Int(P::kI8, -129).as_int(), 127);
  EXPECT_EQ(Constant::Int(P::kU8, -1).as_uint(), 255u);
  EXPECT_EQ(Constant::Int(P::kU8, -1).as_int(), 255);
  EXPECT_EQ(Constant::Int(P::kU8, 256).as_int(), 0);
  EXPECT_EQ(Constant::Int(P::kI16, 40000).as_int(), 40000 - 65536);
  EXPECT_EQ(Constant::Int(P::kU32, -1).as_uint(), 0xffffffffu);
  EXPECT_EQ(Constant::Int(P::kI32, int64_t{1} << 32).as_int(), 0);
  EXPECT_EQ(Constant::Int(P::kU64, -1).as_uint(),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Constant::Int(P::kU1, 2).as_int(), 1);
  EXPECT_EQ(Constant::Bool(false).as_int(), 0);
  // Wrapped values compare equal to the in-range spelling.
  EXPECT_EQ(Constant::Int(P::kI8, 200), Constant::Int(P::kI8, -56));
}

TEST(ConstantTest, ToString) {
  EXPECT_EQ(Constant::Int(P::kI8, 200).ToString(), "-56");
  EXPECT_EQ(Constant::Int(P::kU64, -1).ToString(), "18446744073709551615");
  EXPECT_EQ(
      Constant::Int(P::kI64, std::numeric_limits<int64_t>::min()).ToString(),
      "-9223372036854775808");
  EXPECT_EQ(Constant::Float(P::kF64, 0.1).ToString(), "0.10000000000000001");
  EXPECT_EQ(Constant::Float(P::kF32, 0.1).ToString(), "0.10000000149011612");
  EXPECT_EQ(Constant::Float(P::kF64, 2.0).ToString(), "2");
  EXPECT_EQ(Constant::Float(P::kF64, -0.0).ToString(), "-0");
  EXPECT_EQ(Constant::Float(P::kF32, INFINITY).ToString(), "inf");
  EXPECT_EQ(Constant::Float(P::kF32, -INFINITY).ToString(), "-inf");
  EXPECT_EQ(Constant::Float(P::kF64, NAN).ToString(), "nan");
}

TEST(ConstantTest, FloatsRoundToTheirType) {
  const Constant f32 = Constant::Float(P::kF32, 0.1);
  EXPECT_EQ(f32.as_float(), static_cast<double>(0.1f));
  EXPECT_NE(f32.as_float(), 0.1);
  EXPECT_EQ(Constant::Float(P::kF64, 0.1).as_float(), 0.1);
  // 2^24 + 1 is not representable in f32; ties round to even.
  EXPECT_EQ(Constant::Int(P::kF32, 16777217).as_float(), 16777216.0);
  EXPECT_EQ(Constant::Float(P::kF32, 16777219.0).as_float(), 16777220.0);
  // f16 keeps 11 significant bits.
  EXPECT_EQ(Constant::Float(P::kF16, 0.1).as_float(), 0.0999755859375);
  EXPECT_EQ(Constant::Float(P::kF16, 2049.0).as_float(), 2048.0);
  EXPECT_EQ(Constant::Float(P::kF16, 2051.0).as_float(), 2052.0);
  EXPECT_EQ(Constant::Int(P::kF32, 3), Constant::Float(P::kF32, 3.0));
}

// Library bug (quadrants/ir/constant.cc, RoundToType): f16 rounding keeps 11
// significant bits at any exponent, so values beyond the f16 range stay
// finite and values below the normal range keep too much precision. IEEE
// half overflows to infinity at 65520 and has a fixed 2^-24 grid below 2^-14.
TEST(ConstantTest, F16OverflowAndSubnormalsFollowIeeeHalf) {
  auto f16 = [](double v) { return Constant::Float(P::kF16, v).as_float(); };
  EXPECT_EQ(f16(65504.0), 65504.0);  // largest finite half
  EXPECT_EQ(f16(65519.0), 65504.0);
  EXPECT_EQ(f16(0x1p-14), 0x1p-14);  // smallest normal half
  EXPECT_EQ(f16(65520.0), INFINITY);
  EXPECT_EQ(f16(1e6), INFINITY);
  EXPECT_EQ(f16(-1e6), -INFINITY);
  EXPECT_EQ(Constant::Int(P::kF16, 100000).as_float(), INFINITY);
  EXPECT_EQ(f16(1e-7), 0x1p-23);  // nearest multiple of 2^-24
  EXPECT_EQ(f16(3e-8), 0x1p-24);
  EXPECT_EQ(f16(0x1p-25), 0.0);  // tie between 0 and 2^-24: even
  EXPECT_EQ(f16(1e-10), 0.0);
}

TEST(ConstantTest, CastFloatToIntTruncatesTowardZero) {
  auto to_i32 = [](double v) {
    return Constant::Cast(Constant::Float(P::kF64, v), P::kI32).as_int();
  };
  EXPECT_EQ(to_i32(2.9), 2);
  EXPECT_EQ(to_i32(-2.9), -2);
  EXPECT_EQ(to_i32(-0.5), 0);
  EXPECT_EQ(to_i32(7.0), 7);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF32, 1e9), P::kI64).as_int(),
            1000000000);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF32, 3.75), P::kU8).as_int(), 3);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF64, NAN), P::kI32).as_int(), 0);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF64, 0.25), P::kU1).as_int(), 1);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF64, 0.0), P::kU1).as_int(), 0);
  const Constant cast = Constant::Cast(Constant::Float(P::kF32, 2.5), P::kI16);
  EXPECT_EQ(cast.type(), P::kI16);
  EXPECT_FALSE(cast.is_float());
}

TEST(ConstantTest, CastBetweenIntegersAndToFloat) {
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kI32, 300), P::kU8).as_int(), 44);
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kI32, -1), P::kU16).as_int(),
            65535);
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kU8, 255), P::kI8).as_int(), -1);
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kI8, -1), P::kI64).as_int(), -1);
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kU8, 255), P::kI64).as_int(), 255);
  // Unsigned sources convert by value, not by bit pattern.
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kU64, -1), P::kF64).as_float(),
            18446744073709551615.0);
  EXPECT_EQ(Constant::Cast(Constant::Int(P::kI32, -3), P::kF32).as_float(),
            -3.0);
  EXPECT_EQ(Constant::Cast(Constant::Float(P::kF64, 0.1), P::kF32),
            Constant::Float(P::kF32, 0.1));
  EXPECT_EQ(Constant::Int(P::kU8, 200).as_float(), 200.0);
}

TEST(ConstantTest, Equality) {
  EXPECT_NE(Constant::Int(P::kI32, 1), Constant::Int(P::kI64, 1));
  EXPECT_NE(Constant::Float(P::kF32, 1.0), Constant::Float(P::kF64, 1.0));
  EXPECT_NE(Constant::Float(P::kF64, 0.0), Constant::Float(P::kF64, -0.0));
  EXPECT_EQ(Constant::Float(P::kF64, NAN), Constant::Float(P::kF64, NAN));
  EXPECT_TRUE(Constant::Float(P::kF64, -0.0).is_zero());
  EXPECT_TRUE(Constant::Int(P::kI8, 257).is_one());
  EXPECT_TRUE(Constant::Float(P::kF16, 1.0).is_one());
}

}  // namespace
}  // namespace quadrants::ir
