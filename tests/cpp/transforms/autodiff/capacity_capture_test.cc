// Adstack capacities: K + 2 for a constant trip count K (reverse_mode.cc),
// else a SizeExpr evaluated at launch (capacity_capture.cc).
#include "quadrants/transforms/autodiff/capacity_capture.h"

#include <gtest/gtest.h>

#include "quadrants/ir/statements.h"
#include "quadrants/ir/walk.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir_check::CheckKernel;
using transforms::autodiff::CaptureStackCapacity;

class CapacityCaptureTest : public AutodiffTest {
 protected:
  // for i in range(16):
  //   v = x[i]
  //   for k in range(begin, end(i)): v = v * v
  //   y[i] = v
  // v is carried into a product: the inner loop needs a stack.
  template <typename EndFn>
  void BuildSquaring(int begin, EndFn end) {
    auto* outer = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(outer->body());
    Stmt* i = b_.LoopIndex(outer);
    Stmt* v = b_.Alloca(PrimitiveType::kF32);
    b_.LocalStore(v, b_.GlobalLoad(b_.FieldPtr(fields_.x, {i})));
    auto* inner = b_.RangeFor(b_.ConstI32(begin), end(i));
    {
      auto body = b_.EnterBlock(inner->body());
      Stmt* old = b_.LocalLoad(v);
      b_.LocalStore(v, b_.Mul(old, old));
    }
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.LocalLoad(v));
  }

  // The first range_for nested in a task of the lowered kernel.
  const Stmt* InnerLoop() {
    const Stmt* found = nullptr;
    ir::WalkKernel(kernel_, [&](const Stmt* s) {
      if (found == nullptr && ir::Isa<ir::RangeForStmt>(s))
        found = s;
    });
    return found;
  }
};

TEST_F(CapacityCaptureTest, ConstantTripCountGivesKPlusTwo) {
  BuildSquaring(/*begin=*/3, [&](Stmt*) { return b_.ConstI32(8); });
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[STACK]] : adstack<f32> = adstack_alloca max_size=7{{$}}
    CHECK-NOT: adstack_alloca
    CHECK: adstack_push [[STACK]]
  )"));
}

TEST_F(CapacityCaptureTest, ArgumentTripCountIsASizeExpr) {
  const int m = kernel_.AddParam(KernelParam::Scalar("m", PrimitiveType::kI32));
  BuildSquaring(/*begin=*/1, [&](Stmt*) { return b_.ArgLoad(m); });
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: adstack_alloca max_size=0 size_expr=((arg0 - 1) + 2){{$}}
  )"));
}

// range(n[i]) in a task over i: the largest trip count over the task's
// range, read from field n (id 8) at launch.
TEST_F(CapacityCaptureTest, FieldTripCountIsMaximizedOverTheTaskIndex) {
  BuildSquaring(/*begin=*/0, [&](Stmt* i) {
    return b_.GlobalLoad(b_.FieldPtr(fields_.n, {i}));
  });
  ASSERT_EQ(MakeGrad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: adstack_alloca max_size=0 size_expr=max_over_range(v0 in [0, 16), ((field(snode8)[v0] - 0) + 2)){{$}}
  )"));
}

// The capture itself, on the forward loop: range(i // 2) with i from the
// task maximizes over i.
TEST_F(CapacityCaptureTest, CaptureMaximizesOverEnclosingIndices) {
  BuildSquaring(/*begin=*/0, [&](Stmt* i) {
    return b_.Binary(ir::BinaryOpKind::kFloorDiv, i, b_.ConstI32(2));
  });
  ASSERT_EQ(Lower(), absl::OkStatus());
  const Stmt* loop = InnerLoop();
  ASSERT_NE(loop, nullptr);
  ir::SizeExpr::Ptr capacity = CaptureStackCapacity(*loop, snodes_);
  ASSERT_NE(capacity, nullptr);
  EXPECT_EQ(capacity->ToString(),
            "max_over_range(v0 in [0, 16), (((v0 // 2) - 0) + 2))");
}

// A bound outside the grammar (a float read cast to an integer) has no
// SizeExpr: the stack falls back to the default size.
TEST_F(CapacityCaptureTest, BoundOutsideTheGrammarHasNoSizeExpr) {
  BuildSquaring(/*begin=*/0, [&](Stmt* i) {
    return b_.Cast(b_.GlobalLoad(b_.FieldPtr(fields_.x, {i})),
                   PrimitiveType::kI32);
  });
  ASSERT_EQ(Lower(), absl::OkStatus());
  const Stmt* loop = InnerLoop();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(CaptureStackCapacity(*loop, snodes_), nullptr);
}

}  // namespace
}  // namespace quadrants::autodiff_test
