// Kernels built with the IR builder and run on the CPU backend: the
// everyday shapes (saxpy, reductions, nested loops, control flow, fields).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "quadrants/common/errors.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/statements.h"
#include "tests/cpp/program/cpu_test_util.h"

namespace quadrants {
namespace {

using ir::AtomicOpKind;
using ir::BinaryOpKind;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using testing_util::CpuProgramTest;

constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kI64 = PrimitiveType::kI64;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;

class CpuBasicTest : public CpuProgramTest {};

TEST_F(CpuBasicTest, SaxpyOverNdarrays) {
  // for i in range(x.shape[0]): y[i] = a * x[i] + y[i]
  Kernel k("saxpy", SourceLocation{"saxpy.py", 1});
  k.AddParam(KernelParam::Scalar("a", kF32));
  k.AddParam(KernelParam::Ndarray("x", kF32, 1));
  k.AddParam(KernelParam::Ndarray("y", kF32, 1));
  IRBuilder b(&k);
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(1, 0));
  {
    auto scope = b.EnterBlock(loop->body());
    Stmt* i = b.LoopIndex(loop);
    Stmt* y = b.NdarrayPtr(2, {i});
    b.GlobalStore(y,
                  b.Add(b.Mul(b.ArgLoad(0), b.GlobalLoad(b.NdarrayPtr(1, {i}))),
                        b.GlobalLoad(y)));
  }
  constexpr int n = 1000;
  auto x = Array(kF32, {n});
  auto y = Array(kF32, {n});
  for (int i = 0; i < n; ++i) {
    Data<float>(x)[i] = 0.5f * i;
    Data<float>(y)[i] = 1.0f - i;
  }
  ASSERT_TRUE(Run(k, {F32(2.0f), Arg(x), Arg(y)}).ok());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(Data<float>(y)[i], 2.0f * (0.5f * i) + (1.0f - i)) << i;
  }
}

TEST_F(CpuBasicTest, AtomicAddReductionIntoAScalar) {
  Kernel k("reduce");
  k.AddParam(KernelParam::Ndarray("x", kF64, 1));
  k.AddParam(KernelParam::Ndarray("total", kF64, 1));
  k.AddParam(KernelParam::Ndarray("count", kI32, 1));
  IRBuilder b(&k);
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  {
    auto scope = b.EnterBlock(loop->body());
    Stmt* i = b.LoopIndex(loop);
    b.Atomic(AtomicOpKind::kAdd, b.NdarrayPtr(1, {b.ConstI32(0)}),
             b.GlobalLoad(b.NdarrayPtr(0, {i})));
    b.Atomic(AtomicOpKind::kAdd, b.NdarrayPtr(2, {b.ConstI32(0)}),
             b.ConstI32(1));
  }
  constexpr int n = 100000;
  auto x = Array(kF64, {n});
  for (int i = 0; i < n; ++i)
    Data<double>(x)[i] = 0.25 * i;  // exact in f64
  auto total = Array(kF64, {1});
  auto count = Array(kI32, {1});
  ASSERT_TRUE(Run(k, {Arg(x), Arg(total), Arg(count)}).ok());
  EXPECT_EQ(Data<double>(total)[0], 0.25 * (double(n) * (n - 1) / 2));
  EXPECT_EQ(Data<int32_t>(count)[0], n);
}

TEST_F(CpuBasicTest, NestedSerialLoopsWithBoundsFromFields) {
  // n, m: i32 0-D fields. for i in range(n): for j in range(i, m): out[i] += j
  ir::SNodeTree& tree = program_->snodes();
  int n_field = tree.AddPlace(tree.root(), kI32, "n").value();
  int m_field = tree.AddPlace(tree.root(), kI32, "m").value();
  Kernel k("nested");
  k.AddParam(KernelParam::Ndarray("out", kI64, 1));
  IRBuilder b(&k, &tree);
  auto* outer =
      b.RangeFor(b.ConstI32(0), b.GlobalLoad(b.FieldPtr(n_field, {})));
  {
    auto scope = b.EnterBlock(outer->body());
    Stmt* i = b.LoopIndex(outer);
    auto* inner = b.RangeFor(i, b.GlobalLoad(b.FieldPtr(m_field, {})));
    auto inner_scope = b.EnterBlock(inner->body());
    Stmt* j = b.LoopIndex(inner);
    Stmt* slot = b.NdarrayPtr(0, {i});
    b.GlobalStore(slot, b.Add(b.GlobalLoad(slot), b.Cast(j, kI64)));
  }
  ASSERT_TRUE(
      program_->WriteField(n_field, {}, ir::Constant::Int(kI32, 7)).ok());
  ASSERT_TRUE(
      program_->WriteField(m_field, {}, ir::Constant::Int(kI32, 12)).ok());
  auto out = Array(kI64, {10});
  ASSERT_TRUE(Run(k, {Arg(out)}).ok());
  for (int i = 0; i < 10; ++i) {
    int64_t expected = 0;
    if (i < 7) {
      for (int j = i; j < 12; ++j)
        expected += j;
    }
    EXPECT_EQ(Data<int64_t>(out)[i], expected) << i;
  }
}

TEST_F(CpuBasicTest, WhileWithBreakAndContinue) {
  // for i in range(n):
  //   if i % 2 == 0: continue
  //   v = i; steps = 0
  //   while True:
  //     if v == 1: break
  //     v = v // 2 if v % 2 == 0 else 3 * v + 1
  //     steps += 1
  //   out[i] = steps
  Kernel k("collatz");
  k.AddParam(KernelParam::Ndarray("out", kI32, 1));
  IRBuilder b(&k);
  auto* loop = b.RangeFor(b.ConstI32(1), b.NdarrayShape(0, 0));
  {
    auto scope = b.EnterBlock(loop->body());
    Stmt* i = b.LoopIndex(loop);
    Stmt* even =
        b.Binary(BinaryOpKind::kEq,
                 b.Binary(BinaryOpKind::kMod, i, b.ConstI32(2)), b.ConstI32(0));
    auto* skip = b.If(even);
    {
      auto s = b.EnterBlock(skip->true_block());
      b.Continue();
    }
    Stmt* v = b.Alloca(kI32);
    b.LocalStore(v, i);
    Stmt* steps = b.Alloca(kI32);
    auto* loop_while = b.While();
    {
      auto s = b.EnterBlock(loop_while->body());
      auto* done =
          b.If(b.Binary(BinaryOpKind::kEq, b.LocalLoad(v), b.ConstI32(1)));
      {
        auto t = b.EnterBlock(done->true_block());
        b.Break();
      }
      Stmt* cur = b.LocalLoad(v);
      Stmt* is_even = b.Binary(BinaryOpKind::kEq,
                               b.Binary(BinaryOpKind::kMod, cur, b.ConstI32(2)),
                               b.ConstI32(0));
      b.LocalStore(
          v, b.Select(is_even,
                      b.Binary(BinaryOpKind::kFloorDiv, cur, b.ConstI32(2)),
                      b.Add(b.Mul(cur, b.ConstI32(3)), b.ConstI32(1))));
      b.LocalStore(steps, b.Add(b.LocalLoad(steps), b.ConstI32(1)));
    }
    b.GlobalStore(b.NdarrayPtr(0, {i}), b.LocalLoad(steps));
  }
  constexpr int n = 200;
  auto out = Array(kI32, {n});
  for (int i = 0; i < n; ++i)
    Data<int32_t>(out)[i] = -1;
  ASSERT_TRUE(Run(k, {Arg(out)}).ok());
  for (int i = 1; i < n; ++i) {
    int expected = -1;
    if (i % 2 == 1) {
      expected = 0;
      for (int64_t v = i; v != 1; ++expected)
        v = v % 2 == 0 ? v / 2 : 3 * v + 1;
    }
    ASSERT_EQ(Data<int32_t>(out)[i], expected) << i;
  }
}

TEST_F(CpuBasicTest, IfElseSelectsPerElement) {
  Kernel k("clamp_sign");
  k.AddParam(KernelParam::Ndarray("x", kF32, 1));
  IRBuilder b(&k);
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
  {
    auto scope = b.EnterBlock(loop->body());
    Stmt* p = b.NdarrayPtr(0, {b.LoopIndex(loop)});
    Stmt* v = b.GlobalLoad(p);
    auto* branch = b.If(b.Lt(v, b.ConstF32(0)));
    {
      auto t = b.EnterBlock(branch->true_block());
      b.GlobalStore(p, b.ConstF32(-1));
    }
    {
      auto e = b.EnterBlock(branch->false_block());
      b.GlobalStore(p, b.Mul(v, b.ConstF32(2)));
    }
  }
  auto x = Array(kF32, {64});
  for (int i = 0; i < 64; ++i)
    Data<float>(x)[i] = i - 32.5f;
  ASSERT_TRUE(Run(k, {Arg(x)}).ok());
  for (int i = 0; i < 64; ++i) {
    float v = i - 32.5f;
    EXPECT_EQ(Data<float>(x)[i], v < 0 ? -1.0f : 2 * v) << i;
  }
}

TEST_F(CpuBasicTest, StructForOverA2DField) {
  ir::SNodeTree& tree = program_->snodes();
  int dense = tree.AddDense(tree.root(), {0, 1}, {5, 7}).value();
  int grid = tree.AddPlace(dense, kI32, "grid").value();
  Kernel k("fill_grid");
  IRBuilder b(&k, &tree);
  auto* cells = b.StructFor(dense);
  {
    auto scope = b.EnterBlock(cells->body());
    Stmt* i = b.LoopIndex(cells, 0);
    Stmt* j = b.LoopIndex(cells, 1);
    b.GlobalStore(b.FieldPtr(grid, {i, j}), b.Add(b.Mul(i, b.ConstI32(10)), j));
  }
  ASSERT_TRUE(Run(k, {}).ok());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      auto v = program_->ReadField(grid, {i, j});
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(v->as_int(), i * 10 + j);
    }
  }
  EXPECT_FALSE(program_->ReadField(grid, {5, 0}).ok());
}

TEST_F(CpuBasicTest, CompileCacheReusesStructurallyEqualKernels) {
  auto make = [](float scale) {
    auto k = std::make_unique<Kernel>("scale");
    k->AddParam(KernelParam::Ndarray("x", kF32, 1));
    IRBuilder b(k.get());
    auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(0, 0));
    auto scope = b.EnterBlock(loop->body());
    Stmt* p = b.NdarrayPtr(0, {b.LoopIndex(loop)});
    b.GlobalStore(p, b.Mul(b.GlobalLoad(p), b.ConstF32(scale)));
    return k;
  };
  auto a = program_->Compile(*make(2.0f));
  auto again = program_->Compile(*make(2.0f));
  auto other = program_->Compile(*make(3.0f));
  ASSERT_TRUE(a.ok() && again.ok() && other.ok());
  EXPECT_EQ(a->get(), again->get());
  EXPECT_NE(a->get(), other->get());
  EXPECT_EQ(program_->compile_cache_size(), 2);
}

TEST_F(CpuBasicTest, ArgumentMismatchesAreClearErrors) {
  Kernel k("takes_array");
  k.AddParam(KernelParam::Ndarray("x", kF32, 2));
  IRBuilder b(&k);
  b.GlobalStore(b.NdarrayPtr(0, {b.ConstI32(0), b.ConstI32(0)}), b.ConstF32(1));
  auto wrong_rank = Array(kF32, {4});
  absl::Status status = Run(k, {Arg(wrong_rank)});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(GetErrorKind(status), ErrorKind::kType);
  EXPECT_NE(
      status.message().find("kernel 'takes_array' argument 0 ('x') expects an "
                            "ndarray of f32 with 2 dimensions, got an array of "
                            "f32 with 1 dimensions"),
      absl::string_view::npos)
      << status.message();
  EXPECT_FALSE(Run(k, {}).ok());
  EXPECT_FALSE(Run(k, {I32(1)}).ok());
}

}  // namespace
}  // namespace quadrants
