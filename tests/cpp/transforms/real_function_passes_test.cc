// Passes around calls of real functions: a call reads and writes the locals
// whose addresses it takes (so their stores stay and they stay in memory),
// is never deleted, and function bodies are typed and cleaned by the
// pipeline; gradients of kernels that call one are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/ir/walk.h"
#include "quadrants/transforms/dce.h"
#include "quadrants/transforms/dead_stores.h"
#include "quadrants/transforms/pipeline.h"
#include "quadrants/transforms/promote_locals.h"

namespace quadrants::transforms {
namespace {

using ir::DataType;
using ir::IRBuilder;
using ir::Kernel;
using ir::Stmt;
using ::testing::HasSubstr;

constexpr ir::PrimitiveType kI32 = ir::PrimitiveType::kI32;

bool Present(const Kernel& kernel, const Stmt* wanted) {
  bool found = false;
  ir::WalkKernel(kernel, [&](const Stmt* s) { found |= s == wanted; });
  return found;
}

// kernel k(arr: ndarray<i32, 1>) with function bump(p: *i32): *p = *p + 1.
class CallTest : public ::testing::Test {
 protected:
  CallTest() : kernel_("k", SourceLocation{"k.py", 1}), b_(&kernel_) {
    kernel_.AddParam(ir::KernelParam::Ndarray("arr", kI32, 1));
    fn_ = kernel_.AddFunction(std::make_unique<ir::Function>(
        kernel_, "bump", SourceLocation{"k.py", 7},
        std::vector<ir::FunctionParam>{{"p", DataType::Pointer(kI32)}}));
    Function& f = *kernel_.functions()[fn_];
    IRBuilder fb(&f.scope());
    auto* p = fb.Make<ir::FuncArgStmt>(0, DataType::Pointer(kI32));
    auto* sum =
        fb.Add(fb.GlobalLoad(p), fb.ConstI32(1));  // typed by the pipeline
    fb.GlobalStore(p, sum);
  }
  using Function = ir::Function;

  Stmt* CallBump(Stmt* local) {
    return b_.Make<ir::FuncCallStmt>(
        fn_, "bump", std::vector<DataType>{DataType::Pointer(kI32)},
        std::vector<Stmt*>{local});
  }
  // r = 5; bump(&r); arr[0] = r
  Stmt* BuildStoreCallLoad(Stmt** store) {
    Stmt* r = b_.Alloca(kI32);
    *store = b_.LocalStore(r, b_.ConstI32(5));
    CallBump(r);
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.ConstI32(0)}), b_.LocalLoad(r));
    return r;
  }

  Kernel kernel_;
  IRBuilder b_;
  int fn_ = 0;
};

TEST_F(CallTest, StoreReadOnlyByACallIsKept) {
  Stmt* r = b_.Alloca(kI32);
  Stmt* store = b_.LocalStore(r, b_.ConstI32(5));
  Stmt* call = CallBump(r);  // nothing loads r afterwards
  EliminateDeadStores(kernel_);
  EliminateDeadCode(kernel_);
  EXPECT_TRUE(Present(kernel_, store)) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, call));
  EXPECT_TRUE(Present(kernel_, r));
}

TEST_F(CallTest, LocalPassedToACallIsNotPromoted) {
  Stmt* store = nullptr;
  Stmt* r = BuildStoreCallLoad(&store);
  PromoteTopLevelLocals(kernel_);
  // The load after the call must still read memory, not the stored 5.
  int loads = 0;
  ir::WalkKernel(kernel_, [&](const Stmt* s) {
    loads += ir::Isa<ir::LocalLoadStmt>(s) && s->operand(0) == r;
  });
  EXPECT_EQ(loads, 1) << ir::PrintKernel(kernel_);
  EXPECT_TRUE(Present(kernel_, store));
}

TEST_F(CallTest, PipelineTypesFunctionBodiesAndKeepsCalls) {
  Stmt* store = nullptr;
  BuildStoreCallLoad(&store);
  // A call inside a parallel loop as well.
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(8));
  {
    auto scope = b_.EnterBlock(loop->body());
    Stmt* t = b_.Alloca(kI32);
    CallBump(t);
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}), b_.LocalLoad(t));
  }
  absl::Status status = LowerToTasks(kernel_, {});
  ASSERT_TRUE(status.ok()) << status;
  int calls = 0;
  ir::WalkKernel(kernel_, [&](const Stmt* s) {
    calls += ir::Isa<ir::FuncCallStmt>(s);
    EXPECT_FALSE(s->type().is_unknown())
        << ir::PrintStmt(*s, ir::StmtNumbering(kernel_));
  });
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(ir::Verify(kernel_).ok()) << ir::PrintKernel(kernel_);
  const std::string text = ir::PrintKernel(kernel_);
  EXPECT_THAT(text, HasSubstr("function fn0 bump(p: *i32)"));
  EXPECT_THAT(text, HasSubstr("global_store"));
}

TEST_F(CallTest, LocalDeclaredBeforeALoopAndCalledAfterItIsOffloaded) {
  // Python declares every top-level variable at the kernel's start.
  Stmt* r = b_.Alloca(kI32);
  auto* loop = b_.RangeFor(b_.ConstI32(0), b_.ConstI32(8));
  {
    auto scope = b_.EnterBlock(loop->body());
    b_.GlobalStore(b_.NdarrayPtr(0, {b_.LoopIndex(loop)}), b_.ConstI32(1));
  }
  b_.LocalStore(r, b_.ConstI32(5));
  CallBump(r);
  b_.GlobalStore(b_.NdarrayPtr(0, {b_.ConstI32(0)}), b_.LocalLoad(r));
  absl::Status status = LowerToTasks(kernel_, {});
  ASSERT_TRUE(status.ok()) << status;
  // The local lives in the serial task after the loop, with its call.
  const Stmt* task_of_r = r->enclosing();
  ASSERT_NE(task_of_r, nullptr);
  EXPECT_EQ(kernel_.body()->IndexOf(task_of_r), 1u) << ir::PrintKernel(kernel_);
}

TEST_F(CallTest, GradientOfAKernelWithCallsIsRefused) {
  Stmt* store = nullptr;
  BuildStoreCallLoad(&store);
  PipelineOptions options;
  options.autodiff = AutodiffMode::kReverse;
  absl::Status status = LowerToTasks(kernel_, options);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kCompilation);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("kernel 'k' calls qd.real_func 'bump'"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("k.py:7"));
}

}  // namespace
}  // namespace quadrants::transforms
