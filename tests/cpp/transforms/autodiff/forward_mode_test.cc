// forward_mode.cc: every float value gets a tangent next to it; fields with
// a dual companion supply and receive them.
#include "quadrants/transforms/autodiff/forward_mode.h"

#include <gtest/gtest.h>

#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir_check::CheckKernel;
using transforms::autodiff::MakeForwardKernel;

class ForwardModeTest : public AutodiffTest {
 protected:
  absl::Status MakeTangents() {
    if (absl::Status lowered = Lower(); !lowered.ok())
      return lowered;
    absl::Status status = MakeForwardKernel(kernel_, snodes_);
    if (status.ok())
      EXPECT_TRUE(ir::Verify(kernel_, {.snodes = &snodes_}).ok());
    return status;
  }
};

// for i in range(16):
//   a = x[i]
//   v = sin(a)
//   for k in range(n): v = v * a
//   y[i] = v
// Field ids: x 2, x.dual 4, y 5, y.dual 7 (see AutodiffTest).
TEST_F(ForwardModeTest, TangentsFollowLocalsThroughALoop) {
  const int n = kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  auto scope = b_.EnterBlock(loop->body());
  Stmt* i = b_.LoopIndex(loop);
  Stmt* a = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  b_.LocalStore(v, b_.Unary(ir::UnaryOpKind::kSin, a));
  auto* inner = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(n));
  {
    auto body = b_.EnterBlock(inner->body());
    b_.LocalStore(v, b_.Mul(b_.LocalLoad(v), a));
  }
  b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.LocalLoad(v));
  ASSERT_EQ(MakeTangents(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[TASK]] = offloaded range_for
    CHECK: [[I]] : i32 = loop_index [[TASK]] axis 0
    // da = x.dual[i]
    CHECK: [[A]] : f32 = global_load
    CHECK-NEXT: [[XD]] : *f32 = field_ptr snode4[[[I]]]
    CHECK-NEXT: [[DA]] : f32 = global_load [[XD]]
    // v's tangent lives in a local of its own, zero at its declaration.
    CHECK-NEXT: [[V]] : *f32 = alloca
    CHECK-NEXT: [[DV]] : *f32 = alloca
    CHECK-NEXT: [[ZERO]] : f32 = const 0
    CHECK-NEXT: local_store [[DV]], [[ZERO]]
    // d sin(a) = da * cos(a)
    CHECK: [[S]] : f32 = sin [[A]]
    CHECK-NEXT: [[COS]] : f32 = cos [[A]]
    CHECK-NEXT: [[DS]] : f32 = mul [[DA]], [[COS]]
    CHECK-NEXT: local_store [[V]], [[S]]
    CHECK-NEXT: local_store [[DV]], [[DS]]
    // d(v * a) = dv * a + v * da, in the loop.
    CHECK: range_for
    CHECK-NEXT: [[OLD]] : f32 = local_load [[V]]
    CHECK-NEXT: [[DOLD]] : f32 = local_load [[DV]]
    CHECK-NEXT: [[NEW]] : f32 = mul [[OLD]], [[A]]
    CHECK-NEXT: [[T1]] : f32 = mul [[DOLD]], [[A]]
    CHECK-NEXT: [[T2]] : f32 = mul [[OLD]], [[DA]]
    CHECK-NEXT: [[DNEW]] : f32 = add [[T1]], [[T2]]
    CHECK-NEXT: local_store [[V]], [[NEW]]
    CHECK-NEXT: local_store [[DV]], [[DNEW]]
    CHECK-NEXT: }
    // y[i] = v and y.dual[i] = dv.
    CHECK: [[Y]] : *f32 = field_ptr snode5[[[I]]]
    CHECK-NEXT: [[OUT]] : f32 = local_load [[V]]
    CHECK-NEXT: [[DOUT]] : f32 = local_load [[DV]]
    CHECK-NEXT: global_store [[Y]], [[OUT]]
    CHECK-NEXT: [[YD]] : *f32 = field_ptr snode7[[[I]]]
    CHECK-NEXT: global_store [[YD]], [[DOUT]]
  )"));
}

// Values that depend on no dual field carry no tangent: f (id 10) has no
// dual, so the task stays the primal one.
TEST_F(ForwardModeTest, ValuesWithoutDualsCostNothing) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  auto scope = b_.EnterBlock(loop->body());
  Stmt* i = b_.LoopIndex(loop);
  Stmt* f = b_.GlobalLoad(b_.FieldPtr(fields_.f, {b_.ConstI32(0), i}));
  b_.GlobalStore(b_.FieldPtr(fields_.f, {b_.ConstI32(1), i}), b_.Mul(f, f));
  ASSERT_EQ(MakeTangents(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: body {
    CHECK: field_ptr snode10
    CHECK-NEXT: global_load
    CHECK-NEXT: const 1
    CHECK-NEXT: field_ptr snode10
    CHECK-NEXT: mul
    CHECK-NEXT: global_store
    CHECK-NEXT: }
  )"));
}

TEST_F(ForwardModeTest, AtomicMaxIntoADualFieldIsAnError) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  auto scope = b_.EnterBlock(loop->body());
  At(7);
  b_.Atomic(ir::AtomicOpKind::kMax, b_.FieldPtr(fields_.y, {b_.ConstI32(0)}),
            b_.GlobalLoad(b_.FieldPtr(fields_.x, {b_.LoopIndex(loop)})));
  absl::Status status = MakeTangents();
  EXPECT_TRUE(
      IsError(status, ErrorKind::kCompilation,
              "k.py:7: in kernel 'k': atomic_max into a field with a dual is "
              "not differentiable in forward mode"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
