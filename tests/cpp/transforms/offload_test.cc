#include "quadrants/transforms/offload.h"

#include <gtest/gtest.h>

#include <string>

#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/ir/verifier.h"
#include "quadrants/transforms/pipeline.h"
#include "quadrants/transforms/type_check.h"

namespace quadrants::transforms {
namespace {

using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::OffloadedTaskStmt;
using ir::PrimitiveType;
using ir::SNodeTree;
using ir::Stmt;
using ir::TaskKind;

class OffloadTest : public ::testing::Test {
 protected:
  OffloadTest() : kernel_("offload_me", SourceLocation{"k.py", 1}) {
    dense_ = snodes_.AddDense(snodes_.root(), {0}, {16}).value();
    field_ = snodes_.AddPlace(dense_, PrimitiveType::kF32, "x").value();
    scalar_ =
        snodes_.AddPlace(snodes_.root(), PrimitiveType::kI32, "n").value();
    EXPECT_TRUE(snodes_.Finalize().ok());
    kernel_.AddParam(KernelParam::Ndarray("a", PrimitiveType::kF32, 1));
    kernel_.AddParam(KernelParam::Scalar("m", PrimitiveType::kI32));
  }

  OffloadedTaskStmt* Task(size_t i) {
    return ir::DynCast<OffloadedTaskStmt>(kernel_.body()->at(i));
  }
  void Store(IRBuilder& b, int index, float value) {
    b.GlobalStore(b.NdarrayPtr(0, {b.ConstI32(index)}), b.ConstF32(value));
  }
  absl::Status TypeAndOffload() {
    absl::Status typed = TypeCheck(kernel_);
    if (!typed.ok())
      return typed;
    absl::Status status = Offload(kernel_);
    if (status.ok()) {
      absl::Status verified = ir::Verify(kernel_, {.snodes = &snodes_});
      EXPECT_TRUE(verified.ok()) << verified << "\n"
                                 << ir::PrintKernel(kernel_);
    }
    return status;
  }

  SNodeTree snodes_;
  int dense_, field_, scalar_;
  Kernel kernel_;
};

TEST_F(OffloadTest, SerialLoopSerialStructForSerialBecomeOrderedTasks) {
  IRBuilder b(&kernel_, &snodes_);
  Store(b, 0, 1.0f);
  Stmt* begin = b.ConstI32(2);
  Stmt* end = b.ArgLoad(1);
  auto* range = b.RangeFor(begin, end);
  {
    auto scope = b.EnterBlock(range->body());
    Stmt* i = b.LoopIndex(range);
    b.GlobalStore(b.NdarrayPtr(0, {i}), b.ConstF32(2.0f));
  }
  Store(b, 1, 3.0f);
  auto* cells = b.StructFor(dense_);
  {
    auto scope = b.EnterBlock(cells->body());
    Stmt* i = b.LoopIndex(cells);
    b.GlobalStore(b.FieldPtr(field_, {i}), b.ConstF32(4.0f));
  }
  Store(b, 2, 5.0f);
  ASSERT_TRUE(TypeAndOffload().ok());

  ASSERT_EQ(kernel_.body()->size(), 5u) << ir::PrintKernel(kernel_);
  const TaskKind expected[] = {TaskKind::kSerial, TaskKind::kRangeFor,
                               TaskKind::kSerial, TaskKind::kStructFor,
                               TaskKind::kSerial};
  for (size_t t = 0; t < 5; ++t) {
    ASSERT_NE(Task(t), nullptr);
    EXPECT_EQ(Task(t)->task_kind(), expected[t]) << "task " << t;
  }
  // Serial tasks keep their stores, in order.
  const char* values[] = {"const 1", "const 3", "const 5"};
  const std::string text = ir::PrintKernel(kernel_);
  size_t at = 0;
  for (const char* v : values) {
    size_t found = text.find(std::string(v) + "\n", at);
    ASSERT_NE(found, std::string::npos) << v << " in\n" << text;
    at = found;
  }
  // Range bounds: begin 2 (constant), end the scalar argument, computed in
  // the prologue; the loop index now refers to the task.
  OffloadedTaskStmt* loop = Task(1);
  EXPECT_EQ(loop->begin()->parent(), loop->prologue());
  const auto* begin_const = ir::DynCast<ir::ConstStmt>(loop->begin());
  ASSERT_NE(begin_const, nullptr);
  EXPECT_EQ(begin_const->value().as_int(), 2);
  ASSERT_TRUE(ir::Isa<ir::ArgLoadStmt>(loop->end()));
  EXPECT_EQ(static_cast<const ir::ArgLoadStmt*>(loop->end())->arg(), 1);
  EXPECT_FALSE(loop->has_const_bounds());
  const auto* index = ir::DynCast<ir::LoopIndexStmt>(loop->body()->at(0));
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->loop(), loop);
  EXPECT_EQ(Task(3)->snode_id(), dense_);
}

TEST_F(OffloadTest, GraphSectionsSplitSerialRunsAndTagTheirTasks) {
  IRBuilder b(&kernel_, &snodes_);
  Store(b, 0, 1.0f);  // before the region
  b.SetGraphSection(0, 0);
  Store(b, 1, 2.0f);
  auto* range = b.RangeFor(b.ConstI32(0), b.ConstI32(8));
  {
    auto scope = b.EnterBlock(range->body());
    b.GlobalStore(b.NdarrayPtr(0, {b.LoopIndex(range)}), b.ConstF32(3.0f));
  }
  b.SetGraphSection(0, 1);
  Store(b, 2, 4.0f);  // another section: not in the same serial task
  b.SetGraphSection(-1, -1);
  Store(b, 3, 5.0f);
  ASSERT_TRUE(TypeAndOffload().ok());

  const std::string text = ir::PrintKernel(kernel_);
  ASSERT_EQ(kernel_.body()->size(), 5u) << text;
  const int regions[] = {-1, 0, 0, 0, -1};
  const int sections[] = {-1, 0, 0, 1, -1};
  for (size_t t = 0; t < 5; ++t) {
    EXPECT_EQ(Task(t)->graph_region(), regions[t]) << "task " << t << "\n" << text;
    EXPECT_EQ(Task(t)->graph_section(), sections[t]) << "task " << t;
  }
  // The tags are part of the printed IR (so of the cache keys).
  EXPECT_NE(text.find("#section 0.1"), std::string::npos) << text;
}

TEST_F(OffloadTest, AValueImportedTwiceIsRecomputedWithItsOperands) {
  // `ptr` (section 1) uses `zero` (section 0); the task of section 2 uses
  // `ptr` again, after section 1's task took its own copy of `zero`.
  IRBuilder b(&kernel_, &snodes_);
  b.SetGraphSection(0, 0);
  Stmt* zero = b.ConstI32(0);
  b.GlobalStore(b.NdarrayPtr(0, {zero}), b.ConstF32(1.0f));
  b.SetGraphSection(0, 1);
  Stmt* ptr = b.NdarrayPtr(0, {zero});
  b.GlobalStore(ptr, b.ConstF32(2.0f));
  b.SetGraphSection(1, 0);
  b.GlobalStore(ptr, b.Mul(b.GlobalLoad(ptr), b.ConstF32(3.0f)));
  ASSERT_TRUE(TypeAndOffload().ok());
  EXPECT_EQ(kernel_.body()->size(), 3u) << ir::PrintKernel(kernel_);
}

TEST_F(OffloadTest, ConstantBoundsAndValuesUsedInsideTheLoopAreRecomputed) {
  IRBuilder b(&kernel_, &snodes_);
  Stmt* scale = b.Mul(b.ArgLoad(1), b.ConstI32(3));  // top-level pure value
  auto* range = b.RangeFor(b.ConstI32(0), b.ConstI32(8));
  {
    auto scope = b.EnterBlock(range->body());
    Stmt* i = b.LoopIndex(range);
    b.GlobalStore(b.NdarrayPtr(0, {i}), b.Cast(scale, PrimitiveType::kF32));
  }
  ASSERT_TRUE(TypeAndOffload().ok());
  // The pure serial run disappears; the loop task recomputes `scale`.
  ASSERT_EQ(kernel_.body()->size(), 1u) << ir::PrintKernel(kernel_);
  OffloadedTaskStmt* loop = Task(0);
  EXPECT_TRUE(loop->has_const_bounds());
  const std::string text = ir::PrintKernel(kernel_);
  EXPECT_NE(text.find("mul"), std::string::npos) << text;
  EXPECT_TRUE(loop->body()->at(0)->IsInside(loop));
}

TEST_F(OffloadTest, BoundReadFromAFieldIsReadInThePrologue) {
  IRBuilder b(&kernel_, &snodes_);
  Stmt* n = b.GlobalLoad(b.FieldPtr(scalar_, {}));
  auto* range = b.RangeFor(b.ConstI32(0), n);
  {
    auto scope = b.EnterBlock(range->body());
    b.GlobalStore(b.NdarrayPtr(0, {b.LoopIndex(range)}), b.ConstF32(1.0f));
  }
  ASSERT_TRUE(TypeAndOffload().ok());
  ASSERT_EQ(kernel_.body()->size(), 1u);
  EXPECT_TRUE(ir::Isa<ir::GlobalLoadStmt>(Task(0)->end()));
  EXPECT_EQ(Task(0)->end()->parent(), Task(0)->prologue());
}

TEST_F(OffloadTest, FieldReadBeforeAStoreCannotMoveIntoTheLoop) {
  IRBuilder b(&kernel_, &snodes_);
  b.SetLocation(SourceLocation{"k.py", 3});
  Stmt* n = b.GlobalLoad(b.FieldPtr(scalar_, {}));
  b.GlobalStore(b.FieldPtr(scalar_, {}), b.ConstI32(0));
  b.SetLocation(SourceLocation{"k.py", 5});
  b.RangeFor(b.ConstI32(0), n);
  absl::Status status = TypeAndOffload();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kCompilation);
  const std::string message(status.message());
  EXPECT_NE(message.find("k.py:5"), std::string::npos) << message;
  EXPECT_NE(message.find("read at k.py:3"), std::string::npos) << message;
  EXPECT_NE(message.find("'offload_me'"), std::string::npos) << message;
}

TEST_F(OffloadTest, LocalVariableAcrossAParallelLoopIsAnError) {
  IRBuilder b(&kernel_, &snodes_);
  b.SetLocation(SourceLocation{"k.py", 2});
  Stmt* total = b.Alloca(PrimitiveType::kF32);
  b.LocalStore(total, b.ConstF32(1.0f));
  b.SetLocation(SourceLocation{"k.py", 4});
  auto* range = b.RangeFor(b.ConstI32(0), b.ConstI32(4));
  {
    auto scope = b.EnterBlock(range->body());
    b.GlobalStore(b.NdarrayPtr(0, {b.LoopIndex(range)}), b.LocalLoad(total));
  }
  absl::Status status = TypeAndOffload();
  ASSERT_FALSE(status.ok());
  const std::string message(status.message());
  EXPECT_NE(message.find("local variable defined at k.py:2"), std::string::npos)
      << message;
}

TEST_F(OffloadTest, PipelineLowersAndVerifies) {
  IRBuilder b(&kernel_, &snodes_);
  auto* range = b.RangeFor(b.ConstI32(0), b.Add(b.ConstI32(2), b.ConstI32(2)));
  {
    auto scope = b.EnterBlock(range->body());
    Stmt* i = b.LoopIndex(range);
    b.GlobalStore(b.NdarrayPtr(0, {i}), b.Mul(b.ConstF32(2), b.ConstF32(3)));
  }
  PipelineOptions options;
  options.verify_each_pass = true;
  options.snodes = &snodes_;
  ASSERT_TRUE(LowerToTasks(kernel_, options).ok());
  EXPECT_EQ(ir::PrintKernel(kernel_),
            "kernel offload_me(arg0 a: ndarray<f32, 1>, arg1 m: i32) {\n"
            "  $0 = offloaded range_for [$1, $2) {\n"
            "    prologue {\n"
            "      $1 : i32 = const 0\n"
            "      $2 : i32 = const 4\n"
            "    }\n"
            "    body {\n"
            "      $3 : i32 = loop_index $0 axis 0\n"
            "      $4 : *f32 = ndarray_ptr arg0[$3]\n"
            "      $5 : f32 = const 6\n"
            "      $6 = global_store $4, $5\n"
            "    }\n"
            "  }\n"
            "}\n");
}

}  // namespace
}  // namespace quadrants::transforms
