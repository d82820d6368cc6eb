#include "quadrants/runtime/adstack/size_expr_evaluator.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "quadrants/common/errors.h"

namespace quadrants::adstack {
namespace {

using ir::SizeExpr;

// In-memory inputs: one 0-D field, scalar args and 1-D/2-D ndarrays.
class FakeInputs : public SizeExprInputs {
 public:
  std::map<int, int64_t> fields;               // snode -> value (0-D)
  std::map<int, int64_t> args;                 // scalar args
  std::map<int, std::vector<int64_t>> shapes;  // ndarray shapes
  std::map<int, std::vector<int64_t>> data;    // row-major contents
  mutable int64_t reads = 0;

  absl::optional<int64_t> FieldValue(
      int snode, absl::Span<const int64_t> index) const override {
    if (!index.empty())
      return absl::nullopt;
    return fields.at(snode);
  }
  int64_t NdarrayShape(int arg, int axis) const override {
    return shapes.at(arg).at(axis);
  }
  absl::optional<int64_t> NdarrayValue(
      int arg, absl::Span<const int64_t> index) const override {
    const auto& shape = shapes.at(arg);
    int64_t linear = 0;
    for (size_t a = 0; a < shape.size(); ++a) {
      if (index[a] < 0 || index[a] >= shape[a])
        return absl::nullopt;
      linear = linear * shape[a] + index[a];
    }
    ++reads;
    return data.at(arg).at(linear);
  }
  int64_t ArgValue(int arg) const override { return args.at(arg); }
};

int64_t Eval(const SizeExpr::Ptr& e, const FakeInputs& in) {
  auto value = EvaluateSizeExpr(*e, in);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : -1;
}

// max over i in [0, arg1.shape[0]) of (arg1[i] + 2)
SizeExpr::Ptr PerElementBound() {
  return SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::NdarrayShape(1, 0),
      SizeExpr::Add(SizeExpr::NdarrayRead(1, {SizeExpr::BoundVar(0)}),
                    SizeExpr::Const(2)));
}

TEST(SizeExprEvaluatorTest, LeavesAndOperators) {
  FakeInputs in;
  in.fields[3] = 41;
  in.args[0] = 7;
  in.shapes[1] = {5};
  in.data[1] = {3, 9, 4, 1, 2};
  EXPECT_EQ(
      Eval(SizeExpr::Add(SizeExpr::FieldLoad(3, {}), SizeExpr::Const(2)), in),
      43);
  EXPECT_EQ(
      Eval(SizeExpr::Mul(SizeExpr::ArgValue(0), SizeExpr::NdarrayShape(1, 0)),
           in),
      35);
  EXPECT_EQ(
      Eval(SizeExpr::Max(SizeExpr::Const(4),
                         SizeExpr::Sub(SizeExpr::Const(1), SizeExpr::Const(9))),
           in),
      4);
  EXPECT_EQ(Eval(PerElementBound(), in), 11);
  EXPECT_EQ(Eval(SizeExpr::LoopIndexMax(SizeExpr::ArgValue(0)), in), 6);
  EXPECT_EQ(Eval(SizeExpr::StackLoadTopMax(SizeExpr::Const(5)), in), 5);
}

TEST(SizeExprEvaluatorTest, TriangularBoundDependsOnTheOuterIndex) {
  // max over i in [0, n) of (i + 2) == n + 1
  FakeInputs in;
  in.args[0] = 100;
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::ArgValue(0),
      SizeExpr::Add(SizeExpr::BoundVar(0), SizeExpr::Const(2)));
  EXPECT_EQ(Eval(tree, in), 101);
}

TEST(SizeExprEvaluatorTest, DeserializedTreesGiveIdenticalCapacities) {
  FakeInputs in;
  in.args[0] = 6;
  in.shapes[1] = {4, 3};
  in.data[1] = {1, 8, 2, 7, 3, 3, 0, 5, 9, 4, 4, 4};
  // max over i < shape0, j < arg0 (clipped by the read) of arr[i, j] - 1 + 2
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::NdarrayShape(1, 0),
      SizeExpr::MaxOverRange(
          1, SizeExpr::Const(0), SizeExpr::ArgValue(0),
          SizeExpr::Add(
              SizeExpr::Sub(SizeExpr::NdarrayRead(1, {SizeExpr::BoundVar(0),
                                                      SizeExpr::BoundVar(1)}),
                            SizeExpr::Const(1)),
              SizeExpr::Const(2))));
  auto copy = ir::DeserializeSizeExpr(ir::SerializeSizeExpr(*tree));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Eval(*copy, in), Eval(tree, in));
  EXPECT_EQ(Eval(tree, in), 10);
  EXPECT_EQ((*copy)->Hash(), tree->Hash());
}

TEST(SizeExprEvaluatorTest, ReadsOutsideAnArrayAreSkippedNotPerformed) {
  // Two arrays of different lengths; the range follows the longer one, whose
  // peak lies past the shorter one's end.
  FakeInputs in;
  in.shapes[1] = {3};
  in.data[1] = {1, 2, 3};
  in.shapes[2] = {6};
  in.data[2] = {4, 5, 6, 7, 8, 100};
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::NdarrayShape(2, 0),
      SizeExpr::Sub(SizeExpr::NdarrayRead(2, {SizeExpr::BoundVar(0)}),
                    SizeExpr::NdarrayRead(1, {SizeExpr::BoundVar(0)})));
  // Only i < 3 has both values: max(4-1, 5-2, 6-3) = 3.
  EXPECT_EQ(Eval(tree, in), 3);
  EXPECT_EQ(in.reads, 6 + 3);  // every in-range read, nothing past the end
}

TEST(SizeExprEvaluatorTest, GuardStopsLongSerialWalksWithAClearError) {
  FakeInputs in;
  in.args[0] = (int64_t{1} << 24) + 1;
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::ArgValue(0), SizeExpr::BoundVar(0));
  auto value = EvaluateSizeExpr(*tree, in);
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("16777216"), absl::string_view::npos)
      << value.status().message();
  in.args[0] = int64_t{1} << 20;
  EXPECT_EQ(Eval(tree, in), (int64_t{1} << 20) - 1);
}

TEST(SizeExprEvaluatorTest, FloorDivisionAndModuloFollowPython) {
  FakeInputs in;
  EXPECT_EQ(
      Eval(SizeExpr::FloorDiv(SizeExpr::Const(-7), SizeExpr::Const(2)), in),
      -4);
  EXPECT_EQ(Eval(SizeExpr::Mod(SizeExpr::Const(-7), SizeExpr::Const(2)), in),
            1);
  EXPECT_EQ(
      Eval(SizeExpr::FloorDiv(SizeExpr::Const(7), SizeExpr::Const(0)), in), 0);
  // max over i < 9 of arr[i // 2], arr = {5, 1, 8, 2, 3}
  in.shapes[1] = {5};
  in.data[1] = {5, 1, 8, 2, 3};
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::Const(9),
      SizeExpr::NdarrayRead(
          1, {SizeExpr::FloorDiv(SizeExpr::BoundVar(0), SizeExpr::Const(2))}));
  EXPECT_EQ(Eval(tree, in), 8);
  auto copy = ir::DeserializeSizeExpr(ir::SerializeSizeExpr(*tree));
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(Eval(*copy, in), 8);
}

TEST(SizeExprEvaluatorTest, EmptyRangesNeedNoSlots) {
  FakeInputs in;
  in.args[0] = 0;
  auto tree = SizeExpr::MaxOverRange(
      0, SizeExpr::Const(0), SizeExpr::ArgValue(0), SizeExpr::Const(50));
  EXPECT_EQ(Eval(tree, in), 0);
}

}  // namespace
}  // namespace quadrants::adstack
