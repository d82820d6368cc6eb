// LowerSparse on small kernels: struct-fors over sparse levels become the
// list tasks and a range_for over the listed cells; field pointers under a
// pointer level get their block (acquired where written, read from the
// table where only read, the write-absorbing block under no_activate).
#include "quadrants/transforms/sparse.h"

#include <gtest/gtest.h>

#include "quadrants/ir/builder.h"
#include "quadrants/ir/printer.h"
#include "quadrants/ir/statements.h"
#include "quadrants/transforms/pipeline.h"
#include "tests/cpp/transforms/autodiff/ir_check.h"

namespace quadrants::transforms {
namespace {

using ir::PrimitiveType;
using ir::SNode;

class SparseTest : public ::testing::Test {
 protected:
  SparseTest() {
    pointer_ = *tree_.AddSparse(0, SNode::Kind::kPointer, {0}, {8});
    dense_ = *tree_.AddDense(pointer_, {0}, {4});
    x_ = *tree_.AddPlace(dense_, PrimitiveType::kF32, "x");
    EXPECT_TRUE(tree_.Finalize().ok());
  }

  // for i in x: x[i] = x[i] + 1 (or only reads x into an ndarray-free sum).
  void BuildIncrement(ir::Kernel& kernel) {
    ir::IRBuilder b(&kernel, &tree_);
    auto* loop = b.StructFor(dense_);
    auto scope = b.EnterBlock(loop->body());
    ir::Stmt* i = b.LoopIndex(loop, 0);
    ir::Stmt* ptr = b.FieldPtr(x_, {i});
    b.GlobalStore(ptr, b.Add(b.GlobalLoad(ptr), b.ConstF32(1)));
  }

  absl::Status Lower(ir::Kernel& kernel) {
    PipelineOptions options;
    options.snodes = &tree_;
    options.verify_each_pass = true;
    return LowerToTasks(kernel, options);
  }

  ir::SNodeTree tree_;
  int pointer_ = 0, dense_ = 0, x_ = 0;
};

TEST_F(SparseTest, StructForListsActiveCellsAndWritesAcquireBlocks) {
  ir::Kernel kernel("step");
  BuildIncrement(kernel);
  ASSERT_TRUE(Lower(kernel).ok());
  const SNode& p = tree_.node(pointer_);
  EXPECT_TRUE(ir_check::CheckKernel(kernel, absl::StrCat(R"(
    CHECK: offloaded serial
    CHECK: field_ptr snode)", p.list_count, R"([]
    CHECK: global_store
    CHECK: offloaded range_for
    CHECK: field_ptr snode)", p.table, R"([
    CHECK: cmp_ne
    CHECK: if
    CHECK: atomic_add
    CHECK: global_store
    CHECK: offloaded range_for
    CHECK: field_ptr snode)", p.list_count, R"([]
    CHECK: global_load
    CHECK: field_ptr snode)", p.list, R"([
    CHECK: snode_op acquire snode)", pointer_, R"(
    CHECK: field_ptr snode)", x_, R"([{{.*}}] block
    CHECK-NOT: struct_for
  )")));
}

TEST_F(SparseTest, ReadsLoadTheTableAndNoActivateWritesGoToTheSinkBlock) {
  ir::Kernel kernel("step");
  kernel.AddNoActivate(pointer_);
  BuildIncrement(kernel);
  ASSERT_TRUE(Lower(kernel).ok());
  EXPECT_TRUE(ir_check::CheckKernel(kernel, absl::StrCat(R"(
    CHECK: no_activate(snode)", pointer_, R"()
    CHECK: offloaded range_for
    CHECK: offloaded range_for
    CHECK-NOT: snode_op
    CHECK: field_ptr snode)", tree_.node(pointer_).table, R"([
    CHECK: global_load
    CHECK: select
    CHECK: field_ptr snode)", x_, R"([{{.*}}] block
  )")));
}

TEST_F(SparseTest, DenseOnlyTreesAreLeftAlone) {
  ir::SNodeTree dense_tree;
  const int level = *dense_tree.AddDense(0, {0}, {8});
  const int y = *dense_tree.AddPlace(level, PrimitiveType::kF32, "y");
  ASSERT_TRUE(dense_tree.Finalize().ok());
  ir::Kernel kernel("dense");
  ir::IRBuilder b(&kernel, &dense_tree);
  auto* loop = b.StructFor(level);
  {
    auto scope = b.EnterBlock(loop->body());
    b.GlobalStore(b.FieldPtr(y, {b.LoopIndex(loop, 0)}), b.ConstF32(1));
  }
  PipelineOptions options;
  options.snodes = &dense_tree;
  ASSERT_TRUE(LowerToTasks(kernel, options).ok());
  EXPECT_TRUE(ir_check::CheckKernel(kernel, R"(
    CHECK: offloaded struct_for
    CHECK-NOT: block
  )"));
}

}  // namespace
}  // namespace quadrants::transforms
