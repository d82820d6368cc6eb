// Gate capture (adstack_gate.cc): after reverse mode and its cleanup, a
// task whose adstacks are all used under one `if array[index] <op>
// constant` gets an adstack_row before its stacks; other shapes keep the
// thread's slices, with the reason.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "quadrants/ir/statements.h"
#include "quadrants/transforms/autodiff/adstack_gate.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::BinaryOpKind;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;
using ir_check::CheckKernel;

constexpr PrimitiveType kF32 = PrimitiveType::kF32;

class AdStackGateTest : public AutodiffTest {
 protected:
  // for i in range(x.shape[0]):
  //   if g[index(i)] > 0.5:        # k.py:2
  //     v = x[i]
  //     for k in range(n):         # k.py:3
  //       v = sin(v)
  //     y[i] = v
  void BuildGated(const std::function<std::vector<Stmt*>(Stmt*)>& index,
                  int gate_ndim = 1) {
    const int n =
        kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
    const int x = kernel_.AddParam(KernelParam::Ndarray("x", kF32, 1));
    const int g =
        kernel_.AddParam(KernelParam::Ndarray("g", kF32, gate_ndim));
    const int y = kernel_.AddParam(KernelParam::Ndarray("y", kF32, 1));
    auto* outer = b_.RangeFor(b_.ConstI32(0), b_.NdarrayShape(x, 0));
    auto scope = b_.EnterBlock(outer->body());
    Stmt* i = b_.LoopIndex(outer);
    Stmt* v = b_.Alloca(kF32);  // the front end declares locals up front
    At(2);
    auto* gate_ptr = b_.NdarrayPtr(g, index(i));
    gate_ptr->set_label("g");
    auto* branch = b_.If(b_.Binary(BinaryOpKind::kGt, b_.GlobalLoad(gate_ptr),
                                   b_.ConstF32(0.5f)));
    auto then_scope = b_.EnterBlock(branch->true_block());
    b_.LocalStore(v, b_.GlobalLoad(b_.NdarrayPtr(x, {i})));
    At(3);
    auto* inner = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(n));
    {
      auto inner_scope = b_.EnterBlock(inner->body());
      b_.LocalStore(v, b_.Unary(UnaryOpKind::kSin, b_.LocalLoad(v)));
    }
    b_.GlobalStore(b_.NdarrayPtr(y, {i}), b_.LocalLoad(v));
  }
};

TEST_F(AdStackGateTest, StacksUsedUnderOneGateLiveInAClaimedRow) {
  BuildGated([](Stmt* i) { return std::vector<Stmt*>{i}; });
  ASSERT_EQ(LowerReverse(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: offloaded range_for
    CHECK: [[I]] : i32 = loop_index
    CHECK: [[PTR]] : *f32 = ndarray_ptr arg2[[[I]]]
    CHECK-NEXT: [[G]] : f32 = global_load [[PTR]]
    CHECK: [[PASSES]] : u1 = cmp_gt [[G]],
    CHECK-NEXT: adstack_row [[PASSES]] gate=g[i0] > 0.5
    CHECK-NEXT: adstack_alloca
    CHECK-NOT: adstack_alloca
    CHECK: if [[PASSES]] {
    CHECK: adstack_push
    CHECK: if [[PASSES]] {
    CHECK: adstack_pop
  )"));
}

TEST_F(AdStackGateTest, AGateThatFoldsIterationsTogetherIsNotCaptured) {
  BuildGated([&](Stmt* i) {
    return std::vector<Stmt*>{
        b_.Binary(BinaryOpKind::kFloorDiv, i, b_.ConstI32(2))};
  });
  ASSERT_EQ(LowerReverse(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: adstack_alloca
    CHECK-NOT: adstack_row
  )"));
  const auto* task = ir::DynCast<ir::OffloadedTaskStmt>(kernel_.body()->at(0));
  ASSERT_NE(task, nullptr);
  Stmt* passes = nullptr;
  ir::AdStackGate gate;
  EXPECT_EQ(transforms::autodiff::FindAdStackGate(kernel_, snodes_, *task,
                                                  &passes, &gate),
            "the indices of 'g' may map several iterations to one element");
  EXPECT_EQ(passes, nullptr);
}

TEST_F(AdStackGateTest, ASplitOfTheLoopIndexIntoDigitsIsCaptured) {
  // g[i // 4, i % 4] names each iteration once (ndrange's flattening).
  BuildGated(
      [&](Stmt* i) {
        return std::vector<Stmt*>{
            b_.Binary(BinaryOpKind::kFloorDiv, i, b_.ConstI32(4)),
            b_.Binary(BinaryOpKind::kMod, i, b_.ConstI32(4))};
      },
      /*gate_ndim=*/2);
  ASSERT_EQ(LowerReverse(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: adstack_row {{.*}} gate=g[i0 // 4, (i0) % 4] > 0.5
    CHECK-NEXT: adstack_alloca
  )"));
}

TEST_F(AdStackGateTest, ADigitWithoutTheRestOfTheIndexIsNotCaptured) {
  // g[i % 4, 0]: iterations 4 apart read one element.
  BuildGated(
      [&](Stmt* i) {
        return std::vector<Stmt*>{
            b_.Binary(BinaryOpKind::kMod, i, b_.ConstI32(4)), b_.ConstI32(0)};
      },
      /*gate_ndim=*/2);
  ASSERT_EQ(LowerReverse(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, "CHECK-NOT: adstack_row"));
}

}  // namespace
}  // namespace quadrants::autodiff_test
