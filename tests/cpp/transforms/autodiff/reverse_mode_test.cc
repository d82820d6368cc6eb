// Reverse mode (reverse_mode.cc, carried_values.cc, backup_values.cc): the
// gradient kernel as MakeGradKernel emits it, before the cleanup.
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;
using ir_check::CheckKernel;

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

class ReverseModeTest : public AutodiffTest {
 protected:
  // for i in range(x.shape[0]):
  //   s = sin(x[i]); v = 1.0
  //   for k in range(n):         # k.py:3
  //     v = v * s + w[k]         # `v + s + w[k]` when linear
  //   y[i] = v
  void BuildRecurrence(bool linear) {
    const int n =
        kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
    const int x = kernel_.AddParam(KernelParam::Ndarray("x", kF32, 1));
    const int w = kernel_.AddParam(KernelParam::Ndarray("w", kF32, 1));
    const int y = kernel_.AddParam(KernelParam::Ndarray("y", kF32, 1));
    auto* outer = b_.RangeFor(b_.ConstI32(0), b_.NdarrayShape(x, 0));
    auto scope = b_.EnterBlock(outer->body());
    Stmt* i = b_.LoopIndex(outer);
    Stmt* s = b_.Unary(UnaryOpKind::kSin, b_.GlobalLoad(b_.NdarrayPtr(x, {i})));
    Stmt* v = b_.Alloca(kF32);
    b_.LocalStore(v, b_.ConstF32(1.0f));
    At(3);
    auto* inner = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(n));
    {
      auto inner_scope = b_.EnterBlock(inner->body());
      At(4);
      Stmt* old = b_.LocalLoad(v);
      Stmt* term = b_.GlobalLoad(b_.NdarrayPtr(w, {b_.LoopIndex(inner)}));
      Stmt* scaled = linear ? b_.Add(old, s) : b_.Mul(old, s);
      b_.LocalStore(v, b_.Add(scaled, term));
    }
    At(5);
    b_.GlobalStore(b_.NdarrayPtr(y, {i}), b_.LocalLoad(v));
  }
};

// The replay pushes v at the start of every iteration; the reversed loop
// runs k from n - 1 down, restores v from the top of the stack, replays
// the iteration, sweeps it and pops.
TEST_F(ReverseModeTest, DynamicLoopIsReplayedPushedAndReversedWithTheStack) {
  BuildRecurrence(/*linear=*/false);
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: kernel k(arg0 n: i32, arg1 x: ndarray<f32, 1>, arg2 w: ndarray<f32, 1>, arg3 y: ndarray<f32, 1>, arg4 x_grad: ndarray<f32, 1>, arg5 w_grad: ndarray<f32, 1>, arg6 y_grad: ndarray<f32, 1>)
    CHECK: [[TASK]] = offloaded range_for
    // One stack, for v, sized at launch.
    CHECK: [[STACK]] : adstack<f32> = adstack_alloca max_size=0 size_expr=
    CHECK-NOT: adstack_alloca
    CHECK: [[I]] : i32 = loop_index [[TASK]] axis 0
    CHECK: [[V]] : *f32 = alloca
    CHECK: [[N]] : i32 = arg_load arg0

    // Forward replay, without the store to y.
    CHECK: [[REPLAY]] = range_for [[BEGIN]], [[N]] {
    CHECK-NEXT: [[OLD]] : f32 = local_load [[V]]
    CHECK-NEXT: adstack_push [[STACK]], [[OLD]]
    CHECK: [[K]] : i32 = loop_index [[REPLAY]] axis 0
    CHECK: ndarray_ptr arg2[[[K]]]
    CHECK: local_store [[V]]
    CHECK-NEXT: }
    CHECK-NOT: global_store

    // Reverse sweep: y's adjoint is read and zeroed (the store replaced y[i]).
    CHECK: [[YG]] : *f32 = ndarray_ptr arg6[[[I]]]
    CHECK-NEXT: global_load [[YG]]
    CHECK: global_store [[YG]]
    CHECK-NOT: adstack_push
    // The loop, backwards: k = (n - 1) - (r - begin).
    CHECK: [[REVERSE]] = range_for [[BEGIN]], [[N]] {
    CHECK-NEXT: [[R]] : i32 = loop_index [[REVERSE]] axis 0
    CHECK: [[LAST]] : i32 = sub [[N]],
    CHECK-NEXT: [[DONE]] : i32 = sub [[R]], [[BEGIN]]
    CHECK-NEXT: [[KR]] : i32 = sub [[LAST]], [[DONE]]
    CHECK-NEXT: [[TOP]] : f32 = adstack_load_top [[STACK]]
    CHECK-NEXT: local_store [[V]], [[TOP]]
    CHECK: ndarray_ptr arg2[[[KR]]]
    CHECK: [[WG]] : *f32 = ndarray_ptr arg5[[[KR]]]
    CHECK: atomic_add [[WG]]
    CHECK: adstack_pop [[STACK]]
    CHECK-NEXT: }
    CHECK-NOT: adstack
    // x's adjoint: cos(x[i]) times the adjoint the loop left for s.
    CHECK: cos
    CHECK: [[XG]] : *f32 = ndarray_ptr arg4[[[I]]]
    CHECK: atomic_add [[XG]]
  )"));
}

// With checkpointing, the launch chooses the schedule through the stacks'
// capacities: a checkpoint stack of capacity >= 2 segments the loop into
// (segment stack capacity - 2) iterations. The replay pushes v onto the
// checkpoint stack at each segment start when segmented and onto the
// segment stack every iteration otherwise; the reversal runs the segments
// from the last, each restored from its checkpoint and recomputed onto the
// segment stack before its iterations are swept backwards.
TEST_F(ReverseModeTest, CheckpointedLoopTakesItsScheduleFromTheLaunch) {
  BuildRecurrence(/*linear=*/false);
  ASSERT_EQ(MakeGrad(/*adstack_enabled=*/true, /*checkpointing=*/true),
            absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[KEPT]] : adstack<f32> = adstack_alloca max_size=0 size_expr={{.*}} checkpoint_group=0 checkpoints{{$}}
    CHECK-NEXT: [[STACK]] : adstack<f32> = adstack_alloca max_size=0 size_expr={{.*}} checkpoint_group=0 segment{{$}}
    CHECK-NOT: adstack_alloca
    CHECK: [[V]] : *f32 = alloca
    CHECK: [[N]] : i32 = arg_load arg0

    // Forward replay: the schedule picks one of two copies of the loop, so
    // neither tests it per iteration.
    CHECK: [[KEPT_CAP]] : i32 = adstack_capacity [[KEPT]]
    CHECK: [[ON]] : u1 = cmp_ge [[KEPT_CAP]],
    CHECK: [[SEG_CAP]] : i32 = adstack_capacity [[STACK]]
    CHECK: [[LENGTH]] : i32 = max
    CHECK: if [[ON]] {
    CHECK-NEXT: [[SEGMENTED]] = range_for [[BEGIN]], [[N]] {
    CHECK-NEXT: [[K]] : i32 = loop_index [[SEGMENTED]] axis 0
    CHECK-NEXT: [[OFFSET]] : i32 = sub [[K]], [[BEGIN]]
    CHECK: mod [[OFFSET]], [[LENGTH]]
    CHECK: if
    CHECK-NEXT: [[START_V]] : f32 = local_load [[V]]
    CHECK-NEXT: adstack_push [[KEPT]], [[START_V]]
    CHECK-NEXT: } else {
    CHECK-NEXT: }
    CHECK-NOT: adstack_push
    CHECK: } else {
    CHECK-NEXT: [[EVERY]] = range_for [[BEGIN]], [[N]] {
    CHECK-NOT: if [[ON]]
    CHECK: [[OLD]] : f32 = local_load [[V]]
    CHECK-NEXT: adstack_push [[STACK]], [[OLD]]
    CHECK-NOT: adstack_push

    // Reversal: segments from the last.
    CHECK: [[ON2]] : u1 = cmp_ge
    CHECK: [[SEGMENTS]] : i32 = select [[ON2]],
    CHECK: [[SWEEP]] = range_for {{.*}}, [[SEGMENTS]] {
    CHECK: [[LO]] : i32 = select [[ON2]],
    CHECK: [[HI]] : i32 = select [[ON2]],
    CHECK: if [[ON2]] {
    CHECK-NEXT: [[START]] : f32 = adstack_load_top [[KEPT]]
    CHECK-NEXT: local_store [[V]], [[START]]
    CHECK-NEXT: adstack_pop [[KEPT]]
    CHECK: [[RECOMPUTE]] = range_for [[LO]], [[HI]] {
    CHECK: adstack_push [[STACK]],
    CHECK: [[REVERSE]] = range_for [[LO]], [[HI]] {
    CHECK: adstack_load_top [[STACK]]
    CHECK: adstack_pop [[STACK]]
  )"));
}

// v + s + w[k] is linear in v: reversing the loop needs no values of v, so
// no stack, but the loop still runs backwards.
TEST_F(ReverseModeTest, LinearRecurrenceIsReversedWithoutAStack) {
  BuildRecurrence(/*linear=*/true);
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK-NOT: adstack
    CHECK: [[N]] : i32 = arg_load arg0
    CHECK: range_for [[BEGIN]], [[N]] {
    CHECK: [[REVERSE]] = range_for [[BEGIN]], [[N]] {
    CHECK-NEXT: [[R]] : i32 = loop_index [[REVERSE]] axis 0
    CHECK: [[LAST]] : i32 = sub [[N]],
    CHECK-NEXT: [[DONE]] : i32 = sub [[R]], [[BEGIN]]
    CHECK-NEXT: [[KR]] : i32 = sub [[LAST]], [[DONE]]
    CHECK: ndarray_ptr arg5[[[KR]]]
  )"));
}

TEST_F(ReverseModeTest, NonLinearRecurrenceWithoutTheStackIsAnError) {
  BuildRecurrence(/*linear=*/false);
  absl::Status status = MakeGrad(/*adstack_enabled=*/false);
  EXPECT_TRUE(
      IsError(status, ErrorKind::kCompilation,
              "k.py:3: in kernel 'k': reverse-mode autodiff of this loop needs "
              "the adstack: a value carried across iterations is multiplied by "
              "a non-constant value. Enable it with "
              "qd.init(ad_stack_experimental_enabled=True)"));
}

// for i in range(16):
//   a = x[i]
//   if a > 0:                    # k.py:3
//     t = sin(a)
//     y[i] = t * t
// The sweep's copy of the branch needs t, computed in the replay's copy:
// t is backed up to a local declared at the task start.
TEST_F(ReverseModeTest, ValueComputedInABranchIsBackedUpForTheSweep) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  auto scope = b_.EnterBlock(loop->body());
  Stmt* i = b_.LoopIndex(loop);
  Stmt* a = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
  At(3);
  auto* branch = b_.If(b_.Binary(ir::BinaryOpKind::kGt, a, b_.ConstF32(0)));
  {
    auto then = b_.EnterBlock(branch->true_block());
    At(4);
    Stmt* t = b_.Unary(UnaryOpKind::kSin, a);
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.Mul(t, t));
  }
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[BACKUP]] : *f32 = alloca
    CHECK: [[A]] : f32 = global_load
    CHECK: [[C]] : u1 = cmp_gt [[A]],
    // Replay: t is stored right after it is computed.
    CHECK: if [[C]] {
    CHECK-NEXT: [[T]] : f32 = sin [[A]]
    CHECK-NEXT: local_store [[BACKUP]], [[T]]
    CHECK-NOT: global_store
    CHECK: } else {
    // Sweep: loaded back right before its use.
    CHECK: if [[C]] {
    CHECK: [[RESTORED]] : f32 = local_load [[BACKUP]]
    CHECK-NEXT: mul {{.*}}[[RESTORED]]
    CHECK-NOT: [[T]]
    CHECK: cos [[A]]
    CHECK: } else {
  )"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
