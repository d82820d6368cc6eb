#include "quadrants/transforms/type_check.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::DataType;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;

constexpr PrimitiveType kU1 = PrimitiveType::kU1;
constexpr PrimitiveType kI8 = PrimitiveType::kI8;
constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kI64 = PrimitiveType::kI64;
constexpr PrimitiveType kU8 = PrimitiveType::kU8;
constexpr PrimitiveType kU16 = PrimitiveType::kU16;
constexpr PrimitiveType kU32 = PrimitiveType::kU32;
constexpr PrimitiveType kF16 = PrimitiveType::kF16;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;

// A kernel taking scalars a: `lhs` and b: `rhs` whose body computes
// op(a, b) and stores it nowhere (the result statement is returned).
struct BinaryKernel {
  Kernel kernel{"binary", SourceLocation{"k.py", 1}};
  Stmt* result = nullptr;

  BinaryKernel(BinaryOpKind op, PrimitiveType lhs, PrimitiveType rhs) {
    kernel.AddParam(KernelParam::Scalar("a", lhs));
    kernel.AddParam(KernelParam::Scalar("b", rhs));
    IRBuilder b(&kernel);
    result = b.Binary(op, b.ArgLoad(0), b.ArgLoad(1));
  }
};

struct PromotionCase {
  PrimitiveType lhs, rhs, expected;
};

class PromotionTest : public ::testing::TestWithParam<PromotionCase> {};

TEST_P(PromotionTest, AddPromotesBothSidesAndInsertsCasts) {
  const PromotionCase& c = GetParam();
  BinaryKernel k(BinaryOpKind::kAdd, c.lhs, c.rhs);
  ASSERT_TRUE(TypeCheck(k.kernel).ok());
  EXPECT_EQ(k.result->type(), DataType::Scalar(c.expected));
  for (Stmt* operand : k.result->operands()) {
    EXPECT_EQ(operand->type(), DataType::Scalar(c.expected));
  }
  // Exactly the operands of another type got a cast.
  int casts = (c.lhs != c.expected) + (c.rhs != c.expected);
  int found = 0;
  for (const auto& s : *k.kernel.body()) {
    if (auto* u = ir::DynCast<ir::UnaryOpStmt>(s.get()); u && u->is_cast())
      ++found;
  }
  EXPECT_EQ(found, casts);
  EXPECT_TRUE(ir::Verify(k.kernel).ok()) << ir::Verify(k.kernel);
}

INSTANTIATE_TEST_SUITE_P(
    Table, PromotionTest,
    ::testing::Values(
        PromotionCase{kI32, kI32, kI32},  // identical
        PromotionCase{kI32, kI64, kI64},  // wider int wins
        PromotionCase{kI8, kU16, kU16},
        PromotionCase{kI32, kU32, kU32},  // equal width: unsigned wins
        PromotionCase{kU8, kI8, kU8},
        PromotionCase{kI32, kF32, kF32},  // float wins over int
        PromotionCase{kI64, kF32, kF32}, PromotionCase{kF16, kI32, kF16},
        PromotionCase{kF32, kF64, kF64},  // wider float wins
        PromotionCase{kF16, kF32, kF32},
        PromotionCase{kU1, kI32, kI32},  // bool joins integer arithmetic
        PromotionCase{kU1, kF64, kF64}));

TEST(TypeCheckTest, TrueDivisionOfIntegersUsesDefaultFloat) {
  BinaryKernel k(BinaryOpKind::kDiv, kI32, kI32);
  ASSERT_TRUE(TypeCheck(k.kernel).ok());
  EXPECT_EQ(k.result->type(), DataType::Scalar(kF32));

  BinaryKernel k64(BinaryOpKind::kDiv, kI32, kI64);
  ASSERT_TRUE(TypeCheck(k64.kernel, {.default_fp = kF64}).ok());
  EXPECT_EQ(k64.result->type(), DataType::Scalar(kF64));

  BinaryKernel floor_div(BinaryOpKind::kFloorDiv, kI32, kI32);
  ASSERT_TRUE(TypeCheck(floor_div.kernel).ok());
  EXPECT_EQ(floor_div.result->type(), DataType::Scalar(kI32));
}

TEST(TypeCheckTest, ComparisonsAndLogicalOpsYieldBool) {
  BinaryKernel lt(BinaryOpKind::kLt, kI32, kF64);
  ASSERT_TRUE(TypeCheck(lt.kernel).ok());
  EXPECT_EQ(lt.result->type(), DataType::Scalar(kU1));
  EXPECT_EQ(lt.result->operand(0)->type(), DataType::Scalar(kF64));

  BinaryKernel both(BinaryOpKind::kLogicalAnd, kI32, kI64);
  ASSERT_TRUE(TypeCheck(both.kernel).ok());
  EXPECT_EQ(both.result->type(), DataType::Scalar(kU1));
  EXPECT_EQ(both.result->operand(0)->type(), DataType::Scalar(kU1));
  EXPECT_EQ(both.result->operand(1)->type(), DataType::Scalar(kU1));
}

TEST(TypeCheckTest, FloatMathOnIntegersUsesDefaultFloat) {
  Kernel kernel("math");
  kernel.AddParam(KernelParam::Scalar("n", kI32));
  IRBuilder b(&kernel);
  Stmt* sine = b.Unary(ir::UnaryOpKind::kSin, b.ArgLoad(0));
  Stmt* negated = b.Unary(ir::UnaryOpKind::kNeg, b.ArgLoad(0));
  Stmt* is_zero = b.Unary(ir::UnaryOpKind::kLogicalNot, b.ArgLoad(0));
  ASSERT_TRUE(TypeCheck(kernel, {.default_fp = kF64}).ok());
  EXPECT_EQ(sine->type(), DataType::Scalar(kF64));
  EXPECT_EQ(sine->operand(0)->type(), DataType::Scalar(kF64));
  EXPECT_EQ(negated->type(), DataType::Scalar(kI32));
  EXPECT_EQ(is_zero->type(), DataType::Scalar(kU1));
}

TEST(TypeCheckTest, StoresConvertTheValueToTheTargetType) {
  Kernel kernel("store");
  kernel.AddParam(KernelParam::Ndarray("out", kI32, 1));
  kernel.AddParam(KernelParam::Scalar("x", kF32));
  IRBuilder b(&kernel);
  Stmt* ptr = b.NdarrayPtr(0, {b.ConstI32(0)});
  auto* store = b.GlobalStore(ptr, b.ArgLoad(1));
  auto* atomic = b.Atomic(ir::AtomicOpKind::kAdd, ptr, b.ConstF64(1.5));
  ASSERT_TRUE(TypeCheck(kernel).ok());
  EXPECT_EQ(store->value()->type(), DataType::Scalar(kI32));
  EXPECT_TRUE(ir::DynCast<ir::UnaryOpStmt>(store->value())->is_cast());
  EXPECT_EQ(atomic->value()->type(), DataType::Scalar(kI32));
  EXPECT_EQ(atomic->type(), DataType::Scalar(kI32));
  EXPECT_TRUE(ir::Verify(kernel).ok()) << ir::Verify(kernel);
}

TEST(TypeCheckTest, LoopIndexTakesThePromotedBoundType) {
  Kernel kernel("loop");
  kernel.AddParam(KernelParam::Scalar("n", kI64));
  IRBuilder b(&kernel);
  auto* loop = b.RangeFor(b.ConstI32(0), b.ArgLoad(0));
  auto scope = b.EnterBlock(loop->body());
  Stmt* index = b.LoopIndex(loop);
  ASSERT_TRUE(TypeCheck(kernel).ok());
  EXPECT_EQ(loop->begin()->type(), DataType::Scalar(kI64));
  EXPECT_EQ(index->type(), DataType::Scalar(kI64));
}

// Each case builds a kernel with one ill-typed statement at k.py:7.
void ExpectTypeError(const std::function<void(IRBuilder&)>& build,
                     const std::string& expected_text) {
  Kernel kernel("bad_kernel", SourceLocation{"k.py", 1});
  kernel.AddParam(KernelParam::Scalar("x", kF32));
  kernel.AddParam(KernelParam::Scalar("n", kI32));
  kernel.AddParam(KernelParam::Ndarray("arr", kF32, 1));
  IRBuilder b(&kernel);
  b.SetLocation(SourceLocation{"k.py", 7});
  build(b);
  absl::Status status = TypeCheck(kernel);
  ASSERT_FALSE(status.ok()) << "expected: " << expected_text;
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kType);
  const std::string message(status.message());
  EXPECT_NE(message.find("k.py:7"), std::string::npos) << message;
  EXPECT_NE(message.find("'bad_kernel'"), std::string::npos) << message;
  EXPECT_NE(message.find(expected_text), std::string::npos) << message;
}

TEST(TypeCheckTest, MismatchesReportKernelAndLocation) {
  ExpectTypeError(
      [](IRBuilder& b) {
        b.Binary(BinaryOpKind::kBitAnd, b.ArgLoad(0), b.ArgLoad(1));
      },
      "bit_and needs integer operands, found f32 and i32");
  ExpectTypeError([](IRBuilder& b) { b.NdarrayPtr(2, {b.ArgLoad(0)}); },
                  "an index must be an integer, found f32");
  ExpectTypeError([](IRBuilder& b) { b.If(b.ArgLoad(0)); },
                  "a condition must be an integer, found f32");
  ExpectTypeError([](IRBuilder& b) { b.RangeFor(b.ConstI32(0), b.ArgLoad(0)); },
                  "a loop bound must be an integer, found f32");
  ExpectTypeError(
      [](IRBuilder& b) { b.Unary(ir::UnaryOpKind::kBitNot, b.ArgLoad(0)); },
      "bit_not takes integral inputs only: the operand is f32");
  ExpectTypeError(
      [](IRBuilder& b) { b.Unary(ir::UnaryOpKind::kLogicalNot, b.ArgLoad(0)); },
      "logical_not takes integral inputs only: the operand is f32");
  ExpectTypeError(
      [](IRBuilder& b) {
        b.Binary(BinaryOpKind::kLogicalOr, b.ArgLoad(1), b.ArgLoad(0));
      },
      "logical_or needs integer or boolean operands");
}

}  // namespace
}  // namespace quadrants::transforms
