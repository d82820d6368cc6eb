#include "quadrants/adstack/reducer_spec.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "quadrants/runtime/adstack/max_reducer.h"
#include "quadrants/runtime/adstack/size_expr_evaluator.h"
#include "quadrants/runtime/host/host_max_reducer.h"

namespace quadrants::adstack {
namespace {

using ir::SizeExpr;
using P = SizeExpr::Ptr;

P C(int64_t v) {
  return SizeExpr::Const(v);
}
P V(int id) {
  return SizeExpr::BoundVar(id);
}
P Read(int arg, std::vector<P> idx) {
  return SizeExpr::NdarrayRead(arg, std::move(idx));
}
P Shape(int arg, int axis) {
  return SizeExpr::NdarrayShape(arg, axis);
}
P Mor(int var, P lo, P hi, P body) {
  return SizeExpr::MaxOverRange(var, lo, hi, body);
}

// i32 ndarrays 1 and 2 and a 0-D field (snode 5); arg 3 is an i64 ndarray.
int Width(bool is_field, int id) {
  if (is_field)
    return id == 5 ? 32 : 0;
  return id == 3 ? 64 : 32;
}

std::vector<ReducerSpec> Recognize(const P& tree) {
  return RecognizeReducerSpecs("k", 1, 2, *tree, Width);
}

TEST(ReducerSpecTest, CapturesAReadAtTheBoundVariable) {
  // max over i of (arr[i] - 0 + 2): the shape of range(arr[i]).
  P tree = Mor(0, C(0), Shape(1, 0),
               SizeExpr::Add(SizeExpr::Sub(Read(1, {V(0)}), C(0)), C(2)));
  auto specs = Recognize(tree);
  ASSERT_EQ(specs.size(), 1u);
  const ReducerSpec& s = specs[0];
  EXPECT_EQ(s.node, tree.get());
  EXPECT_EQ(s.num_axes, 1);
  EXPECT_EQ(s.depth, 0);
  EXPECT_TRUE(s.deps.empty());
  // Post-order: lo, shape, read index, read, 0, sub, 2, add, then the node.
  EXPECT_EQ(s.key.ToString(), "k/task1/stack2/node8");
  ASSERT_EQ(s.body.reads.size(), 1u);
  EXPECT_FALSE(s.body.reads[0].is_field);
  EXPECT_EQ(s.body.reads[0].id, 1);
  ASSERT_EQ(s.body.reads[0].indices.size(), 1u);
  EXPECT_TRUE(s.body.reads[0].indices[0].is_axis);
  EXPECT_EQ(s.body.code.back().op, BodyOp::kAdd);
}

TEST(ReducerSpecTest, KeysAreStableAcrossIdenticalTrees) {
  auto make = [] {
    return SizeExpr::Add(C(2), Mor(0, C(0), Shape(1, 0), Read(1, {V(0)})));
  };
  EXPECT_EQ(Recognize(make())[0].key, Recognize(make())[0].key);
  // Round-tripped through the serialized form, as the offline cache does.
  auto again = ir::DeserializeSizeExpr(ir::SerializeSizeExpr(*make()));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Recognize(*again)[0].key, Recognize(make())[0].key);
}

TEST(ReducerSpecTest, LeavesOutWideReadsArithmeticIndicesAndConstants) {
  // A 64-bit leaf.
  EXPECT_TRUE(Recognize(Mor(0, C(0), Shape(3, 0), Read(3, {V(0)}))).empty());
  // arr[i // 2].
  EXPECT_TRUE(Recognize(Mor(0, C(0), Shape(1, 0),
                            Read(1, {SizeExpr::FloorDiv(V(0), C(2))})))
                  .empty());
  // A body with floor division.
  EXPECT_TRUE(
      Recognize(Mor(0, C(0), C(9), SizeExpr::FloorDiv(Read(1, {V(0)}), C(2))))
          .empty());
  // A compile-time-constant trip count has no MaxOverRange at all.
  EXPECT_TRUE(Recognize(SizeExpr::Add(C(7), C(2))).empty());
}

TEST(ReducerSpecTest, ChainsNestedRangesIntoOneMultiAxisSpec) {
  // max over i, j of arr2d[i, j] + field[None].
  P tree = Mor(
      0, C(0), Shape(1, 0),
      Mor(1, C(0), Shape(1, 1),
          SizeExpr::Add(Read(1, {V(0), V(1)}), SizeExpr::FieldLoad(5, {}))));
  auto specs = Recognize(tree);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].num_axes, 2);
  EXPECT_EQ(specs[0].body.reads.size(), 2u);
  EXPECT_TRUE(specs[0].body.reads[1].is_field);
}

TEST(ReducerSpecTest, RaggedInnerRangesAreLeftToTheSerialWalk) {
  // The inner range depends on the outer variable: no spec at any level.
  P tree =
      Mor(0, C(0), Shape(1, 0), Mor(1, C(0), Read(1, {V(0)}), Read(2, {V(1)})));
  EXPECT_TRUE(Recognize(tree).empty());
}

TEST(ReducerSpecTest, SpecsInBoundsComeFirstWithTheirDepth) {
  // max over j in [0, max over i of arr[i]) of brr[j].
  P inner = Mor(0, C(0), Shape(1, 0), Read(1, {V(0)}));
  P outer = Mor(1, C(0), inner, Read(2, {V(1)}));
  P tree = SizeExpr::Add(outer, C(2));
  auto specs = Recognize(tree);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].node, inner.get());
  EXPECT_EQ(specs[1].node, outer.get());
  EXPECT_EQ(specs[1].deps, std::vector<int>{0});
  EXPECT_EQ(specs[1].depth, 1);
}

TEST(ReducerSpecTest, SubstitutesConstantsForCapturedNodes) {
  P inner = Mor(0, C(0), Shape(1, 0), Read(1, {V(0)}));
  P tree = SizeExpr::Add(inner, C(2));
  P out = SubstituteConstants(tree, {{inner.get(), 40}});
  EXPECT_EQ(out->ToString(), SizeExpr::Add(C(40), C(2))->ToString());
  EXPECT_EQ(SubstituteConstants(tree, {}).get(), tree.get());
}

// ---- the interpreter against the serial evaluator ---------------------------

class ArrayInputs : public SizeExprInputs {
 public:
  std::map<int, std::vector<int32_t>> data;
  std::map<int, std::vector<int64_t>> shapes;

  absl::optional<int64_t> FieldValue(int,
                                     absl::Span<const int64_t>) const override {
    return absl::nullopt;
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
    return data.at(arg).at(linear);
  }
  int64_t ArgValue(int) const override { return 0; }

  ReducerJob Job(const ReducerSpec& spec) const {
    ReducerJob job;
    for (int a = 0; a < spec.num_axes; ++a) {
      job.begin.push_back(*EvaluateSizeExprValue(*spec.begin[a], *this));
      job.end.push_back(*EvaluateSizeExprValue(*spec.end[a], *this));
    }
    job.code = spec.body.code;
    for (BodyInstr& in : job.code) {
      if (in.op == BodyOp::kShape)
        in = {BodyOp::kConst, -1, -1, shapes.at(in.a).at(in.b)};
    }
    job.reads = spec.body.reads;
    for (const BodyRead& read : job.reads) {
      ResolvedRead r;
      const auto& shape = shapes.at(read.id);
      r.base = reinterpret_cast<const char*>(data.at(read.id).data());
      r.dtype = ir::PrimitiveType::kI32;
      r.extents = shape;
      r.byte_strides.assign(shape.size(), 4);
      for (int a = static_cast<int>(shape.size()) - 2; a >= 0; --a)
        r.byte_strides[a] = r.byte_strides[a + 1] * shape[a + 1];
      job.resolved.push_back(r);
    }
    return job;
  }
};

void ExpectSameMaximum(const P& tree, const ArrayInputs& in) {
  auto specs = Recognize(tree);
  ASSERT_EQ(specs.size(), 1u) << tree->ToString();
  ASSERT_EQ(specs[0].node, tree.get());
  const int64_t serial = *EvaluateSizeExprValue(*tree, in);
  ReducerJob job = in.Job(specs[0]);
  const int64_t points = job.Points();
  // Whole, and in uneven chunks that cross rows.
  EXPECT_EQ(BodyInterpreter(job).Reduce(0, points), serial) << tree->ToString();
  int64_t chunked = kNoValue;
  BodyInterpreter interpreter(job);
  for (int64_t lo = 0; lo < points; lo += 777)
    chunked =
        std::max(chunked, interpreter.Reduce(lo, std::min(points, lo + 777)));
  EXPECT_EQ(chunked, serial) << tree->ToString();
  host::ThreadPool pool(4);
  host::HostMaxReducer reducer(&pool);
  auto values = reducer.Reduce({job});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ((*values)[0], serial) << tree->ToString();
}

TEST(BodyInterpreterTest, MatchesTheSerialEvaluator) {
  std::mt19937 rng(7);
  ArrayInputs in;
  const int64_t n = 100000;
  for (int arg : {1, 2}) {
    // arr 2 is shorter: its reads past the end have no value.
    const int64_t len = arg == 1 ? n : n - 123;
    in.shapes[arg] = {len};
    std::vector<int32_t> values(len);
    for (auto& v : values)
      v = static_cast<int32_t>(rng() % 2000) - 1000;
    in.data[arg] = values;
  }
  in.shapes[4] = {300, 517};
  std::vector<int32_t> grid(300 * 517);
  for (auto& v : grid)
    v = static_cast<int32_t>(rng() % 100000);
  in.data[4] = grid;
  auto a = [] { return Read(1, {V(0)}); };
  auto b = [] { return Read(2, {V(0)}); };
  auto over = [](P body) { return Mor(0, C(0), Shape(1, 0), body); };
  ExpectSameMaximum(over(a()), in);
  ExpectSameMaximum(over(SizeExpr::Add(SizeExpr::Sub(a(), C(0)), C(2))), in);
  ExpectSameMaximum(over(SizeExpr::Max(b(), C(-5000))), in);
  ExpectSameMaximum(over(SizeExpr::Add(a(), b())), in);
  ExpectSameMaximum(over(SizeExpr::Max(a(), b())), in);
  ExpectSameMaximum(over(SizeExpr::Sub(C(3), SizeExpr::Mul(a(), b()))), in);
  ExpectSameMaximum(over(SizeExpr::Add(b(), V(0))), in);
  // Only reads past the end: no value at all.
  ExpectSameMaximum(Mor(0, Shape(2, 0), Shape(1, 0), b()), in);
  // Two axes, with an offset inner range and the outer variable in the body.
  ExpectSameMaximum(
      Mor(0, C(0), Shape(4, 0),
          Mor(1, C(-3), Shape(4, 1),
              SizeExpr::Add(Read(4, {V(0), V(1)}), SizeExpr::Mul(V(0), C(2))))),
      in);
  // The transposed read of a 2-D array, strided in memory.
  ExpectSameMaximum(Mor(0, C(0), Shape(4, 1),
                        Mor(1, C(0), Shape(4, 0), Read(4, {V(1), V(0)}))),
                    in);
  // A read at a constant index, and an empty range.
  ExpectSameMaximum(over(SizeExpr::Add(Read(1, {C(17)}), a())), in);
  ExpectSameMaximum(Mor(0, C(5), C(5), a()), in);
}

}  // namespace
}  // namespace quadrants::adstack
