// Autodiff of qd.round, qd.frexp and qd.bit_cast (reverse_mode.cc,
// forward_mode.cc), and the errors for what has no derivative: the thread
// index and float atomic_mul.
#include <gtest/gtest.h>

#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/autodiff/forward_mode.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;
using ir_check::CheckKernel;

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

class RoundingOpsTest : public AutodiffTest {
 protected:
  // for i in range(16):
  //   a = x[i]
  //   y[i] = frexp_mantissa(a) + round(a)
  //          + bit_cast(bit_cast(a, i32), f32)     # k.py:3
  // Field ids: x 2 (x.grad 3, x.dual 4), y 5 (y.grad 6, y.dual 7).
  void BuildMantissaRoundAndBits() {
    auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    Stmt* a = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
    At(3);
    Stmt* m = b_.Unary(UnaryOpKind::kFrexpMantissa, a);
    Stmt* r = b_.Unary(UnaryOpKind::kRound, a);
    Stmt* same = b_.BitCast(b_.BitCast(a, PrimitiveType::kI32), kF32);
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.Add(b_.Add(m, r), same));
  }

  // for i in range(16): y[0] op= x[i]       # k.py:3
  void BuildAtomic(ir::AtomicOpKind op) {
    auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(loop->body());
    Stmt* x = b_.GlobalLoad(b_.FieldPtr(fields_.x, {b_.LoopIndex(loop)}));
    At(3);
    b_.Atomic(op, b_.FieldPtr(fields_.y, {b_.ConstI32(0)}), x);
  }
};

// The mantissa's slope is mantissa / x (2^-exponent), 0 at x = 0; round and
// the bit casts add nothing to x's adjoint.
TEST_F(RoundingOpsTest, MantissaSlopeIsItsRatioToTheInput) {
  BuildMantissaRoundAndBits();
  ASSERT_EQ(LowerReverse(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: offloaded range_for
    CHECK: [[A]] : f32 = global_load
    CHECK: [[M]] : f32 = frexp_mantissa [[A]]
    // Round and the bit casts are dead once the store is gone: nothing of
    // them reaches the sweep.
    CHECK-NOT: round
    CHECK-NOT: bit_cast
    // The sweep: y's adjoint times the slope is x's adjoint, which goes
    // into x.grad (snode 3).
    CHECK: [[ZERO]] : u1 = cmp_eq [[A]],
    CHECK-NEXT: [[RATIO]] : f32 = div [[M]], [[A]]
    CHECK-NEXT: [[SLOPE]] : f32 = select [[ZERO]], {{.*}}, [[RATIO]]
    CHECK-NEXT: [[D]] : f32 = mul {{.*}}, [[SLOPE]]
    CHECK-NEXT: [[OLD]] : f32 = local_load [[ADJ]]
    CHECK-NEXT: [[SUM]] : f32 = add [[OLD]], [[D]]
    CHECK-NEXT: local_store [[ADJ]], [[SUM]]
    CHECK-NEXT: [[GRAD]] : *f32 = field_ptr snode3
    CHECK-NEXT: [[TOTAL]] : f32 = local_load [[ADJ]]
    CHECK-NEXT: atomic_add [[GRAD]], [[TOTAL]]
    CHECK-NOT: atomic_add
  )"));
}

TEST_F(RoundingOpsTest, MantissaTangentInForwardMode) {
  BuildMantissaRoundAndBits();
  ASSERT_EQ(Lower(), absl::OkStatus());
  ASSERT_EQ(transforms::autodiff::MakeForwardKernel(kernel_, snodes_),
            absl::OkStatus());
  EXPECT_TRUE(ir::Verify(kernel_, {.snodes = &snodes_}).ok());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[A]] : f32 = global_load
    CHECK: [[DA]] : f32 = global_load
    CHECK: [[M]] : f32 = frexp_mantissa [[A]]
    CHECK: [[RATIO]] : f32 = div [[M]], [[A]]
    CHECK: [[SLOPE]] : f32 = select {{.*}}, [[RATIO]]
    CHECK: mul [[DA]], [[SLOPE]]
    // y.dual (snode 7) gets the mantissa's tangent alone.
    CHECK: field_ptr snode7
  )"));
}

TEST_F(RoundingOpsTest, ThreadIndexIsAnErrorInAGradientKernel) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
  {
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    Stmt* x = b_.GlobalLoad(b_.FieldPtr(fields_.x, {i}));
    At(3);
    Stmt* tid = b_.Cast(b_.ThreadIndex(), kF32);
    b_.GlobalStore(b_.FieldPtr(fields_.y, {i}), b_.Mul(x, tid));
  }
  EXPECT_TRUE(IsError(
      MakeGrad(), ErrorKind::kGradient,
      "k.py:3: in kernel 'k': qd.global_thread_idx() cannot be used in a "
      "kernel that is differentiated: the gradient kernel recomputes the "
      "forward pass, where another thread may run the same iteration, so "
      "the gradients would be wrong; use the loop index instead"));
}

TEST_F(RoundingOpsTest, FloatAtomicMulHasNoDerivative) {
  BuildAtomic(ir::AtomicOpKind::kMul);
  EXPECT_TRUE(IsError(MakeGrad(), ErrorKind::kCompilation,
                      "k.py:3: in kernel 'k': atomic_mul is not "
                      "differentiable"));
}

TEST_F(RoundingOpsTest, FloatAtomicExchangeHasNoDerivative) {
  BuildAtomic(ir::AtomicOpKind::kExchange);
  EXPECT_TRUE(IsError(MakeGrad(), ErrorKind::kCompilation,
                      "k.py:3: in kernel 'k': atomic_exchange is not "
                      "differentiable"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
