// One test per class of malformed IR: Verify must reject it with a
// compilation error naming the kernel, the source line and the statement.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/kernel.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/snode.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "tests/cpp/ir/sample_kernels.h"

namespace quadrants::ir {
namespace {

using samples::Typed;
using ::testing::HasSubstr;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kU1 = PrimitiveType::kU1;

constexpr int kBadLine = 42;
SourceLocation At(int line) {
  return SourceLocation{"file.py", line};
}

const VerifyOptions kUntyped{.require_types = false};

// A kernel under construction whose statements default to file.py:1; call
// MarkOffender() right before building the statement that should be blamed.
class BadKernel {
 public:
  explicit BadKernel(const std::string& name)
      : kernel_(name, At(1)), b_(&kernel_) {}

  Kernel& kernel() { return kernel_; }
  IRBuilder& b() { return b_; }
  void MarkOffender() { b_.SetLocation(At(kBadLine)); }
  void Unmark() { b_.SetLocation(At(2)); }

  // Verify fails with a compilation error naming this kernel, file.py:42,
  // the statement printed as `stmt_text`, and `reason`.
  void ExpectRejected(absl::string_view stmt_text, absl::string_view reason,
                      const VerifyOptions& options = {}) {
    absl::Status status = Verify(kernel_, options);
    ASSERT_FALSE(status.ok()) << "accepted:\n" << PrintKernel(kernel_);
    EXPECT_EQ(GetErrorKind(status), ErrorKind::kCompilation);
    const std::string message(status.message());
    EXPECT_THAT(message,
                HasSubstr(absl::StrCat("kernel '", kernel_.name(), "'")));
    EXPECT_THAT(message, HasSubstr(absl::StrCat("file.py:", kBadLine)));
    EXPECT_THAT(message, HasSubstr(absl::StrCat("`", stmt_text, "`")));
    EXPECT_THAT(message, HasSubstr(reason));
  }

 private:
  Kernel kernel_;
  IRBuilder b_;
};

// ---- Scoping ----------------------------------------------------------------

TEST(VerifierTest, UseBeforeDefinition) {
  BadKernel k("use_before_def");
  Stmt* one = k.b().ConstI32(1);
  k.b().SetInsertPoint(k.kernel().body(), 0);  // in front of its operand
  k.MarkOffender();
  Typed(k.b().Add(one, one), kI32);
  k.ExpectRejected("$0 : i32 = add $1, $1",
                   "operand 0 ($1) is used before it is defined");
}

TEST(VerifierTest, LoopBodyValueUsedAfterTheLoop) {
  BadKernel k("inner_scope_escape");
  Stmt* zero = k.b().ConstI32(0);
  Stmt* four = k.b().ConstI32(4);
  auto* loop = k.b().RangeFor(zero, four);
  Stmt* i;
  {
    auto body = k.b().EnterBlock(loop->body());
    i = k.b().LoopIndex(loop);
  }
  k.MarkOffender();
  Typed(k.b().Add(i, four), kI32);
  k.ExpectRejected("$4 : i32 = add $3, $1",
                   "operand 0 ($3) is used before it is defined or outside "
                   "its scope");
}

TEST(VerifierTest, ValueFromSiblingBranch) {
  BadKernel k("sibling_scope");
  auto* branch = k.b().If(k.b().ConstBool(true));
  Stmt* five;
  {
    auto then_scope = k.b().EnterBlock(branch->true_block());
    five = k.b().ConstI32(5);
  }
  auto else_scope = k.b().EnterBlock(branch->false_block());
  Stmt* var = k.b().Alloca(kI32);
  k.MarkOffender();
  k.b().LocalStore(var, five);
  k.ExpectRejected("$4 = local_store $3, $2",
                   "operand 1 ($2) is used before it is defined or outside "
                   "its scope");
}

// ---- Loops and jumps
// ----------------------------------------------------------

TEST(VerifierTest, LoopIndexOutsideItsLoop) {
  BadKernel k("index_outside_loop");
  auto* loop = k.b().RangeFor(k.b().ConstI32(0), k.b().ConstI32(4));
  k.MarkOffender();
  k.b().LoopIndex(loop);
  k.ExpectRejected("$3 : i32 = loop_index $2 axis 0",
                   "loop index used outside of its loop");
}

TEST(VerifierTest, LoopIndexOfANonLoopValue) {
  BadKernel k("index_of_const");
  Stmt* zero = k.b().ConstI32(0);
  k.MarkOffender();
  k.b().LoopIndex(zero);
  k.ExpectRejected("$1 : i32 = loop_index $0 axis 0",
                   "operand must be a range_for, struct_for or parallel "
                   "offloaded task");
}

TEST(VerifierTest, LoopIndexOfAWhileLoop) {
  BadKernel k("index_of_while");
  auto* loop = k.b().While();
  auto body = k.b().EnterBlock(loop->body());
  k.MarkOffender();
  k.b().LoopIndex(loop);
  k.Unmark();
  k.b().Break();
  k.ExpectRejected("$1 : i32 = loop_index $0 axis 0",
                   "operand must be a range_for");
}

TEST(VerifierTest, LoopIndexInItsTasksPrologue) {
  BadKernel k("index_in_prologue");
  auto* task = k.b().Task(TaskKind::kRangeFor);
  auto prologue = k.b().EnterBlock(task->prologue());
  Stmt* begin = k.b().ConstI32(0);
  k.MarkOffender();
  Stmt* end = k.b().LoopIndex(task);
  task->SetBounds(begin, end);
  k.ExpectRejected("$2 : i32 = loop_index $0 axis 0",
                   "loop index used in its task's prologue");
}

TEST(VerifierTest, BreakOutsideALoop) {
  BadKernel k("stray_break");
  auto* branch = k.b().If(k.b().ConstBool(true));
  auto then_scope = k.b().EnterBlock(branch->true_block());
  k.MarkOffender();
  k.b().Break();
  k.ExpectRejected("$2 = break", "break outside of a loop it can apply to");
}

// A range_for task with bounds [0, 8) computed in its prologue.
OffloadedTaskStmt* RangeTask(IRBuilder& b) {
  auto* task = b.Task(TaskKind::kRangeFor);
  auto prologue = b.EnterBlock(task->prologue());
  Stmt* begin = b.ConstI32(0);
  Stmt* end = b.ConstI32(8);
  task->SetBounds(begin, end);
  return task;
}

TEST(VerifierTest, BreakDirectlyInAParallelTaskBody) {
  BadKernel k("parallel_break");
  auto* task = RangeTask(k.b());
  auto body = k.b().EnterBlock(task->body());
  k.MarkOffender();
  k.b().Break();
  k.ExpectRejected("$3 = break", "break outside of a loop it can apply to");
}

TEST(VerifierTest, ContinueDirectlyInASerialTaskBody) {
  BadKernel k("serial_continue");
  auto* task = k.b().Task(TaskKind::kSerial);
  auto body = k.b().EnterBlock(task->body());
  k.MarkOffender();
  k.b().Continue();
  k.ExpectRejected("$1 = continue",
                   "continue outside of a loop it can apply to");
}

TEST(VerifierTest, JumpsInsideSerialLoopsOfTasksAreFine) {
  Kernel kernel("jumps_ok");
  IRBuilder b(&kernel);
  auto* task = RangeTask(b);
  auto body = b.EnterBlock(task->body());
  b.Continue();  // ends this iteration of the parallel loop
  auto* loop = b.While();
  auto loop_body = b.EnterBlock(loop->body());
  b.Break();
  absl::Status status = Verify(kernel);
  EXPECT_TRUE(status.ok()) << status;
}

// ---- Operand kinds and types ------------------------------------------------

TEST(VerifierTest, GlobalLoadOfANonPointer) {
  BadKernel k("load_non_pointer");
  Stmt* three = k.b().ConstI32(3);
  k.MarkOffender();
  k.b().GlobalLoad(three);
  k.ExpectRejected("$1 : i32 = global_load $0",
                   "expects a field or ndarray element pointer");
}

TEST(VerifierTest, GlobalLoadOfALocalVariable) {
  BadKernel k("load_local");
  Stmt* var = k.b().Alloca(kF32);
  k.MarkOffender();
  k.b().GlobalLoad(var);
  k.ExpectRejected("$1 : f32 = global_load $0",
                   "expects a field or ndarray element pointer");
}

TEST(VerifierTest, LocalStoreToANonAlloca) {
  BadKernel k("store_non_alloca");
  k.kernel().AddParam(KernelParam::Ndarray("a", kF32, 1));
  Stmt* ptr = k.b().NdarrayPtr(0, {k.b().ConstI32(0)});
  Stmt* one = k.b().ConstF32(1.0f);
  k.MarkOffender();
  k.b().LocalStore(ptr, one);
  k.ExpectRejected("$3 = local_store $1, $2", "operand 0 must be an alloca");
}

TEST(VerifierTest, BinaryOpTypeMismatch) {
  BadKernel k("mixed_add");
  Stmt* i = k.b().ConstI32(1);
  Stmt* f = k.b().ConstF32(2.0f);
  k.MarkOffender();
  Typed(k.b().Add(i, f), kI32);
  k.ExpectRejected("$2 : i32 = add $0, $1",
                   "right operand has type f32, expected i32",
                   VerifyOptions{.require_types = true});
}

TEST(VerifierTest, UntypedStatementWhenTypesAreRequired) {
  BadKernel k("untyped");
  Stmt* one = k.b().ConstI32(1);
  k.MarkOffender();
  k.b().Add(one, one);
  EXPECT_TRUE(Verify(k.kernel(), kUntyped).ok());
  k.ExpectRejected("$1 : unknown = add $0, $0", "result type is unknown",
                   VerifyOptions{.require_types = true});
}

TEST(VerifierTest, NdarrayPtrWithWrongIndexCount) {
  BadKernel k("ndarray_rank");
  k.kernel().AddParam(KernelParam::Ndarray("a", kF32, 2));
  Stmt* zero = k.b().ConstI32(0);
  k.MarkOffender();
  k.b().NdarrayPtr(0, {zero});
  k.ExpectRejected("$1 : *f32 = ndarray_ptr arg0[$0]",
                   "takes 2 indices, got 1");
}

TEST(VerifierTest, NdarrayPtrOnAScalarParam) {
  BadKernel k("ndarray_kind");
  k.kernel().AddParam(KernelParam::Scalar("n", kI32));
  Stmt* zero = k.b().ConstI32(0);
  k.MarkOffender();
  k.b().NdarrayPtr(0, {zero});
  k.ExpectRejected("$1 : *i32 = ndarray_ptr arg0[$0]",
                   "parameter 0 ('n') has the wrong kind for this statement");
}

TEST(VerifierTest, ArgLoadOfAMissingParam) {
  BadKernel k("missing_arg");
  k.kernel().AddParam(KernelParam::Scalar("n", kI32));
  k.MarkOffender();
  k.b().ArgLoad(3);
  k.ExpectRejected("$0 : i32 = arg_load arg3", "kernel has no parameter 3");
}

TEST(VerifierTest, FieldPtrOnANonPlaceSNode) {
  BadKernel k("field_on_dense");
  Stmt* zero = k.b().ConstI32(0);
  k.MarkOffender();
  k.b().FieldPtr(samples::kDense1D, kF32, {zero});
  // Without the tree nothing says snode1 is not a field.
  EXPECT_TRUE(Verify(k.kernel()).ok());
  k.ExpectRejected("$1 : *f32 = field_ptr snode1[$0]",
                   "snode1 is not a field (place SNode)",
                   VerifyOptions{.snodes = &samples::SampleTree()});
}

TEST(VerifierTest, FieldPtrWithWrongIndexCount) {
  BadKernel k("field_rank");
  Stmt* zero = k.b().ConstI32(0);
  k.MarkOffender();
  k.b().FieldPtr(samples::kFieldY, kF32, {zero});
  k.ExpectRejected("$1 : *f32 = field_ptr snode4[$0]", "takes 2 indices, got 1",
                   VerifyOptions{.snodes = &samples::SampleTree()});
}

// ---- Adstack ----------------------------------------------------------------

TEST(VerifierTest, AdStackPushOntoANonStack) {
  BadKernel k("push_non_stack");
  Stmt* var = k.b().Alloca(kF32);
  Stmt* one = k.b().ConstF32(1.0f);
  k.MarkOffender();
  k.b().AdStackPush(var, one);
  k.ExpectRejected("$2 = adstack_push $0, $1",
                   "operand 0 must be an adstack_alloca");
}

TEST(VerifierTest, LoadTopAdjOnAnIntegerStack) {
  BadKernel k("int_adjoint");
  Stmt* stack = k.b().AdStackAlloca(kI32, 4);
  k.MarkOffender();
  k.b().AdStackLoadTopAdj(stack);
  k.ExpectRejected("$1 : i32 = adstack_load_top_adj $0",
                   "adjoint access needs a float adstack");
}

// ---- Offloaded tasks --------------------------------------------------------

TEST(VerifierTest, TaskNotAtTopLevel) {
  BadKernel k("nested_task");
  auto* loop = k.b().RangeFor(k.b().ConstI32(0), k.b().ConstI32(4));
  auto body = k.b().EnterBlock(loop->body());
  k.MarkOffender();
  k.b().Task(TaskKind::kSerial);
  k.ExpectRejected("$3 = offloaded serial",
                   "offloaded tasks must be at the kernel's top level");
}

TEST(VerifierTest, NonTaskBesideTasksAtTopLevel) {
  BadKernel k("mixed_top_level");
  k.b().Task(TaskKind::kSerial);
  k.MarkOffender();
  k.b().ConstI32(1);
  k.ExpectRejected("$1 : i32 = const 1",
                   "an offloaded kernel may hold only offloaded tasks");
}

TEST(VerifierTest, TaskBoundsNotInItsPrologue) {
  BadKernel k("bounds_in_body");
  k.MarkOffender();
  auto* task = k.b().Task(TaskKind::kRangeFor);
  k.Unmark();
  auto body = k.b().EnterBlock(task->body());
  Stmt* begin = k.b().ConstI32(0);
  Stmt* end = k.b().ConstI32(8);
  task->SetBounds(begin, end);
  k.ExpectRejected("$0 = offloaded range_for [$1, $2)",
                   "task bounds must be computed in its prologue");
}

TEST(VerifierTest, TaskBoundsFromAnotherTasksPrologue) {
  BadKernel k("borrowed_bounds");
  auto* first = RangeTask(k.b());
  k.MarkOffender();
  auto* second = k.b().Task(TaskKind::kRangeFor);
  second->SetBounds(first->begin(), first->end());
  k.ExpectRejected("$3 = offloaded range_for [$1, $2)",
                   "task bounds must be computed in its prologue");
}

// ---- Well-formed IR ---------------------------------------------------------

TEST(VerifierTest, WellFormedTypedKernelVerifies) {
  Kernel kernel("saxpy", At(1));
  kernel.AddParam(KernelParam::Scalar("alpha", kF32));
  kernel.AddParam(KernelParam::Ndarray("x", kF32, 1));
  kernel.AddParam(KernelParam::Ndarray("y", kF32, 1));
  IRBuilder b(&kernel);
  auto* task = b.Task(TaskKind::kRangeFor);
  {
    auto prologue = b.EnterBlock(task->prologue());
    Stmt* begin = b.ConstI32(0);
    Stmt* end = b.NdarrayShape(1, 0);
    task->SetBounds(begin, end);
  }
  auto body = b.EnterBlock(task->body());
  Stmt* alpha = b.ArgLoad(0);
  Stmt* i = b.LoopIndex(task);
  Stmt* x = b.GlobalLoad(b.NdarrayPtr(1, {i}));
  Stmt* y_ptr = b.NdarrayPtr(2, {i});
  Stmt* y = b.GlobalLoad(y_ptr);
  Stmt* ax = Typed(b.Mul(alpha, x), kF32);
  Stmt* sum = Typed(b.Add(ax, y), kF32);
  auto* positive = b.If(Typed(b.Lt(y, sum), kU1));
  auto then_scope = b.EnterBlock(positive->true_block());
  b.GlobalStore(y_ptr, sum);
  absl::Status status = Verify(kernel, VerifyOptions{.require_types = true});
  EXPECT_TRUE(status.ok()) << status << "\n" << PrintKernel(kernel);
}

TEST(VerifierTest, SampleKernelsVerify) {
  for (const samples::SampleKernel& sample : samples::AllSampleKernels()) {
    absl::Status status = Verify(*sample.kernel, sample.verify_options);
    EXPECT_TRUE(status.ok()) << status << "\n" << PrintKernel(*sample.kernel);
  }
}

TEST(VerifierTest, ReportsTheFirstProblemOnly) {
  BadKernel k("two_problems");
  k.MarkOffender();
  k.b().Break();
  k.Unmark();
  k.b().Continue();
  k.ExpectRejected("$0 = break", "break outside");
  EXPECT_THAT(std::string(Verify(k.kernel()).message()),
              ::testing::Not(HasSubstr("continue")));
}

}  // namespace
}  // namespace quadrants::ir
