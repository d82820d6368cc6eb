// The adstack sizer bytecode: its layout, the per-stack floors, what it
// leaves to the host, and that the interpreter shader passes spirv-val.
#include "quadrants/codegen/spirv/sizer_bytecode.h"

#include <gtest/gtest.h>

#include <vector>

#include "quadrants/codegen/spirv/msl_export.h"
#include "quadrants/codegen/spirv/sizer_shader.h"
#include "quadrants/codegen/spirv/spirv_tools.h"
#include "quadrants/common/errors.h"

namespace quadrants::codegen::spirv::sizer {
namespace {

using ir::SizeExpr;

AdStackSpec Stack(SizeExpr::Ptr expr, int64_t static_capacity = 0,
                  ir::PrimitiveType dtype = ir::PrimitiveType::kF32) {
  AdStackSpec info;
  info.dtype = dtype;
  info.slot_bytes = 8;
  info.static_capacity = static_capacity;
  info.size_expr = std::move(expr);
  return info;
}

// The code of `stack`: up to the next stack's code, or the padding.
std::vector<int64_t> Code(const std::vector<int64_t>& words, int stack) {
  const int64_t count = words[0];
  auto start = [&](int64_t k) {
    return k < count ? words[kHeaderWords + kStackWords * k + 2]
                     : static_cast<int64_t>(words.size()) - kPadWords;
  };
  return std::vector<int64_t>(words.begin() + start(stack),
                              words.begin() + start(stack + 1));
}

TEST(SizerBytecode, HeaderAndFloors) {
  ir::SNodeTree snodes;
  std::vector<AdStackSpec> stacks = {
      Stack(SizeExpr::Add(SizeExpr::ArgValue(0), SizeExpr::Const(2))),
      Stack(nullptr, 0, ir::PrimitiveType::kI32),
      Stack(SizeExpr::Const(99), 7)};
  auto words = EncodeSizer(stacks, snodes, {}, 5);
  ASSERT_TRUE(words.ok()) << words.status();
  EXPECT_EQ((*words)[0], 3);
  // is_float, slot bytes, floor: an expression gets the two setup slots.
  EXPECT_EQ((*words)[1], 1);
  EXPECT_EQ((*words)[2], 8);
  EXPECT_EQ((*words)[4], 2);
  EXPECT_EQ((*words)[5], 0);
  EXPECT_EQ((*words)[8], 0);
  EXPECT_EQ(Code(*words, 0),
            (std::vector<int64_t>{kArg, 0, kConst, 2, kAdd, kEnd}));
  // No expression: the default; a static capacity wins over an expression.
  EXPECT_EQ(Code(*words, 1), (std::vector<int64_t>{kConst, 5, kEnd}));
  EXPECT_EQ(Code(*words, 2), (std::vector<int64_t>{kConst, 7, kEnd}));
  // Zero padding follows the code.
  EXPECT_EQ(words->back(), 0);
}

TEST(SizerBytecode, FieldLoadCarriesTheLayout) {
  ir::SNodeTree snodes;
  auto dense = snodes.AddDense(snodes.root(), {0, 1}, {4, 6});
  ASSERT_TRUE(dense.ok());
  auto place = snodes.AddPlace(*dense, ir::PrimitiveType::kI16, "n");
  ASSERT_TRUE(place.ok());
  ASSERT_TRUE(snodes.Finalize().ok());
  auto layout = snodes.Layout(*place);
  ASSERT_TRUE(layout.ok());
  auto e =
      SizeExpr::FieldLoad(*place, {SizeExpr::Const(1), SizeExpr::Const(2)});
  auto words = EncodeSizer({Stack(e)}, snodes, {}, 2);
  ASSERT_TRUE(words.ok()) << words.status();
  std::vector<int64_t> want = {kConst,
                               1,
                               kConst,
                               2,
                               kField,
                               2,
                               *TypeCode(ir::PrimitiveType::kI16),
                               layout->offset,
                               layout->axis_stride[0],
                               layout->shape[0],
                               layout->axis_stride[1],
                               layout->shape[1],
                               kEnd};
  EXPECT_EQ(Code(*words, 0), want);
  // Signed 16-bit integer.
  EXPECT_EQ(*TypeCode(ir::PrimitiveType::kI16), 2 | 16 | kInt << 8);
  EXPECT_EQ(*TypeCode(ir::PrimitiveType::kU8), 1 | kInt << 8);
}

TEST(SizerBytecode, MismatchedIndicesReadNothing) {
  ir::SNodeTree snodes;
  auto dense = snodes.AddDense(snodes.root(), {0}, {4});
  auto place = snodes.AddPlace(*dense, ir::PrimitiveType::kI32, "n");
  ASSERT_TRUE(place.ok());
  ASSERT_TRUE(snodes.Finalize().ok());
  // Two indices for a 1-D field: extents of 0, so the read is out of range.
  auto e =
      SizeExpr::FieldLoad(*place, {SizeExpr::Const(1), SizeExpr::Const(0)});
  auto words = EncodeSizer({Stack(e)}, snodes, {}, 2);
  ASSERT_TRUE(words.ok());
  std::vector<int64_t> code = Code(*words, 0);
  EXPECT_EQ(code[9], 0);
  EXPECT_EQ(code[11], 0);
  std::vector<ir::KernelParam> params = {
      ir::KernelParam::Ndarray("a", ir::PrimitiveType::kI32, 2)};
  auto read =
      EncodeSizer({Stack(SizeExpr::NdarrayRead(0, {SizeExpr::Const(0)}))},
                  snodes, params, 2);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(Code(*read, 0), (std::vector<int64_t>{
                                kConst, 0, kNdRead, 0, 1,
                                *TypeCode(ir::PrimitiveType::kI32), 0, kEnd}));
}

TEST(SizerBytecode, NestedRangesJumpAndBindSlots) {
  ir::SNodeTree snodes;
  std::vector<ir::KernelParam> params = {
      ir::KernelParam::Ndarray("a", ir::PrimitiveType::kI32, 1)};
  // max over i in [0, shape(a)) of max over j in [0, a[i]) of j + i.
  auto inner = SizeExpr::MaxOverRange(
      2, SizeExpr::Const(0), SizeExpr::NdarrayRead(0, {SizeExpr::BoundVar(1)}),
      SizeExpr::Add(SizeExpr::BoundVar(2), SizeExpr::BoundVar(1)));
  auto outer = SizeExpr::MaxOverRange(1, SizeExpr::Const(0),
                                      SizeExpr::NdarrayShape(0, 0), inner);
  auto words = EncodeSizer({Stack(outer)}, snodes, params, 2);
  ASSERT_TRUE(words.ok()) << words.status();
  const int64_t s = (*words)[3];
  const int64_t i32 = *TypeCode(ir::PrimitiveType::kI32);
  std::vector<int64_t> want = {kConst, 0, kShape, 0, 0, kRangeBegin, 0, s + 31,
                               /*outer body: s + 8*/
                               kConst, 0, kVar, 0, kNdRead, 0, 1, i32, 1,
                               kRangeBegin, 1, s + 28,
                               /*inner body: s + 20*/
                               kVar, 1, kVar, 0, kAdd, kRangeNext, 1, s + 20,
                               /*s + 28*/ kRangeNext, 0, s + 8,
                               /*s + 31*/ kEnd};
  EXPECT_EQ(Code(*words, 0), want);
}

TEST(SizerBytecode, LeavesToTheHostWhatTheShaderDoesNotRead) {
  ir::SNodeTree snodes;
  std::vector<ir::KernelParam> params = {
      ir::KernelParam::Ndarray("a", ir::PrimitiveType::kF64, 1)};
  auto f64 =
      EncodeSizer({Stack(SizeExpr::NdarrayRead(0, {SizeExpr::Const(0)}))},
                  snodes, params, 2);
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kUnimplemented);
  auto unbound = EncodeSizer({Stack(SizeExpr::BoundVar(3))}, snodes, {}, 2);
  EXPECT_EQ(unbound.status().code(), absl::StatusCode::kInvalidArgument);
  // Nine nested ranges need nine variable slots.
  SizeExpr::Ptr e = SizeExpr::Const(1);
  for (int v = 0; v < kMaxVars + 1; ++v)
    e = SizeExpr::MaxOverRange(v, SizeExpr::Const(0), SizeExpr::Const(2), e);
  EXPECT_EQ(EncodeSizer({Stack(e)}, snodes, {}, 2).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(SizerBytecode, ReadsData) {
  EXPECT_FALSE(ReadsData(
      *SizeExpr::Add(SizeExpr::ArgValue(0), SizeExpr::NdarrayShape(1, 0))));
  EXPECT_TRUE(ReadsData(
      *SizeExpr::LoopIndexMax(SizeExpr::NdarrayRead(0, {SizeExpr::Const(0)}))));
  EXPECT_TRUE(ReadsData(*SizeExpr::FieldLoad(1, {})));
}

TEST(SizerShader, PassesValidation) {
  std::vector<uint32_t> words = BuildSizerShader();
  absl::Status valid = ValidateModule(words, "the adstack sizer shader");
  EXPECT_TRUE(valid.ok()) << valid;
}

TEST(SizerShader, CrossCompilesToMsl) {
  auto metal = CrossCompileToMsl(BuildSizerShader());
  if (!metal.ok() && GetErrorKind(metal.status()) == ErrorKind::kUnavailable)
    GTEST_SKIP() << metal.status();
  ASSERT_TRUE(metal.ok()) << metal.status();
  EXPECT_NE(metal->find("kernel void"), std::string::npos);
}

}  // namespace
}  // namespace quadrants::codegen::spirv::sizer
