// SNodeTree layout (cell sizes, offsets, strides) and tree-building errors.
#include "quadrants/ir/snode.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quadrants/common/errors.h"

namespace quadrants::ir {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;

PlaceLayout LayoutOf(const SNodeTree& tree, int place) {
  absl::StatusOr<PlaceLayout> layout = tree.Layout(place);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return layout.ok() ? *layout : PlaceLayout{};
}

void ExpectTreeError(const absl::Status& status, const std::string& detail) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kCompilation);
  EXPECT_THAT(std::string(status.message()), HasSubstr(detail));
}

TEST(SNodeTest, ZeroDimensionalPlacesUnderRoot) {
  SNodeTree tree;
  int a = tree.AddPlace(tree.root(), kF32, "a").value();
  int b = tree.AddPlace(tree.root(), kF64, "b").value();
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_EQ(tree.NumAxes(a), 0);
  PlaceLayout la = LayoutOf(tree, a);
  EXPECT_EQ(la.offset, 0);
  EXPECT_TRUE(la.shape.empty());
  EXPECT_TRUE(la.axis_stride.empty());
  EXPECT_EQ(LayoutOf(tree, b).offset, 8);  // f64 aligned past the f32
  EXPECT_EQ(tree.root_bytes(), 16);
  EXPECT_EQ(tree.ToString(), "root{place a:f32 @0, place b:f64 @8}");
}

TEST(SNodeTest, DenseWithGradient) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {16}).value();
  int x = tree.AddPlace(dense, kF32, "x").value();
  int x_grad = tree.AddPlace(dense, kF32, "x.grad").value();
  ASSERT_TRUE(tree.LinkGrad(x, x_grad).ok());
  ASSERT_TRUE(tree.Finalize().ok());

  EXPECT_EQ(tree.node(x).offset_in_parent, 0);
  EXPECT_EQ(tree.node(x_grad).offset_in_parent, 4);
  EXPECT_EQ(tree.node(dense).cell_bytes, 8);
  EXPECT_EQ(tree.root_bytes(), 16 * 8);
  EXPECT_EQ(tree.node(x).grad_snode, x_grad);
  EXPECT_EQ(tree.node(x_grad).primal_snode, x);
  EXPECT_TRUE(tree.node(x_grad).is_grad);
  EXPECT_FALSE(tree.node(x).is_grad);

  PlaceLayout lx = LayoutOf(tree, x);
  EXPECT_EQ(lx.offset, 0);
  EXPECT_THAT(lx.shape, ElementsAre(16));
  EXPECT_THAT(lx.axis_stride, ElementsAre(8));
  EXPECT_EQ(LayoutOf(tree, x_grad).offset, 4);
  EXPECT_EQ(tree.ToString(),
            "root{dense[i:16]{place x:f32 @0, place x.grad:f32 @4}}");
}

TEST(SNodeTest, TwoDimensionalDenseIsRowMajor) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0, 1}, {4, 8}).value();
  int y = tree.AddPlace(dense, kF32, "y").value();
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_EQ(tree.NumAxes(y), 2);
  PlaceLayout ly = LayoutOf(tree, y);
  EXPECT_THAT(ly.shape, ElementsAre(4, 8));
  EXPECT_THAT(ly.axis_stride, ElementsAre(32, 4));
  EXPECT_EQ(tree.root_bytes(), 4 * 8 * 4);
  EXPECT_EQ(tree.ToString(), "root{dense[i:4,j:8]{place y:f32 @0}}");
}

TEST(SNodeTest, AxesListedOutOfOrder) {
  // dense[j:8, i:4]: j varies slowest within the level.
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {1, 0}, {8, 4}).value();
  int y = tree.AddPlace(dense, kI32, "y").value();
  ASSERT_TRUE(tree.Finalize().ok());
  PlaceLayout ly = LayoutOf(tree, y);
  EXPECT_THAT(ly.shape, ElementsAre(4, 8));
  EXPECT_THAT(ly.axis_stride, ElementsAre(4, 16));
}

TEST(SNodeTest, NestedDenseLevels) {
  // root -> dense[i:4] -> { place a:i32, dense[j:3] -> place b:f32 }
  SNodeTree tree;
  int outer = tree.AddDense(tree.root(), {0}, {4}).value();
  int a = tree.AddPlace(outer, kI32, "a").value();
  int inner = tree.AddDense(outer, {1}, {3}).value();
  int b = tree.AddPlace(inner, kF32, "b").value();
  ASSERT_TRUE(tree.Finalize().ok());

  EXPECT_EQ(tree.node(inner).cell_bytes, 4);
  // A dense block aligns like its most aligned child (f32: 4 bytes).
  EXPECT_EQ(tree.node(inner).offset_in_parent, 4);
  EXPECT_EQ(tree.node(outer).cell_bytes, 16);  // 4 + 3 * 4
  EXPECT_EQ(tree.root_bytes(), 4 * 16);
  EXPECT_EQ(tree.NumAxes(a), 1);
  EXPECT_EQ(tree.NumAxes(b), 2);

  PlaceLayout la = LayoutOf(tree, a);
  EXPECT_EQ(la.offset, 0);
  EXPECT_THAT(la.axis_stride, ElementsAre(16));
  PlaceLayout lb = LayoutOf(tree, b);
  EXPECT_EQ(lb.offset, 4);
  EXPECT_THAT(lb.shape, ElementsAre(4, 3));
  EXPECT_THAT(lb.axis_stride, ElementsAre(16, 4));
  EXPECT_EQ(tree.ToString(),
            "root{dense[i:4]{place a:i32 @0, dense[j:3]{place b:f32 @0}}}");
}

TEST(SNodeTest, MixedWidthsAreNaturallyAligned) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {10}).value();
  int c = tree.AddPlace(dense, kI32, "c").value();
  int d = tree.AddPlace(dense, kF64, "d").value();
  int e = tree.AddPlace(dense, kI32, "e").value();
  int f = tree.AddPlace(dense, PrimitiveType::kU1, "f").value();
  int g = tree.AddPlace(dense, PrimitiveType::kF16, "g").value();
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_EQ(tree.node(c).offset_in_parent, 0);
  EXPECT_EQ(tree.node(d).offset_in_parent, 8);
  EXPECT_EQ(tree.node(e).offset_in_parent, 16);
  EXPECT_EQ(tree.node(f).offset_in_parent, 20);  // one byte
  EXPECT_EQ(tree.node(g).offset_in_parent, 22);  // two-byte aligned
  EXPECT_EQ(tree.node(dense).cell_bytes, 24);    // 24 is already 8-aligned
  EXPECT_THAT(LayoutOf(tree, d).axis_stride, ElementsAre(24));
  EXPECT_EQ(LayoutOf(tree, g).offset, 22);
  EXPECT_EQ(tree.root_bytes(), 240);
}

TEST(SNodeTest, CellSizeRoundsUpToLargestAlignment) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {2}).value();
  tree.AddPlace(dense, kF64, "d").value();
  int i = tree.AddPlace(dense, kI32, "i").value();
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_EQ(tree.node(i).offset_in_parent, 8);
  EXPECT_EQ(tree.node(dense).cell_bytes, 16);  // 12, padded like a C struct
  EXPECT_THAT(LayoutOf(tree, i).axis_stride, ElementsAre(16));
}

TEST(SNodeTest, EmptyTreeStillHasARootBuffer) {
  SNodeTree tree;
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_EQ(tree.root_bytes(), 8);
  EXPECT_EQ(tree.ToString(), "root{}");
}

// ---- Errors -----------------------------------------------------------------

TEST(SNodeTest, PlaceCannotHaveChildren) {
  SNodeTree tree;
  int x = tree.AddPlace(tree.root(), kF32, "x").value();
  ExpectTreeError(tree.AddPlace(x, kF32, "y").status(),
                  "is a place and cannot have children");
  ExpectTreeError(tree.AddDense(x, {0}, {4}).status(),
                  "is a place and cannot have children");
}

TEST(SNodeTest, UnknownParent) {
  SNodeTree tree;
  ExpectTreeError(tree.AddPlace(5, kF32, "x").status(), "no SNode with id 5");
  ExpectTreeError(tree.AddDense(-1, {0}, {4}).status(), "no SNode with id -1");
}

TEST(SNodeTest, AxisGivenTwiceInOneLevel) {
  SNodeTree tree;
  ExpectTreeError(tree.AddDense(tree.root(), {0, 0}, {2, 2}).status(),
                  "axis 0 is given twice in one dense level");
}

TEST(SNodeTest, LevelsOnTheSameAxisBlockIt) {
  // dense(ij, (4, 3)).dense(ij, (8, 2)).place(x, y): 32 x 6 elements in
  // 4 x 3 blocks of 8 x 2 cells of two f32s.
  SNodeTree tree;
  int outer = tree.AddDense(tree.root(), {0, 1}, {4, 3}).value();
  int inner = tree.AddDense(outer, {0, 1}, {8, 2}).value();
  int x = tree.AddPlace(inner, kF32, "x").value();
  int y = tree.AddPlace(inner, kF32, "y").value();
  ASSERT_TRUE(tree.Finalize().ok());
  const PlaceLayout lx = LayoutOf(tree, x);
  EXPECT_THAT(lx.shape, ElementsAre(32, 6));
  EXPECT_FALSE(lx.affine());
  ASSERT_EQ(lx.digits[0].size(), 2u);
  const int64_t cell = 8, block = 8 * 2 * cell;
  EXPECT_EQ(lx.digits[0][0].divisor, 8);
  EXPECT_EQ(lx.digits[0][0].modulus, 0);  // the outermost level wraps never
  EXPECT_EQ(lx.digits[0][0].stride, 3 * block);
  EXPECT_EQ(lx.digits[0][1].divisor, 1);
  EXPECT_EQ(lx.digits[0][1].modulus, 8);
  EXPECT_EQ(lx.digits[0][1].stride, 2 * cell);
  for (int64_t i : {0, 7, 8, 17, 31}) {
    for (int64_t j : {0, 1, 2, 5}) {
      const int64_t want =
          (i / 8 * 3 + j / 2) * block + (i % 8 * 2 + j % 2) * cell;
      EXPECT_EQ(lx.ByteOffset({i, j}), want) << i << ", " << j;
      EXPECT_EQ(LayoutOf(tree, y).ByteOffset({i, j}), want + 4);
    }
  }
  EXPECT_THAT(tree.CellAxes(inner),
              ElementsAre(std::pair<int, int64_t>{0, 32},
                          std::pair<int, int64_t>{1, 6}));
  EXPECT_EQ(tree.NumCells(inner), 32 * 6);
  EXPECT_EQ(tree.root_bytes(), 4 * 3 * block);
  // One level per axis stays affine, with its strides.
  SNodeTree flat;
  int dense = flat.AddDense(flat.root(), {0, 1}, {32, 6}).value();
  int z = flat.AddPlace(dense, kF32, "z").value();
  ASSERT_TRUE(flat.Finalize().ok());
  EXPECT_TRUE(LayoutOf(flat, z).affine());
  EXPECT_THAT(LayoutOf(flat, z).axis_stride, ElementsAre(24, 4));
  EXPECT_EQ(LayoutOf(flat, z).ByteOffset({5, 3}), 5 * 24 + 3 * 4);
}

TEST(SNodeTest, NonPositiveSize) {
  SNodeTree tree;
  ExpectTreeError(tree.AddDense(tree.root(), {0}, {0}).status(),
                  "dense size must be positive, got 0");
  ExpectTreeError(tree.AddDense(tree.root(), {0, 1}, {4, -3}).status(),
                  "dense size must be positive, got -3");
}

TEST(SNodeTest, MalformedAxes) {
  SNodeTree tree;
  ExpectTreeError(tree.AddDense(tree.root(), {}, {}).status(),
                  "dense needs one size per axis");
  ExpectTreeError(tree.AddDense(tree.root(), {0, 1}, {4}).status(),
                  "got 2 axes and 1 sizes");
  ExpectTreeError(tree.AddDense(tree.root(), {12}, {4}).status(),
                  "axis 12 out of range [0, 12)");
  ExpectTreeError(tree.AddDense(tree.root(), {-1}, {4}).status(),
                  "axis -1 out of range");
}

TEST(SNodeTest, GradientLinkErrors) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {4}).value();
  int x = tree.AddPlace(dense, kF32, "x").value();
  int wide = tree.AddPlace(dense, kF64, "x.grad").value();
  ExpectTreeError(tree.LinkGrad(x, wide),
                  "a gradient field must have its primal's dtype");
  ExpectTreeError(tree.LinkGrad(x, dense), "SNode 1 is not a place");
  ExpectTreeError(tree.LinkGrad(99, x), "SNode 99 is not a place");
  EXPECT_EQ(tree.node(x).grad_snode, -1);
}

// Library bug (quadrants/ir/snode.cc, SNodeTree::LinkGrad): only the kinds
// and dtypes are compared, so a place can be linked as its own gradient.
TEST(SNodeTest, GradientMustDifferFromItsPrimal) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {4}).value();
  int x = tree.AddPlace(dense, kF32, "x").value();
  EXPECT_FALSE(tree.LinkGrad(x, x).ok());
  EXPECT_FALSE(tree.node(x).is_grad);
}

// Library bug (quadrants/ir/snode.cc, SNodeTree::LinkGrad): x.grad[i, ...]
// must exist for every x[i, ...], but the index spaces are never compared.
TEST(SNodeTest, GradientMustHaveItsPrimalsShape) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {16}).value();
  int x = tree.AddPlace(dense, kF32, "x").value();
  int scalar_grad = tree.AddPlace(tree.root(), kF32, "x.grad").value();
  int short_dense = tree.AddDense(tree.root(), {0}, {8}).value();
  int short_grad = tree.AddPlace(short_dense, kF32, "x.grad").value();
  int same_dense = tree.AddDense(tree.root(), {0}, {16}).value();
  int good_grad = tree.AddPlace(same_dense, kF32, "x.grad").value();
  EXPECT_FALSE(tree.LinkGrad(x, scalar_grad).ok());
  EXPECT_FALSE(tree.LinkGrad(x, short_grad).ok());
  // Same index space in a separate dense level is fine.
  EXPECT_TRUE(tree.LinkGrad(x, good_grad).ok());
}

TEST(SNodeTest, FinalizeLaysOutAndLaterRootAdditionsKeepOffsets) {
  SNodeTree tree;
  int dense = tree.AddDense(tree.root(), {0}, {4}).value();
  int x = tree.AddPlace(dense, kF32, "x").value();
  ExpectTreeError(tree.Layout(x).status(), "not finalized");
  EXPECT_FALSE(tree.finalized());
  ASSERT_TRUE(tree.Finalize().ok());
  EXPECT_TRUE(tree.finalized());
  EXPECT_TRUE(tree.Finalize().ok());  // idempotent
  const PlaceLayout before = tree.Layout(x).value();
  const int64_t bytes_before = tree.root_bytes();
  ExpectTreeError(tree.Layout(tree.root()).status(), "SNode 0 is not a place");

  // A laid-out dense level cannot grow: its cells would move.
  ExpectTreeError(tree.AddPlace(dense, kF32, "z").status(), "already laid out");
  // The root can: the new field goes after the existing ones.
  int y = tree.AddPlace(tree.root(), kF64, "y").value();
  EXPECT_FALSE(tree.finalized());
  ASSERT_TRUE(tree.Finalize().ok());
  const PlaceLayout after = tree.Layout(x).value();
  EXPECT_EQ(after.offset, before.offset);
  EXPECT_EQ(after.axis_stride, before.axis_stride);
  EXPECT_GE(tree.Layout(y).value().offset, bytes_before);
  EXPECT_GT(tree.root_bytes(), bytes_before);
}

}  // namespace
}  // namespace quadrants::ir

namespace quadrants::ir {
namespace {

// A pointer level keeps its cells' children in pool blocks: its parent's
// cell holds only the hidden table, and places under it are addressed from
// a block, every digit wrapping inside it.
TEST(SNodeSparseTest, PointerCellsLiveInPoolBlocksAfterTheRootChildsData) {
  SNodeTree tree;
  tree.set_pool_budget(0);
  const int ptr = *tree.AddSparse(0, SNode::Kind::kPointer, {0}, {8});
  const int dense = *tree.AddDense(ptr, {0}, {4});
  const int x = *tree.AddPlace(dense, PrimitiveType::kF32, "x");
  ASSERT_TRUE(tree.Finalize().ok());
  const SNode& p = tree.node(ptr);
  EXPECT_EQ(p.block_bytes, 16);     // 4 f32
  EXPECT_EQ(p.pool_blocks, 8 + 2);  // every cell, and blocks 0 and 1
  EXPECT_GE(p.pool_offset, p.pool_state_offset + 8 + 4);
  const PlaceLayout layout = *tree.Layout(x);
  EXPECT_EQ(layout.pool_node, ptr);
  EXPECT_EQ(layout.block_bytes, 16);
  EXPECT_FALSE(layout.affine());
  ASSERT_EQ(layout.digits[0].size(), 1u);
  EXPECT_EQ(layout.digits[0][0].modulus, 4);  // wraps inside the block
  EXPECT_EQ(layout.digits[0][0].stride, 4);
  EXPECT_EQ(layout.shape, std::vector<int64_t>{32});
  // The table is an i32 place indexed like the pointer's cells.
  EXPECT_EQ(tree.Extents(p.table), std::vector<int64_t>{8});
  EXPECT_TRUE(tree.node(p.table).hidden);
  EXPECT_EQ(tree.SparseAncestors(x), std::vector<int>{ptr});
  EXPECT_EQ(tree.NumCells(tree.node(p.list).parent), 8);
  EXPECT_THAT(tree.ToString(), HasSubstr("pointer[i:8]{dense[i:4]"));
}

TEST(SNodeSparseTest, PoolBudgetCapsBlocksAndDynamicListsUseChunks) {
  SNodeTree tree;
  tree.set_pool_budget(100);
  const int rows = *tree.AddDense(0, {0}, {3});
  const int list = *tree.AddSparse(rows, SNode::Kind::kDynamic, {1}, {10}, 4);
  const int y = *tree.AddPlace(list, PrimitiveType::kI32, "y");
  ASSERT_TRUE(tree.Finalize().ok());
  const SNode& d = tree.node(list);
  EXPECT_EQ(d.block_bytes, 16);                // 4 i32 per chunk
  EXPECT_EQ(d.pool_blocks, 100 / 16 + 2);      // the budget, not 3 x 3 chunks
  EXPECT_EQ(tree.Extents(d.table), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(tree.Extents(d.length), std::vector<int64_t>{3});
  const PlaceLayout layout = *tree.Layout(y);
  EXPECT_EQ(layout.pool_node, list);
  EXPECT_EQ(layout.shape, (std::vector<int64_t>{3, 10}));
  ASSERT_EQ(layout.digits[1].size(), 1u);
  EXPECT_EQ(layout.digits[1][0].modulus, 4);  // the element in its chunk
}

TEST(SNodeSparseTest, BadSparseLevelsAreRefused) {
  SNodeTree tree;
  EXPECT_THAT(std::string(tree.AddSparse(0, SNode::Kind::kDynamic, {0, 1},
                                         {4, 4}, 2)
                              .status()
                              .message()),
              HasSubstr("exactly one axis"));
  EXPECT_THAT(std::string(
                  tree.AddSparse(0, SNode::Kind::kDynamic, {0}, {4}, 0)
                      .status()
                      .message()),
              HasSubstr("chunk_size"));
  EXPECT_THAT(std::string(tree.AddSparse(0, SNode::Kind::kPointer, {0, 1},
                                         {1 << 16, 1 << 16})
                              .status()
                              .message()),
              HasSubstr("32 bits"));
  EXPECT_FALSE(tree.has_sparse());
}

}  // namespace
}  // namespace quadrants::ir
