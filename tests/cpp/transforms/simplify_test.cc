#include "quadrants/transforms/simplify.h"

#include <gtest/gtest.h>

#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms {
namespace {

using ir::BinaryOpKind;
using ir::Constant;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;

// Stores `value` into out[0] so it stays observable, type checks, then runs
// Simplify and returns the stored value.
class SimplifyTest : public ::testing::Test {
 protected:
  SimplifyTest() : kernel_("k"), b_(&kernel_) {
    kernel_.AddParam(KernelParam::Ndarray("out", PrimitiveType::kI32, 1));
    kernel_.AddParam(KernelParam::Scalar("x", PrimitiveType::kI32));
    kernel_.AddParam(KernelParam::Scalar("f", PrimitiveType::kF32));
  }

  Stmt* StoreAndSimplify(Stmt* value, bool expect_change = true) {
    store_ = b_.GlobalStore(b_.NdarrayPtr(0, {b_.ConstI32(0)}), value);
    EXPECT_TRUE(TypeCheck(kernel_).ok());
    // Storing converts to i32; look through that cast to the value itself.
    EXPECT_EQ(Simplify(kernel_), expect_change) << ir::PrintKernel(kernel_);
    EXPECT_TRUE(ir::Verify(kernel_).ok()) << ir::Verify(kernel_);
    return store_->value();
  }

  static const Constant& ConstValue(Stmt* s) {
    const auto* c = ir::DynCast<ir::ConstStmt>(s);
    EXPECT_NE(c, nullptr) << "not a constant";
    static const Constant kNone = Constant::Int(PrimitiveType::kI32, -999999);
    return c ? c->value() : kNone;
  }

  Stmt* I32(int32_t v) { return b_.ConstI32(v); }
  Stmt* I8(int v) { return b_.Const(Constant::Int(PrimitiveType::kI8, v)); }

  Kernel kernel_;
  IRBuilder b_;
  ir::GlobalStoreStmt* store_ = nullptr;
};

TEST_F(SimplifyTest, FoldsNestedArithmetic) {
  Stmt* v = StoreAndSimplify(b_.Mul(b_.Add(I32(1), I32(2)), I32(3)));
  EXPECT_EQ(ConstValue(v).as_int(), 9);
  // Nothing but constants, the pointer and the store remain.
  for (const auto& s : *kernel_.body()) {
    EXPECT_FALSE(ir::Isa<ir::BinaryOpStmt>(s.get()))
        << ir::PrintKernel(kernel_);
  }
}

TEST_F(SimplifyTest, IntegerArithmeticWrapsAtItsWidth) {
  Stmt* sum = b_.Add(I8(127), I8(1));
  StoreAndSimplify(sum);
  // The i8 sum folded to -128 before the store converted it to i32.
  bool found = false;
  for (const auto& s : *kernel_.body()) {
    if (auto* c = ir::DynCast<ir::ConstStmt>(s.get())) {
      if (c->value() == Constant::Int(PrimitiveType::kI8, -128))
        found = true;
    }
  }
  EXPECT_TRUE(found) << ir::PrintKernel(kernel_);
  EXPECT_EQ(ConstValue(store_->value()).as_int(), -128);
}

TEST_F(SimplifyTest, FloorDivisionAndModuloFollowPython) {
  Stmt* v = StoreAndSimplify(b_.Add(
      b_.Mul(b_.Binary(BinaryOpKind::kFloorDiv, I32(-7), I32(2)), I32(100)),
      b_.Binary(BinaryOpKind::kMod, I32(-7), I32(2))));
  EXPECT_EQ(ConstValue(v).as_int(), -4 * 100 + 1);
}

TEST_F(SimplifyTest, IntegerDivisionByZeroIsLeftForRunTime) {
  Stmt* v = StoreAndSimplify(b_.Binary(BinaryOpKind::kFloorDiv, I32(1), I32(0)),
                             /*expect_change=*/false);
  EXPECT_TRUE(ir::Isa<ir::BinaryOpStmt>(v));
}

TEST_F(SimplifyTest, IdentitiesDropTheOperation) {
  Stmt* x = b_.ArgLoad(1);
  Stmt* v = StoreAndSimplify(b_.Sub(b_.Mul(b_.Add(x, I32(0)), I32(1)), I32(0)));
  EXPECT_EQ(v, x) << ir::PrintKernel(kernel_);
}

TEST_F(SimplifyTest, IntegerTimesZeroAndSelfSubtractionAreZero) {
  Stmt* x = b_.ArgLoad(1);
  Stmt* v = StoreAndSimplify(b_.Add(b_.Mul(x, I32(0)), b_.Sub(x, x)));
  EXPECT_EQ(ConstValue(v).as_int(), 0);
}

TEST_F(SimplifyTest, FloatPlusZeroIsKeptSinceMinusZeroPlusZeroIsZero) {
  Stmt* f = b_.ArgLoad(2);
  Stmt* sum = b_.Add(f, b_.ConstF32(0.0f));
  StoreAndSimplify(sum, /*expect_change=*/false);
  EXPECT_TRUE(ir::Isa<ir::BinaryOpStmt>(store_->value()->operand(0)));
}

TEST_F(SimplifyTest, SelectAndIfOnConstantsKeepTheTakenSide) {
  Stmt* x = b_.ArgLoad(1);
  Stmt* chosen = b_.Select(b_.ConstBool(false), I32(5), x);
  auto* branch = b_.If(b_.Binary(BinaryOpKind::kLt, I32(1), I32(2)));
  {
    auto scope = b_.EnterBlock(branch->true_block());
    b_.GlobalStore(b_.NdarrayPtr(0, {I32(1)}), I32(11));
  }
  {
    auto scope = b_.EnterBlock(branch->false_block());
    b_.GlobalStore(b_.NdarrayPtr(0, {I32(1)}), I32(22));
  }
  Stmt* v = StoreAndSimplify(chosen);
  EXPECT_EQ(v, x);
  const std::string text = ir::PrintKernel(kernel_);
  EXPECT_EQ(text.find("= if"), std::string::npos) << text;
  EXPECT_NE(text.find("const 11"), std::string::npos) << text;
  EXPECT_EQ(text.find("const 22"), std::string::npos) << text;
}

TEST_F(SimplifyTest, CastsFoldWithTruncationTowardZero) {
  Stmt* v = StoreAndSimplify(b_.Cast(b_.ConstF64(-2.75), PrimitiveType::kI32));
  EXPECT_EQ(ConstValue(v).as_int(), -2);
}

}  // namespace
}  // namespace quadrants::transforms
