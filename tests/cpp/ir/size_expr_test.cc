// SizeExpr: construction, printing, the flat post-order form and its
// protobuf serialization, including rejection of malformed input.
#include "quadrants/ir/size_expr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "quadrants/common/errors.h"

namespace quadrants::ir {
namespace {

using ::testing::HasSubstr;
using Kind = SizeExprKind;
using E = SizeExpr;

// max over v0 in [0, a1.shape[0]) of max(a1[v0] * 2, x3[2, v0] - 1)
//   + (loop_index_max(a1.shape[0]) + stack_top_max(5)),
// with the shape node and the bound variable shared.
SizeExpr::Ptr EveryKindTree() {
  E::Ptr shape = E::NdarrayShape(1, 0);
  E::Ptr v0 = E::BoundVar(0);
  E::Ptr doubled = E::Mul(E::NdarrayRead(1, {v0}), E::Const(2));
  E::Ptr cell = E::Sub(E::FieldLoad(3, {E::Const(2), v0}), E::Const(1));
  E::Ptr range = E::MaxOverRange(0, E::Const(0), shape, E::Max(doubled, cell));
  E::Ptr tail = E::Add(E::LoopIndexMax(shape), E::StackLoadTopMax(E::Const(5)));
  return E::Add(range, tail);
}

constexpr char kEveryKindText[] =
    "(max_over_range(v0 in [0, shape(arg1, 0)), max((read(arg1)[v0] * 2), "
    "(field(snode3)[2, v0] - 1))) + (loop_index_max(shape(arg1, 0)) + "
    "stack_top_max(5)))";

FlatSizeExprNode Node(Kind kind, std::vector<int> children = {},
                      int64_t value = 0) {
  FlatSizeExprNode node;
  node.kind = kind;
  node.children = std::move(children);
  node.value = value;
  return node;
}

void ExpectMalformed(const absl::StatusOr<SizeExpr::Ptr>& result,
                     const std::string& detail) {
  ASSERT_FALSE(result.ok()) << (*result)->ToString();
  EXPECT_EQ(GetErrorKind(result.status()), ErrorKind::kRuntime);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("malformed serialized SizeExpr"));
  EXPECT_THAT(std::string(result.status().message()), HasSubstr(detail));
}

TEST(SizeExprTest, ToStringCoversEveryKind) {
  EXPECT_EQ(EveryKindTree()->ToString(), kEveryKindText);
  std::set<Kind> kinds;
  for (const FlatSizeExprNode& node : Flatten(*EveryKindTree())) {
    kinds.insert(node.kind);
  }
  EXPECT_EQ(kinds.size(), static_cast<size_t>(Kind::kMaxOverRange) + 1);
}

TEST(SizeExprTest, AccessorsReflectTheFactories) {
  E::Ptr range = E::MaxOverRange(7, E::Const(1), E::Const(9), E::BoundVar(7));
  EXPECT_EQ(range->kind(), Kind::kMaxOverRange);
  EXPECT_EQ(range->var_id(), 7);
  ASSERT_EQ(range->children().size(), 3u);
  EXPECT_EQ(range->children()[1]->value(), 9);
  E::Ptr shape = E::NdarrayShape(2, 1);
  EXPECT_EQ(shape->arg(), 2);
  EXPECT_EQ(shape->axis(), 1);
  EXPECT_EQ(E::FieldLoad(5, {})->snode_id(), 5);
  EXPECT_EQ(E::FieldLoad(5, {})->ToString(), "field(snode5)[]");
}

TEST(SizeExprTest, FlattenIsPostOrderWithSharedNodesOnce) {
  E::Ptr shape = E::NdarrayShape(0, 1);
  E::Ptr expr = E::Mul(E::Add(shape, E::Const(1)), shape);
  std::vector<FlatSizeExprNode> nodes = Flatten(*expr);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].kind, Kind::kNdarrayShape);
  EXPECT_EQ(nodes[0].arg, 0);
  EXPECT_EQ(nodes[0].axis, 1);
  EXPECT_EQ(nodes[1], Node(Kind::kConst, {}, 1));
  EXPECT_EQ(nodes[2], Node(Kind::kAdd, {0, 1}));
  EXPECT_EQ(nodes[3], Node(Kind::kMul, {2, 0}));  // root last, reuses node 0
}

TEST(SizeExprTest, FlattenOfTheLargeTree) {
  std::vector<FlatSizeExprNode> nodes = Flatten(*EveryKindTree());
  // 19 nodes in the tree, minus one repeat each of the shape and of v0.
  ASSERT_EQ(nodes.size(), 17u);
  int shapes = 0, vars = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int child : nodes[i].children) {
      EXPECT_GE(child, 0);
      EXPECT_LT(child, static_cast<int>(i)) << "node " << i;
    }
    shapes += nodes[i].kind == Kind::kNdarrayShape;
    vars += nodes[i].kind == Kind::kBoundVar;
  }
  EXPECT_EQ(shapes, 1);
  EXPECT_EQ(vars, 1);
  EXPECT_EQ(nodes.back().kind, Kind::kAdd);
  EXPECT_EQ(nodes.back().children.size(), 2u);
  EXPECT_EQ(nodes.back().children[1], 15);  // the tail sum, just before root
}

TEST(SizeExprTest, SerializeRoundTrip) {
  E::Ptr tree = EveryKindTree();
  absl::StatusOr<E::Ptr> back = DeserializeSizeExpr(SerializeSizeExpr(*tree));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->ToString(), tree->ToString());
  EXPECT_EQ((*back)->Hash(), tree->Hash());
  EXPECT_TRUE((*back)->Equals(*tree));
  EXPECT_TRUE(tree->Equals(**back));
  // Sharing survives: the flat forms match node for node.
  EXPECT_EQ(Flatten(**back), Flatten(*tree));
}

TEST(SizeExprTest, UnflattenInvertsFlatten) {
  for (E::Ptr tree : {EveryKindTree(), E::Const(-3), E::BoundVar(2),
                      E::NdarrayRead(0, {E::Const(1), E::Const(2)})}) {
    absl::StatusOr<E::Ptr> back = Unflatten(Flatten(*tree));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE((*back)->Equals(*tree)) << tree->ToString();
    EXPECT_EQ((*back)->Hash(), tree->Hash());
  }
}

TEST(SizeExprTest, StructurallyEqualTreesHashEqual) {
  EXPECT_EQ(EveryKindTree()->Hash(), EveryKindTree()->Hash());
  EXPECT_TRUE(EveryKindTree()->Equals(*EveryKindTree()));
}

TEST(SizeExprTest, DifferentTreesHashDifferently) {
  E::Ptr one = E::Const(1), two = E::Const(2), v0 = E::BoundVar(0);
  std::vector<E::Ptr> trees = {
      one,
      two,
      E::BoundVar(1),
      E::BoundVar(2),
      E::NdarrayShape(0, 1),
      E::NdarrayShape(1, 0),
      E::FieldLoad(1, {}),
      E::NdarrayRead(1, {}),
      E::FieldLoad(1, {one}),
      E::NdarrayRead(1, {one}),
      E::Add(one, two),
      E::Add(two, one),
      E::Sub(one, two),
      E::Mul(one, two),
      E::Max(one, two),
      E::LoopIndexMax(one),
      E::StackLoadTopMax(one),
      E::MaxOverRange(0, one, two, v0),
      E::MaxOverRange(1, one, two, v0),
      EveryKindTree(),
  };
  for (size_t a = 0; a < trees.size(); ++a) {
    for (size_t b = a + 1; b < trees.size(); ++b) {
      EXPECT_NE(trees[a]->Hash(), trees[b]->Hash())
          << trees[a]->ToString() << " vs " << trees[b]->ToString();
      EXPECT_FALSE(trees[a]->Equals(*trees[b]))
          << trees[a]->ToString() << " vs " << trees[b]->ToString();
    }
  }
}

TEST(SizeExprTest, UnflattenRejectsAnEmptyList) {
  ExpectMalformed(Unflatten({}), "empty node list");
}

TEST(SizeExprTest, UnflattenRejectsChildrenThatDoNotPrecede) {
  ExpectMalformed(
      Unflatten({Node(Kind::kConst, {}, 1), Node(Kind::kAdd, {0, 2}),
                 Node(Kind::kConst, {}, 2)}),
      "node 1 refers to node 2, which does not precede it");
  ExpectMalformed(Unflatten({Node(Kind::kLoopIndexMax, {0})}),
                  "node 0 refers to node 0");
  ExpectMalformed(
      Unflatten({Node(Kind::kConst), Node(Kind::kLoopIndexMax, {-1})}),
      "node 1 refers to node -1");
}

TEST(SizeExprTest, UnflattenRejectsWrongArity) {
  ExpectMalformed(Unflatten({Node(Kind::kConst), Node(Kind::kAdd, {0})}),
                  "node 1 has 1 children, expected 2");
  ExpectMalformed(Unflatten({Node(Kind::kConst), Node(Kind::kConst, {0})}),
                  "node 1 has 1 children, expected 0");
  ExpectMalformed(
      Unflatten({Node(Kind::kConst), Node(Kind::kMaxOverRange, {0, 0})}),
      "node 1 has 2 children, expected 3");
}

TEST(SizeExprTest, UnflattenRejectsUnknownKinds) {
  ExpectMalformed(Unflatten({Node(static_cast<Kind>(40))}), "unknown kind 40");
  ExpectMalformed(Unflatten({Node(Kind::kConst), Node(static_cast<Kind>(-1))}),
                  "node 1 has unknown kind -1");
}

TEST(SizeExprTest, DeserializeRejectsGarbage) {
  ExpectMalformed(DeserializeSizeExpr(std::string(12, '\xff')),
                  "not a valid message");
  ExpectMalformed(DeserializeSizeExpr("not a size expression"),
                  "not a valid message");
  std::string truncated = SerializeSizeExpr(*EveryKindTree());
  truncated.pop_back();
  ExpectMalformed(DeserializeSizeExpr(truncated), "not a valid message");
  // An empty message parses but holds no nodes.
  ExpectMalformed(DeserializeSizeExpr(""), "empty node list");
}

TEST(SizeExprTest, DeserializeChecksTheDecodedNodes) {
  // Hand-encoded messages: nodes { kind: K  children: [...] }.
  auto one_node = [](char kind) {
    return std::string("\x0a\x02\x08", 3) + kind;
  };
  absl::StatusOr<E::Ptr> zero = DeserializeSizeExpr(one_node('\x00'));
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ((*zero)->ToString(), "0");
  ExpectMalformed(DeserializeSizeExpr(one_node('\x28')), "unknown kind 40");
  // An add (kind 7) whose packed children [0, 1] include itself.
  ExpectMalformed(
      DeserializeSizeExpr(std::string("\x0a\x06\x08\x07\x3a\x02\x00\x01", 8)),
      "node 0 refers to node 0");
}

}  // namespace
}  // namespace quadrants::ir
