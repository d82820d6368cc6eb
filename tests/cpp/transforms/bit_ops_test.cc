// Rounding, bit-level ops, compare-and-swap and the thread index in the IR:
// their types and type errors (type_check.cc), compile-time evaluation
// (constant_eval.cc), verification, cloning and printing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/cloner.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/constant_eval.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms {
namespace {

using ir::AtomicOpKind;
using ir::Constant;
using ir::DataType;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;

constexpr PrimitiveType kU1 = PrimitiveType::kU1;
constexpr PrimitiveType kI8 = PrimitiveType::kI8;
constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kI64 = PrimitiveType::kI64;
constexpr PrimitiveType kU16 = PrimitiveType::kU16;
constexpr PrimitiveType kU32 = PrimitiveType::kU32;
constexpr PrimitiveType kU64 = PrimitiveType::kU64;
constexpr PrimitiveType kF16 = PrimitiveType::kF16;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;

// A kernel with one scalar parameter of `type` and `op` applied to it.
struct UnaryKernel {
  Kernel kernel{"unary", SourceLocation{"k.py", 1}};
  Stmt* result = nullptr;

  UnaryKernel(UnaryOpKind op, PrimitiveType type,
              PrimitiveType cast_to = kI32) {
    kernel.AddParam(KernelParam::Scalar("x", type));
    IRBuilder b(&kernel);
    result = b.Make<ir::UnaryOpStmt>(op, b.ArgLoad(0), cast_to);
  }
};

void ExpectTypeError(const absl::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kType) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), text)) << status;
}

TEST(BitOpsTypeCheck, BitCountsTakeIntegersAndYieldI32) {
  for (UnaryOpKind op :
       {UnaryOpKind::kClz, UnaryOpKind::kPopcnt, UnaryOpKind::kFfs}) {
    for (PrimitiveType t : {kI8, kU16, kI32, kU64}) {
      UnaryKernel k(op, t);
      ASSERT_TRUE(TypeCheck(k.kernel).ok());
      EXPECT_EQ(k.result->type(), DataType::Scalar(kI32));
      EXPECT_TRUE(ir::Verify(k.kernel).ok()) << ir::Verify(k.kernel);
    }
    const std::string name(ir::OpName(op));
    UnaryKernel on_float(op, kF32);
    ExpectTypeError(
        TypeCheck(on_float.kernel),
        name + " takes integral inputs only (i8 to u64), found f32");
    UnaryKernel on_bool(op, kU1);
    ExpectTypeError(TypeCheck(on_bool.kernel), "found u1");
  }
}

TEST(BitOpsTypeCheck, RoundAndFrexpTakeFloats) {
  UnaryKernel round(UnaryOpKind::kRound, kF64);
  UnaryKernel mantissa(UnaryOpKind::kFrexpMantissa, kF16);
  UnaryKernel exponent(UnaryOpKind::kFrexpExponent, kF64);
  for (UnaryKernel* k : {&round, &mantissa, &exponent})
    ASSERT_TRUE(TypeCheck(k->kernel).ok());
  EXPECT_EQ(round.result->type(), DataType::Scalar(kF64));
  EXPECT_EQ(mantissa.result->type(), DataType::Scalar(kF16));
  EXPECT_EQ(exponent.result->type(), DataType::Scalar(kI32));
  EXPECT_TRUE(ir::Verify(exponent.kernel).ok());

  UnaryKernel round_int(UnaryOpKind::kRound, kI32);
  ExpectTypeError(TypeCheck(round_int.kernel),
                  "round takes real inputs only, found i32");
  UnaryKernel frexp_int(UnaryOpKind::kFrexpExponent, kI64);
  ExpectTypeError(TypeCheck(frexp_int.kernel),
                  "frexp takes real inputs only, found i64");
}

TEST(BitOpsTypeCheck, BitCastNeedsEqualWidths) {
  UnaryKernel ok(UnaryOpKind::kBitCast, kF32, kU32);
  ASSERT_TRUE(TypeCheck(ok.kernel).ok());
  EXPECT_EQ(ok.result->type(), DataType::Scalar(kU32));
  EXPECT_TRUE(ir::Verify(ok.kernel).ok());

  UnaryKernel wider(UnaryOpKind::kBitCast, kF64, kI32);
  ExpectTypeError(TypeCheck(wider.kernel),
                  "bit_cast needs types of the same size, but f64 has 64 bits "
                  "and i32 has 32");
  UnaryKernel boolean(UnaryOpKind::kBitCast, kU1, kI8);
  ExpectTypeError(TypeCheck(boolean.kernel), "bit_cast cannot convert u1");
}

TEST(BitOpsTypeCheck, CompareAndSwapConvertsBothValuesAndRejectsFloats) {
  Kernel kernel("cas", SourceLocation{"k.py", 1});
  kernel.AddParam(KernelParam::Ndarray("a", kU64, 1));
  kernel.AddParam(KernelParam::Ndarray("f", kF32, 1));
  IRBuilder b(&kernel);
  Stmt* ptr = b.NdarrayPtr(0, {b.ConstI32(0)});
  auto* cas = b.Atomic(AtomicOpKind::kCas, ptr, b.ConstI32(5), b.ConstI32(-1));
  ASSERT_TRUE(TypeCheck(kernel).ok());
  EXPECT_EQ(cas->value()->type(), DataType::Scalar(kU64));
  EXPECT_EQ(cas->expected()->type(), DataType::Scalar(kU64));
  EXPECT_TRUE(ir::Verify(kernel).ok()) << ir::Verify(kernel);

  b.Atomic(AtomicOpKind::kCas, b.NdarrayPtr(1, {b.ConstI32(0)}), b.ConstF32(1),
           b.ConstF32(0));
  ExpectTypeError(TypeCheck(kernel), "atomic_cas needs an integer target");
}

TEST(BitOpsVerifier, OnlyCompareAndSwapHasAnExpectedValue) {
  Kernel kernel("atomics", SourceLocation{"k.py", 1});
  kernel.AddParam(KernelParam::Ndarray("a", kI32, 1));
  IRBuilder b(&kernel);
  Stmt* ptr = b.NdarrayPtr(0, {b.ConstI32(0)});
  b.Atomic(AtomicOpKind::kExchange, ptr, b.ConstI32(1), b.ConstI32(2));
  ASSERT_TRUE(TypeCheck(kernel).ok());
  absl::Status status = ir::Verify(kernel);
  ASSERT_FALSE(status.ok());
  EXPECT_TRUE(absl::StrContains(status.message(),
                                "only atomic_cas takes a third operand"))
      << status;
}

TEST(BitOpsIr, ThreadIndexAndCompareAndSwapPrintAndClone) {
  Kernel kernel("k", SourceLocation{"k.py", 1});
  kernel.AddParam(KernelParam::Ndarray("a", kI32, 1));
  IRBuilder b(&kernel);
  Stmt* ptr = b.NdarrayPtr(0, {b.ConstI32(0)});
  Stmt* tid = b.ThreadIndex();
  b.Atomic(AtomicOpKind::kCas, ptr, tid, b.ConstI32(7));
  ASSERT_TRUE(TypeCheck(kernel).ok());
  ASSERT_TRUE(ir::Verify(kernel).ok()) << ir::Verify(kernel);
  const std::string text = ir::PrintKernel(kernel);
  EXPECT_TRUE(absl::StrContains(text, ": i32 = thread_index")) << text;
  EXPECT_TRUE(absl::StrContains(text, "= atomic_cas ")) << text;
  // Not pure: two thread indices stay two statements.
  EXPECT_FALSE(tid->is_pure());

  std::unique_ptr<Kernel> copy = ir::CloneKernel(kernel);
  EXPECT_EQ(ir::PrintKernel(*copy), text);
  EXPECT_TRUE(ir::Verify(*copy).ok());
}

// ---- compile-time evaluation -----------------------------------------------

int32_t Eval(UnaryOpKind op, Constant x) {
  absl::optional<Constant> r = EvalUnary(op, x, kI32);
  EXPECT_TRUE(r.has_value());
  return r ? static_cast<int32_t>(r->as_int()) : -1;
}

TEST(BitOpsConstantEval, BitCountsUseTheOperandsWidth) {
  const Constant minus_one = Constant::Int(kI64, -1);
  EXPECT_EQ(Eval(UnaryOpKind::kClz, Constant::Int(kI32, 0)), 32);
  EXPECT_EQ(Eval(UnaryOpKind::kClz, Constant::Int(kI8, 1)), 7);
  EXPECT_EQ(Eval(UnaryOpKind::kClz, minus_one), 0);
  EXPECT_EQ(Eval(UnaryOpKind::kClz, Constant::Int(kU64, 1LL << 40)), 23);
  EXPECT_EQ(Eval(UnaryOpKind::kPopcnt, minus_one), 64);
  EXPECT_EQ(Eval(UnaryOpKind::kPopcnt, Constant::Int(kI8, -1)), 8);
  EXPECT_EQ(Eval(UnaryOpKind::kPopcnt, Constant::Int(kI32, 10000)), 5);
  EXPECT_EQ(Eval(UnaryOpKind::kFfs, Constant::Int(kI32, 0)), 0);
  EXPECT_EQ(Eval(UnaryOpKind::kFfs, Constant::Int(kI32, 0xF00)), 9);
  EXPECT_EQ(Eval(UnaryOpKind::kFfs,
                 Constant::Int(kU64, static_cast<int64_t>(1ULL << 63))),
            64);
  EXPECT_FALSE(EvalUnary(UnaryOpKind::kClz, Constant::Float(kF32, 1.0), kI32));
}

TEST(BitOpsConstantEval, RoundIsHalfAwayFromZero) {
  auto round = [](PrimitiveType t, double v) {
    return EvalUnary(UnaryOpKind::kRound, Constant::Float(t, v), t)->as_float();
  };
  EXPECT_EQ(round(kF32, 2.5), 3.0);
  EXPECT_EQ(round(kF32, -2.5), -3.0);
  EXPECT_EQ(round(kF64, 0.49999999999999994), 0.0);
  EXPECT_EQ(round(kF32, std::nextafter(0.5f, 0.0f)), 0.0);
  EXPECT_TRUE(std::signbit(round(kF64, -0.3)));
}

TEST(BitOpsConstantEval, FrexpMatchesC) {
  auto frexp = [](double v) {
    const Constant x = Constant::Float(kF64, v);
    return std::make_pair(
        EvalUnary(UnaryOpKind::kFrexpMantissa, x, kF64)->as_float(),
        EvalUnary(UnaryOpKind::kFrexpExponent, x, kI32)->as_int());
  };
  EXPECT_EQ(frexp(1.4), std::make_pair(0.7, int64_t{1}));
  EXPECT_EQ(frexp(-12.0), std::make_pair(-0.75, int64_t{4}));
  EXPECT_EQ(frexp(0x1p-1070), std::make_pair(0.5, int64_t{-1069}));
  EXPECT_EQ(frexp(0.0), std::make_pair(0.0, int64_t{0}));
  EXPECT_EQ(frexp(INFINITY).second, 0);
  EXPECT_TRUE(std::isnan(frexp(NAN).first));
}

TEST(BitOpsConstantEval, BitCastReinterpretsTheBits) {
  absl::optional<Constant> bits =
      EvalUnary(UnaryOpKind::kBitCast, Constant::Float(kF32, 1.0), kU32);
  ASSERT_TRUE(bits);
  EXPECT_EQ(bits->as_uint(), 0x3F800000u);
  absl::optional<Constant> back = EvalUnary(
      UnaryOpKind::kBitCast,
      Constant::Int(kU64, static_cast<int64_t>(0xC000000000000000ULL)), kF64);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->as_float(), -2.0);
  absl::optional<Constant> sign =
      EvalUnary(UnaryOpKind::kBitCast, Constant::Int(kI32, -1), kU32);
  ASSERT_TRUE(sign);
  EXPECT_EQ(sign->as_uint(), 0xFFFFFFFFu);
  // f16 bits are left to run time.
  EXPECT_FALSE(
      EvalUnary(UnaryOpKind::kBitCast, Constant::Float(kF16, 1.0), kU16));
}

}  // namespace
}  // namespace quadrants::transforms
