#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/ir/walk.h"
#include "quadrants/transforms/cse.h"
#include "quadrants/transforms/dce.h"
#include "quadrants/transforms/dead_stores.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms {
namespace {

using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;

int Count(const Kernel& kernel, ir::StmtKind kind) {
  int n = 0;
  ir::WalkKernel(kernel, [&](const Stmt* s) { n += s->kind() == kind; });
  return n;
}

bool Present(const Kernel& kernel, const Stmt* wanted) {
  bool found = false;
  ir::WalkKernel(kernel, [&](const Stmt* s) { found |= s == wanted; });
  return found;
}

class PassTest : public ::testing::Test {
 protected:
  PassTest() : kernel_("k"), b_(&kernel_) {
    kernel_.AddParam(KernelParam::Ndarray("a", PrimitiveType::kF32, 1));
    kernel_.AddParam(KernelParam::Scalar("x", PrimitiveType::kF32));
    kernel_.AddParam(KernelParam::Scalar("n", PrimitiveType::kI32));
  }
  Stmt* Elem(int i) { return b_.NdarrayPtr(0, {b_.ConstI32(i)}); }
  void Typed() {
    ASSERT_TRUE(TypeCheck(kernel_).ok());
    ASSERT_TRUE(ir::Verify(kernel_).ok());
  }

  Kernel kernel_;
  IRBuilder b_;
};

TEST_F(PassTest, CseMergesEqualPureStatements) {
  Stmt* x = b_.ArgLoad(1);
  Stmt* first = b_.Mul(x, x);
  Stmt* second = b_.Mul(b_.ArgLoad(1), b_.ArgLoad(1));
  b_.GlobalStore(Elem(0), b_.Add(first, second));
  Typed();
  ASSERT_EQ(Count(kernel_, ir::StmtKind::kBinaryOp), 3);
  EXPECT_TRUE(EliminateCommonSubexpressions(kernel_));
  EXPECT_TRUE(ir::Verify(kernel_).ok()) << ir::Verify(kernel_);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kBinaryOp), 2)
      << ir::PrintKernel(kernel_);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kArgLoad), 1);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kNdarrayPtr), 1);
}

TEST_F(PassTest, CseKeepsLoadsAndDistinctConstants) {
  Stmt* p = Elem(0);
  Stmt* before = b_.GlobalLoad(p);
  b_.GlobalStore(p, b_.ConstF32(2.0f));
  Stmt* after = b_.GlobalLoad(Elem(0));
  b_.GlobalStore(Elem(1), b_.Add(before, after));
  b_.GlobalStore(Elem(2), b_.ConstF32(3.0f));
  Typed();
  EliminateCommonSubexpressions(kernel_);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kGlobalLoad), 2);
  // 0, 1, 2 as i32 indices and 2.0, 3.0 as f32 values.
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kConst), 5)
      << ir::PrintKernel(kernel_);
}

TEST_F(PassTest, CseReusesOuterValuesButNotSiblingBranches) {
  Stmt* outer = b_.Mul(b_.ArgLoad(1), b_.ArgLoad(1));
  auto* branch = b_.If(b_.ArgLoad(2));
  Stmt *in_then, *in_else;
  {
    auto scope = b_.EnterBlock(branch->true_block());
    in_then = b_.Mul(b_.ArgLoad(1), b_.ArgLoad(1));
    b_.GlobalStore(Elem(0), b_.Add(in_then, b_.ConstF32(1)));
  }
  {
    auto scope = b_.EnterBlock(branch->false_block());
    in_else = b_.Add(b_.ArgLoad(1), b_.ConstF32(1));
    b_.GlobalStore(Elem(0), in_else);
  }
  b_.GlobalStore(Elem(1), outer);
  Typed();
  EXPECT_TRUE(EliminateCommonSubexpressions(kernel_));
  EXPECT_TRUE(ir::Verify(kernel_).ok()) << ir::Verify(kernel_);
  // The then-branch product is the outer one; the else-branch add stays,
  // though it equals a then-branch add, since neither dominates the other.
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kBinaryOp), 3)
      << ir::PrintKernel(kernel_);
  EXPECT_EQ(branch->true_block()->back()->operand(1)->operand(0), outer);
}

TEST_F(PassTest, DceRemovesUnusedValuesTransitivelyAndKeepsEffects) {
  Stmt* unused =
      b_.Add(b_.Mul(b_.ArgLoad(1), b_.ConstF32(3)), b_.GlobalLoad(Elem(5)));
  (void)unused;
  b_.GlobalStore(Elem(0), b_.ArgLoad(1));
  auto* empty_loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  (void)empty_loop;
  Typed();
  EXPECT_TRUE(EliminateDeadCode(kernel_));
  EXPECT_TRUE(ir::Verify(kernel_).ok()) << ir::Verify(kernel_);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kBinaryOp), 0);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kGlobalLoad), 0);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kRangeFor), 0);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kGlobalStore), 1);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kConst), 1)
      << ir::PrintKernel(kernel_);
  EXPECT_FALSE(EliminateDeadCode(kernel_));
}

TEST_F(PassTest, DceKeepsLoopsWithWorkAndValuesTheyUse) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  {
    auto scope = b_.EnterBlock(loop->body());
    Stmt* i = b_.LoopIndex(loop);
    b_.Atomic(ir::AtomicOpKind::kAdd, b_.NdarrayPtr(0, {i}), b_.ArgLoad(1));
    b_.Mul(b_.ArgLoad(1), b_.ArgLoad(1));  // dead inside the loop
  }
  Typed();
  EXPECT_TRUE(EliminateDeadCode(kernel_));
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kRangeFor), 1);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kBinaryOp), 0);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kAtomicOp), 1);
}

class DeadStoresTest : public PassTest {
 protected:
  Stmt* Store(Stmt* var, float value) {
    return b_.LocalStore(var, b_.ConstF32(value));
  }
  void Output(Stmt* var) { b_.GlobalStore(Elem(0), b_.LocalLoad(var)); }
  // Runs the pass on the typed kernel; the IR must stay valid.
  bool Run() {
    EXPECT_TRUE(TypeCheck(kernel_).ok());
    const bool changed = EliminateDeadStores(kernel_);
    EXPECT_TRUE(ir::Verify(kernel_).ok())
        << ir::Verify(kernel_) << ir::PrintKernel(kernel_);
    return changed;
  }
};

TEST_F(DeadStoresTest, RemovesAnOverwrittenStore) {
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* first = Store(v, 1);
  Stmt* second = Store(v, 2);
  Output(v);
  Stmt* last = Store(v, 3);
  EXPECT_TRUE(Run());
  EXPECT_FALSE(Present(kernel_, first)) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, second));
  EXPECT_FALSE(Present(kernel_, last));
  EXPECT_FALSE(EliminateDeadStores(kernel_));
}

TEST_F(DeadStoresTest, KeepsAStoreOneBranchDoesNotOverwrite) {
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* before = Store(v, 1);
  auto* branch = b_.If(b_.ArgLoad(2));
  Stmt* in_then;
  {
    auto scope = b_.EnterBlock(branch->true_block());
    in_then = Store(v, 2);
  }
  Output(v);
  EXPECT_FALSE(Run()) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, before));
  EXPECT_TRUE(Present(kernel_, in_then));
}

TEST_F(DeadStoresTest, RemovesAStoreBothBranchesOverwrite) {
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* before = Store(v, 1);
  auto* branch = b_.If(b_.ArgLoad(2));
  {
    auto scope = b_.EnterBlock(branch->true_block());
    Store(v, 2);
  }
  {
    auto scope = b_.EnterBlock(branch->false_block());
    Store(v, 3);
  }
  Output(v);
  EXPECT_TRUE(Run());
  EXPECT_FALSE(Present(kernel_, before)) << ir::PrintKernel(kernel_);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kLocalStore), 2);
}

// A value stored late in an iteration is read early in the next one, and
// the store before the loop reaches the first iteration.
TEST_F(DeadStoresTest, KeepsStoresReadByALaterIteration) {
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* before = Store(v, 1);
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  Stmt* in_loop;
  {
    auto scope = b_.EnterBlock(loop->body());
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}), b_.LocalLoad(v));
    in_loop = Store(v, 2);
  }
  EXPECT_FALSE(Run()) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, before));
  EXPECT_TRUE(Present(kernel_, in_loop));
}

// A local declared in a loop body starts as zero in every iteration, so
// its last store in the body reaches nothing.
TEST_F(DeadStoresTest, RemovesTheLastStoreOfALocalDeclaredInTheLoop) {
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  Stmt *read, *last;
  {
    auto scope = b_.EnterBlock(loop->body());
    Stmt* t = b_.Alloca(PrimitiveType::kF32);
    read = Store(t, 1);
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}), b_.LocalLoad(t));
    last = Store(t, 5);
  }
  EXPECT_TRUE(Run());
  EXPECT_TRUE(Present(kernel_, read));
  EXPECT_FALSE(Present(kernel_, last)) << ir::PrintKernel(kernel_);
}

// continue goes to the next iteration or out of the loop, where v is read:
// the store before it is live though the body overwrites v after it.
TEST_F(DeadStoresTest, FollowsContinueAndBreak) {
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* w = b_.Alloca(PrimitiveType::kF32);
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  Stmt *before_continue, *before_break;
  {
    auto scope = b_.EnterBlock(loop->body());
    before_continue = Store(v, 1);
    auto* skip = b_.If(b_.Lt(b_.LoopIndex(loop), b_.ConstI32(3)));
    {
      auto inner = b_.EnterBlock(skip->true_block());
      b_.Continue();
    }
    Store(v, 2);
    auto* loop2 = b_.While();
    {
      auto body = b_.EnterBlock(loop2->body());
      before_break = Store(w, 1);
      auto* leave = b_.If(b_.Lt(b_.LoopIndex(loop), b_.ConstI32(7)));
      {
        auto inner = b_.EnterBlock(leave->true_block());
        b_.Break();
      }
      Store(w, 2);
    }
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}), b_.LocalLoad(w));
  }
  Output(v);
  EXPECT_FALSE(Run()) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, before_continue));
  EXPECT_TRUE(Present(kernel_, before_break));
}

// Each loop's settled liveness is reused while what is live after it stays
// the same; walking every inner fixed point again for each outer iteration
// would take about 3^depth walks of the innermost body.
TEST_F(DeadStoresTest, DeepLoopNestsSettleQuickly) {
  constexpr int kDepth = 30;
  Stmt* v = b_.Alloca(PrimitiveType::kF32);
  Stmt* before = Store(v, 1);
  std::vector<ir::IRBuilder::Scope> scopes;
  scopes.reserve(kDepth);
  for (int depth = 0; depth < kDepth; ++depth) {
    auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
    scopes.push_back(b_.EnterBlock(loop->body()));
  }
  Stmt* inner = b_.LocalStore(v, b_.Add(b_.LocalLoad(v), b_.ConstF32(1)));
  Stmt* dead = Store(b_.Alloca(PrimitiveType::kF32), 3);
  while (!scopes.empty())
    scopes.pop_back();
  Output(v);
  EXPECT_TRUE(Run());
  EXPECT_TRUE(Present(kernel_, before));
  EXPECT_TRUE(Present(kernel_, inner));
  EXPECT_FALSE(Present(kernel_, dead));
}

TEST_F(DeadStoresTest, RemovesAStackNothingReads) {
  Stmt* unread = b_.AdStackAlloca(PrimitiveType::kF32, 8);
  Stmt* read = b_.AdStackAlloca(PrimitiveType::kF32, 8);
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ArgLoad(2));
  {
    auto scope = b_.EnterBlock(loop->body());
    b_.AdStackPush(unread, b_.ArgLoad(1));
    b_.AdStackPush(read, b_.ArgLoad(1));
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}),
                   b_.AdStackLoadTop(read));
    b_.AdStackPop(unread);
    b_.AdStackPop(read);
  }
  EXPECT_TRUE(Run());
  EXPECT_FALSE(Present(kernel_, unread)) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, read));
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kAdStackPush), 1);
  EXPECT_EQ(Count(kernel_, ir::StmtKind::kAdStackPop), 1);
}

}  // namespace
}  // namespace quadrants::transforms
