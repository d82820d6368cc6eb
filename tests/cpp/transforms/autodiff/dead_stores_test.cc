// dead_stores.cc, alone and as the cleanup after reverse mode: stores no
// path reads and adstacks nothing reads go.
#include "quadrants/transforms/dead_stores.h"

#include <gtest/gtest.h>

#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/type_check.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir_check::CheckKernel;
using transforms::EliminateDeadStores;

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

class DeadStoresTest : public AutodiffTest {
 protected:
  // The pass alone, on a typed kernel that is not offloaded.
  bool RunPass() {
    EXPECT_EQ(transforms::TypeCheck(kernel_), absl::OkStatus());
    const bool changed = EliminateDeadStores(kernel_);
    EXPECT_EQ(ir::Verify(kernel_), absl::OkStatus());
    return changed;
  }

  // for i in range(16):
  //   v = x[i]
  //   for k in range(n): v = sin(v) * a + x[i]
  //   y[i] = v
  // with a and n scalar arguments.
  void BuildSineRecurrence() {
    const int a = kernel_.AddParam(KernelParam::Scalar("a", kF32));
    const int n =
        kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
    auto* outer = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(outer->body());
    Stmt* i = b_.LoopIndex(outer);
    Stmt* x = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
    Stmt* v = b_.Alloca(kF32);
    b_.LocalStore(v, x);
    auto* inner = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(n));
    {
      auto body = b_.EnterBlock(inner->body());
      Stmt* sine = b_.Unary(ir::UnaryOpKind::kSin, b_.LocalLoad(v));
      b_.LocalStore(v, b_.Add(b_.Mul(sine, b_.ArgLoad(a)), x));
    }
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.LocalLoad(v));
  }
};

// v = 1; v = x; a[0] = v; v = 3: the first and last stores reach no read.
TEST_F(DeadStoresTest, RemovesOverwrittenAndUnreadStores) {
  kernel_.AddParam(KernelParam::Ndarray("a", kF32, 1));
  kernel_.AddParam(KernelParam::Scalar("x", kF32));
  Stmt* v = b_.Alloca(kF32);
  b_.LocalStore(v, b_.ConstF32(1));
  b_.LocalStore(v, b_.ArgLoad(1));
  b_.GlobalStore(b_.NdarrayPtr(0, {b_.ConstI32(0)}), b_.LocalLoad(v));
  b_.LocalStore(v, b_.ConstF32(3));
  EXPECT_TRUE(RunPass());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[V]] : *f32 = alloca
    CHECK-NOT: local_store
    CHECK: [[X]] : f32 = arg_load arg1
    CHECK-NEXT: local_store [[V]], [[X]]
    CHECK-NOT: local_store
    CHECK: global_store
    CHECK-NOT: local_store
  )"));
  EXPECT_FALSE(EliminateDeadStores(kernel_));
}

// A stack that is pushed and popped but never read goes with its pushes
// and pops; the one read stays.
TEST_F(DeadStoresTest, RemovesAStackThatIsOnlyPushedAndPopped) {
  kernel_.AddParam(KernelParam::Ndarray("a", kF32, 1));
  kernel_.AddParam(KernelParam::Scalar("x", kF32));
  Stmt* unread = b_.AdStackAlloca(kF32, 8);
  Stmt* read = b_.AdStackAlloca(PrimitiveType::kI32, 8);
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(4));
  {
    auto scope = b_.EnterBlock(loop->body());
    b_.AdStackPush(unread, b_.ArgLoad(1));
    b_.AdStackPush(read, b_.LoopIndex(loop));
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.AdStackLoadTop(read)}), b_.ConstF32(1));
    b_.AdStackPop(unread);
    b_.AdStackPop(read);
  }
  EXPECT_TRUE(RunPass());
  EXPECT_TRUE(CheckKernel(kernel_, "CHECK-NOT: adstack<f32>"));
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[STACK]] : adstack<i32> = adstack_alloca
    CHECK: range_for
    CHECK: loop_index
    CHECK-NEXT: adstack_push [[STACK]]
    CHECK-NEXT: [[TOP]] : i32 = adstack_load_top [[STACK]]
    CHECK: global_store
    CHECK-NEXT: adstack_pop [[STACK]]
    CHECK-NEXT: }
  )"));
}

// With sin's derivative stacked, the sweep reads cos(v) from its stack and
// v's restored value feeds only the replay, whose stores are dead: after
// the cleanup v's stack is gone and one stack, cos v's, remains.
TEST_F(DeadStoresTest, CleanupAfterReverseModeDropsTheUnreadStack) {
  BuildSineRecurrence();
  ASSERT_EQ(LowerReverse(/*stack_trig_derivatives=*/true), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[STACK]] : adstack<f32> = adstack_alloca
    CHECK-NOT: adstack_alloca
    CHECK: [[X]] : f32 = global_load
    CHECK-NEXT: [[VAR]] : *f32 = alloca
    CHECK-NEXT: local_store [[VAR]], [[X]]
    CHECK: range_for
    CHECK-NEXT: [[V]] : f32 = local_load [[VAR]]
    CHECK-NEXT: sin [[V]]
    CHECK-NEXT: [[COS]] : f32 = cos [[V]]
    CHECK-NEXT: adstack_push [[STACK]], [[COS]]
    // The reversed loop neither restores nor replays v.
    CHECK: range_for
    CHECK-NOT: [[VAR]]
    CHECK-NOT: sin
    CHECK: adstack_load_top [[STACK]]
    CHECK-NOT: [[VAR]]
    CHECK: adstack_pop [[STACK]]
  )"));
}

// Checkpointed, the same cleanup drops v's per-iteration stack but keeps
// its checkpoint stack (a segment's recomputation starts from it); the
// schedule's capacity read moves from v's dropped stack to cos v's, which
// serves the same loop in the same role.
TEST_F(DeadStoresTest, CleanupMovesTheScheduleReadToASurvivingStack) {
  BuildSineRecurrence();
  ASSERT_EQ(LowerReverse(/*stack_trig_derivatives=*/true,
                         /*checkpointing=*/true),
            absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[COS]] : adstack<f32> = adstack_alloca {{.*}} checkpoint_group=0 segment{{$}}
    CHECK-NEXT: [[KEPT]] : adstack<f32> = adstack_alloca {{.*}} checkpoint_group=0 checkpoints{{$}}
    CHECK-NOT: adstack_alloca
    CHECK: adstack_capacity [[KEPT]]
    CHECK: adstack_capacity [[COS]]
    CHECK: adstack_push [[KEPT]]
    CHECK: adstack_push [[COS]]
    CHECK: adstack_load_top [[KEPT]]
  )"));
}

// Without the stacked derivative the sweep needs v itself: its stack stays
// through the cleanup.
TEST_F(DeadStoresTest, CleanupKeepsTheStackTheSweepReads) {
  BuildSineRecurrence();
  ASSERT_EQ(LowerReverse(/*stack_trig_derivatives=*/false), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[STACK]] : adstack<f32> = adstack_alloca
    CHECK-NOT: adstack_alloca
    CHECK: [[VAR]] : *f32 = alloca
    CHECK: [[OLD]] : f32 = local_load [[VAR]]
    CHECK-NEXT: adstack_push [[STACK]], [[OLD]]
    CHECK: [[TOP]] : f32 = adstack_load_top [[STACK]]
    CHECK-NEXT: local_store [[VAR]], [[TOP]]
    CHECK-NEXT: [[V]] : f32 = local_load [[VAR]]
    CHECK: cos [[V]]
    CHECK: adstack_pop [[STACK]]
  )"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
