// structure_continues.cc: break and continue become structured code, so
// that the loops around them can be reversed.
#include "quadrants/transforms/autodiff/structure_continues.h"

#include <gtest/gtest.h>

#include "quadrants/ir/statements.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir_check::CheckKernel;
using transforms::autodiff::StructureContinues;

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

class StructureContinuesTest : public AutodiffTest {
 protected:
  // for i in range(16):
  //   v = x[i]
  //   for k in range(n):         # k.py:3
  //     if v > 10: break         # k.py:4
  //     v = v * v                # k.py:5
  //   y[i] = v
  void BuildLoopWithBreak() {
    const int n =
        kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
    auto* outer = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(outer->body());
    Stmt* i = b_.LoopIndex(outer);
    Stmt* v = b_.Alloca(kF32);
    b_.LocalStore(v, b_.GlobalLoad(b_.FieldPtr(fields_.x, {i})));
    At(3);
    auto* inner = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(n));
    {
      auto body = b_.EnterBlock(inner->body());
      At(4);
      auto* leave = b_.If(
          b_.Binary(ir::BinaryOpKind::kGt, b_.LocalLoad(v), b_.ConstF32(10)));
      {
        auto then = b_.EnterBlock(leave->true_block());
        b_.Break();
      }
      At(5);
      Stmt* old = b_.LocalLoad(v);
      b_.LocalStore(v, b_.Mul(old, old));
    }
    At(6);
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.LocalLoad(v));
  }
};

// for i in range(16):
//   a = x[i]
//   if a < 0:                    # k.py:3
//     y[i] = 0
//     continue
//   y[i] = a * 2                 # k.py:6
TEST_F(StructureContinuesTest, ContinueMovesTheRestOfTheBodyIntoElse) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  {
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    Stmt* a = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
    At(3);
    auto* skip = b_.If(b_.Lt(a, b_.ConstF32(0)));
    {
      auto then = b_.EnterBlock(skip->true_block());
      b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.ConstF32(0));
      b_.Continue();
    }
    At(6);
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.Mul(a, b_.ConstF32(2)));
  }
  ASSERT_EQ(Lower(), absl::OkStatus());
  ASSERT_TRUE(CheckKernel(kernel_, "CHECK: continue"));
  EXPECT_TRUE(StructureContinues(kernel_));
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK-NOT: continue
    CHECK: [[A]] : f32 = global_load
    CHECK: [[C]] : u1 = cmp_lt [[A]],
    CHECK-NEXT: if [[C]] {
    CHECK: global_store
    CHECK-NEXT: } else {
    CHECK: mul [[A]],
    CHECK-NEXT: global_store
    CHECK-NEXT: }
    CHECK-NEXT: }
  )"));
}

// The break becomes a flag: declared at the task start, false before the
// loop, guarding the body, set instead of breaking.
TEST_F(StructureContinuesTest, BreakBecomesAFlagGuardingTheBody) {
  BuildLoopWithBreak();
  ASSERT_EQ(Lower(), absl::OkStatus());
  EXPECT_TRUE(StructureContinues(kernel_));
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: body {
    CHECK-NEXT: [[DONE]] : *u1 = alloca
    CHECK: [[NO]] : u1 = const 0
    CHECK-NEXT: local_store [[DONE]], [[NO]]
    CHECK-NEXT: range_for
    CHECK-NEXT: [[FINISHED]] : u1 = local_load [[DONE]]
    CHECK-NEXT: [[RUNNING]] : u1 = logical_not [[FINISHED]]
    CHECK-NEXT: if [[RUNNING]] {
    CHECK: cmp_gt
    CHECK-NEXT: if
    CHECK-NEXT: [[YES]] : u1 = const 1
    CHECK-NEXT: local_store [[DONE]], [[YES]]
    CHECK-NEXT: } else {
    CHECK: mul
    CHECK-NOT: break
    CHECK: global_store
  )"));
}

// Reversed, the flag is carried across iterations and decides a branch:
// it gets a stack of its own next to v's.
TEST_F(StructureContinuesTest, ReversedLoopWithBreakStacksTheFlag) {
  BuildLoopWithBreak();
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, "CHECK-NOT: break"));
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[FLAG_STACK]] : adstack<u1> = adstack_alloca
    CHECK: [[DONE]] : *u1 = alloca
    CHECK: range_for
    CHECK-NEXT: local_load [[DONE]]
    CHECK-NEXT: adstack_push [[FLAG_STACK]]
    CHECK: adstack_load_top [[FLAG_STACK]]
    CHECK-NEXT: local_store [[DONE]]
    CHECK: adstack_pop [[FLAG_STACK]]
  )"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
