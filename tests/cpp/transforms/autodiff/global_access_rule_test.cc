// global_access_rule.cc: a differentiated kernel may not overwrite a field
// element after reading it, since the gradient kernel reads it again.
#include "quadrants/transforms/autodiff/global_access_rule.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/statements.h"
#include "tests/cpp/transforms/autodiff/autodiff_fixture.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::autodiff_test {
namespace {

using ir::Stmt;
using ir_check::CheckKernel;
using transforms::autodiff::CheckGlobalDataAccessRule;

class GlobalAccessRuleTest : public AutodiffTest {
 protected:
  // f[t, i] as the front end emits it, labelled with the user's name.
  Stmt* State(Stmt* t, Stmt* i) {
    auto* ptr = b_.FieldPtr(fields_.f, {t, i});
    ptr->set_label("state");
    return ptr;
  }

  // for i in range(16):
  //   for t in range(7):                          # k.py:3
  //     old = f[t + read_step, i]                 # k.py:4
  //     f[t + write_step, i] = old * 2 (linear) or old * old   # k.py:5
  void BuildTimeSteps(int read_step, int write_step, bool linear = false) {
    auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(16));
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    At(3);
    auto* steps = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(7));
    auto body = b_.EnterBlock(steps->body());
    Stmt* t = b_.LoopIndex(steps);
    At(4);
    Stmt* old = b_.GlobalLoad(State(b_.Add(t, b_.ConstI32(read_step)), i));
    At(5);
    b_.GlobalStore(State(b_.Add(t, b_.ConstI32(write_step)), i),
                   b_.Mul(old, linear ? b_.ConstF32(2) : old));
  }

  // for i in range(16):                           # k.py:2
  //   f[0, i] = f[0, i - shift] + 1               # k.py:3, 4
  void BuildParallelShift(int shift) {
    At(2);
    auto* loop = b_.RangeFor(b_.ConstI32(1), b_.ConstI32(16));
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    At(3);
    Stmt* old = b_.GlobalLoad(State(b_.ConstI32(0),
                                    b_.Sub(i, b_.ConstI32(shift))));
    At(4);
    b_.GlobalStore(State(b_.ConstI32(0), i), b_.Add(old, b_.ConstF32(1)));
  }

  absl::Status Check() {
    if (absl::Status lowered = Lower(); !lowered.ok())
      return lowered;
    return CheckGlobalDataAccessRule(kernel_, snodes_);
  }
};

std::string Violation(absl::string_view read, absl::string_view write) {
  return absl::StrCat(
      write, ": in kernel 'k': field 'state' is read at ", read,
      " and later overwritten at ", write,
      " (the same element, or one that cannot be told apart from it). The "
      "gradient kernel reads the value again and would see the new one, so "
      "this kernel cannot be differentiated. Write the new value to another "
      "element (for example index the state by time step: x[t + 1, i] = "
      "f(x[t, i])) or to another field, or split the kernel");
}

// f[t + 1, i] = f[t, i] * 2: no later step writes an element an earlier
// one read. The gradient kernel moves each step's adjoint back: it reads
// f.grad[t + 1, i] (id 11), zeroes it and adds into f.grad[t, i].
TEST_F(GlobalAccessRuleTest, AcceptsWritingTheNextTimeStep) {
  BuildTimeSteps(/*read_step=*/0, /*write_step=*/1);
  ASSERT_EQ(Check(), absl::OkStatus());
  ASSERT_EQ(Grad(), absl::OkStatus());
  EXPECT_TRUE(CheckKernel(kernel_, R"(
    CHECK: [[TASK]] = offloaded range_for
    CHECK: [[I]] : i32 = loop_index [[TASK]] axis 0
    CHECK: range_for
    CHECK: [[REVERSE]] = range_for
    CHECK-NEXT: loop_index [[REVERSE]]
    CHECK: [[LAST]] : i32 = sub
    CHECK-NEXT: [[DONE]] : i32 = sub
    CHECK-NEXT: [[T]] : i32 = sub [[LAST]], [[DONE]]
    CHECK: [[NEXT]] : i32 = add [[T]],
    CHECK: [[TO]] : *f32 = field_ptr snode11[[[NEXT]], [[I]]]
    CHECK-NEXT: global_load [[TO]]
    CHECK: global_store [[TO]]
    CHECK: [[FROM]] : *f32 = field_ptr snode11[[[T]], [[I]]]
    CHECK: atomic_add [[FROM]]
  )"));
}

// f[t, i] = f[t, i] * f[t, i] overwrites the element it read.
TEST_F(GlobalAccessRuleTest, RejectsOverwritingTheElementRead) {
  BuildTimeSteps(/*read_step=*/0, /*write_step=*/0);
  absl::Status status = Check();
  EXPECT_TRUE(IsError(status, ErrorKind::kGlobalDataAccess,
                      Violation("k.py:4", "k.py:5")));
}

// f[t, i] = f[t + 1, i] ** 2: the next step overwrites what this one read.
TEST_F(GlobalAccessRuleTest, RejectsOverwritingInALaterIteration) {
  BuildTimeSteps(/*read_step=*/1, /*write_step=*/0);
  absl::Status status = Check();
  EXPECT_TRUE(IsError(status, ErrorKind::kGlobalDataAccess,
                      Violation("k.py:4", "k.py:5")));
}

// f[t, i] = f[t, i] * 2 and f[t, i] = f[t + 1, i] * 2 overwrite what they
// read, but no adjoint needs the old value: a linear update is accepted.
TEST_F(GlobalAccessRuleTest, AcceptsOverwritingAValueOnlyUsedLinearly) {
  BuildTimeSteps(/*read_step=*/0, /*write_step=*/0, /*linear=*/true);
  EXPECT_EQ(Check(), absl::OkStatus());
}

TEST_F(GlobalAccessRuleTest, AcceptsALinearShiftOverALaterIteration) {
  BuildTimeSteps(/*read_step=*/1, /*write_step=*/0, /*linear=*/true);
  EXPECT_EQ(Check(), absl::OkStatus());
}

// f[0, i] = f[0, i - 1] + 1 in the parallel loop: iteration i reads what
// iteration i - 1 writes, in no fixed order.
TEST_F(GlobalAccessRuleTest, RejectsReadingAnotherIterationInAParallelLoop) {
  BuildParallelShift(/*shift=*/1);
  absl::Status status = Check();
  EXPECT_TRUE(IsError(
      status, ErrorKind::kGlobalDataAccess,
      "k.py:3: in kernel 'k': Cross-iteration read-after-write through "
      "field 'state': one iteration of the parallel loop at k.py:2 writes at "
      "k.py:4 the element another iteration reads at k.py:3. The iterations "
      "run in parallel, so the value read depends on their order and the "
      "gradient cannot follow it. Make the loop serial "
      "(qd.loop_config(serialize=True)), put it inside an outer loop, or read "
      "the previous values from another field"));
}

// f[0, i] = f[0, i] + 1: each iteration updates its own element.
TEST_F(GlobalAccessRuleTest, AcceptsEachIterationUpdatingItsOwnElement) {
  BuildParallelShift(/*shift=*/0);
  EXPECT_EQ(Check(), absl::OkStatus());
}

}  // namespace
}  // namespace quadrants::autodiff_test
