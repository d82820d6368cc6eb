// The arithmetic of generated CPU code, op by op, against C++ references:
// - float math (f32, f64): one kernel `out[i] = op(in[i])` or
//   `out[i] = op(a[i], b[i])` per op and dtype, run over a few hundred inputs
//   spanning the op's domain (signs, zeros, tiny and huge values, inf, NaN);
// - integer ops at every width: wraparound, Python floor division and modulo,
//   division by zero, masked shifts, signed vs unsigned min/max/compare/shr,
//   integer pow, on edge values (MIN, MAX, -1, 0, 1) and random ones;
// - casts: a table of (from, to, value, expected) through `out[0] = cast(x)`,
//   with x a scalar kernel argument or a constant the compiler folds;
// - the type checker's implicit conversions as seen at run time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "quadrants/ir/builder.h"
#include "quadrants/ir/constant.h"
#include "quadrants/ir/op_kinds.h"
#include "quadrants/ir/statements.h"
#include "tests/cpp/program/cpu_test_util.h"

namespace quadrants {
namespace ir {
// Names dtypes in gtest's parameter descriptions (found by ADL).
inline void PrintTo(PrimitiveType type, std::ostream* os) {
  *os << PrimitiveTypeName(type);
}
}  // namespace ir

namespace {

using ir::BinaryOpKind;
using ir::Constant;
using ir::IRBuilder;
using ir::Kernel;
using ir::KernelParam;
using ir::PrimitiveType;
using ir::Stmt;
using ir::UnaryOpKind;
using testing_util::CpuProgramTest;

constexpr PrimitiveType kU1 = PrimitiveType::kU1;
constexpr PrimitiveType kI8 = PrimitiveType::kI8;
constexpr PrimitiveType kI16 = PrimitiveType::kI16;
constexpr PrimitiveType kI32 = PrimitiveType::kI32;
constexpr PrimitiveType kI64 = PrimitiveType::kI64;
constexpr PrimitiveType kU8 = PrimitiveType::kU8;
constexpr PrimitiveType kU16 = PrimitiveType::kU16;
constexpr PrimitiveType kU32 = PrimitiveType::kU32;
constexpr PrimitiveType kU64 = PrimitiveType::kU64;
constexpr PrimitiveType kF16 = PrimitiveType::kF16;
constexpr PrimitiveType kF32 = PrimitiveType::kF32;
constexpr PrimitiveType kF64 = PrimitiveType::kF64;

// ---- C++ type <-> dtype
// ------------------------------------------------------

template <typename T>
constexpr PrimitiveType TypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return kF32;
  else if constexpr (std::is_same_v<T, double>)
    return kF64;
  else if constexpr (std::is_same_v<T, int8_t>)
    return kI8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return kI16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return kI32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return kI64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return kU8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return kU16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return kU32;
  else {
    static_assert(std::is_same_v<T, uint64_t>, "no dtype for this C++ type");
    return kU64;
  }
}
template <typename T>
constexpr PrimitiveType kTypeOf = TypeOf<T>();

// u1 elements are one byte (0 or 1) in an ndarray.
using BoolByte = uint8_t;

template <typename T>
std::string Show(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return absl::StrFormat("%.*g [%a]", std::numeric_limits<T>::max_digits10,
                           static_cast<double>(x), static_cast<double>(x));
  } else if constexpr (std::is_signed_v<T>) {
    return absl::StrCat(static_cast<int64_t>(x));
  } else {
    return absl::StrCat(static_cast<uint64_t>(x));
  }
}

// ---- Float comparison
// ----------------------------------------------------------

template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
BitsOf<T> BitsOfFloat(T x) {
  BitsOf<T> bits;
  std::memcpy(&bits, &x, sizeof(T));
  return bits;
}

// Maps a finite-or-infinite float onto a line of integers on which adjacent
// floats are 1 apart (and -0 == +0).
template <typename T>
int64_t OrderedBits(T x) {
  const BitsOf<T> bits = BitsOfFloat(x);
  const BitsOf<T> sign = BitsOf<T>{1} << (8 * sizeof(T) - 1);
  const int64_t magnitude = static_cast<int64_t>(bits & ~sign);
  return (bits & sign) ? -magnitude : magnitude;
}

// How many representable values apart `a` and `b` are: 0 for equal values
// (and for two NaNs), the maximum if only one is NaN.
template <typename T>
uint64_t UlpDistance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::isnan(a) && std::isnan(b)
               ? 0
               : std::numeric_limits<uint64_t>::max();
  }
  const int64_t x = OrderedBits(a), y = OrderedBits(b);
  // The true difference is below 2^64, so unsigned wraparound gives it.
  return x >= y ? static_cast<uint64_t>(x) - static_cast<uint64_t>(y)
                : static_cast<uint64_t>(y) - static_cast<uint64_t>(x);
}

// How close a float result must be to the C++ reference computed in the
// same precision.
enum class Accuracy {
  // IEEE basic operations (+ - * / sqrt, and 1/sqrt, floor(a/b),
  // a - b*floor(a/b) built from them) and exact ops (neg, abs, floor, ceil)
  // are correctly rounded, so the generated code must produce the very same
  // bits (two NaNs count as equal whatever their payload).
  kExact,
  // min/max: exact, except that LLVM's minnum/maxnum may return either
  // zero when comparing -0 with +0.
  kExactUpToSignOfZeroTies,
  // sin cos tan tanh exp log asin acos pow atan2: the CPU runtime
  // (runtime.cpp) calls __builtin_<fn>f / __builtin_<fn>, i.e. the same C
  // library this test process uses for std::<fn>(float) / std::<fn>(double)
  // -- the JIT resolves the symbol in this very process. The results are
  // therefore expected to be bit-identical; one ulp of slack keeps the test
  // valid should LLVM legitimately evaluate a call differently (e.g. an f32
  // function through its f64 counterpart, which is within 1 ulp of any
  // faithful f32 libm), while still catching wrong functions, wrong
  // precision (f64 math truncated from f32 inputs differs by far more) or
  // swapped arguments.
  kLibm,
};

constexpr uint64_t kLibmMaxUlps = 1;

template <typename T>
bool Matches(Accuracy accuracy, T got, T want) {
  if (std::isnan(got) || std::isnan(want))
    return std::isnan(got) && std::isnan(want);
  switch (accuracy) {
    case Accuracy::kExact:
      return BitsOfFloat(got) == BitsOfFloat(want);
    case Accuracy::kExactUpToSignOfZeroTies:
      return BitsOfFloat(got) == BitsOfFloat(want) || (got == 0 && want == 0);
    case Accuracy::kLibm:
      return UlpDistance(got, want) <= kLibmMaxUlps;
  }
  return false;
}

// Collects mismatches, reporting the first few in full.
class Mismatches {
 public:
  explicit Mismatches(std::string what) : what_(std::move(what)) {}
  ~Mismatches() {
    EXPECT_EQ(count_, 0) << what_ << ": " << count_ << " of " << checked_
                         << " results differ from the reference";
  }
  void Check(bool ok, const std::function<std::string()>& describe) {
    ++checked_;
    if (ok)
      return;
    if (++count_ <= kReported)
      ADD_FAILURE() << what_ << ": " << describe();
  }

 private:
  static constexpr int kReported = 8;
  std::string what_;
  int count_ = 0;
  int checked_ = 0;
};

// ---- Kernels
// -------------------------------------------------------------------

// Computes one element from the loaded input elements.
using ElementFn = std::function<Stmt*(IRBuilder&, const std::vector<Stmt*>&)>;

// for i in range(out.shape[0]): out[i] = fn(in0[i], in1[i], ...)
// The store would convert a value of another type to `output`; callers pass
// the op's own result type, so a mistyped result shows up as wrong values.
std::unique_ptr<Kernel> ElementwiseKernel(
    const std::string& name, const std::vector<PrimitiveType>& inputs,
    PrimitiveType output, const ElementFn& fn) {
  auto k = std::make_unique<Kernel>(name);
  for (size_t j = 0; j < inputs.size(); ++j) {
    k->AddParam(KernelParam::Ndarray(absl::StrCat("in", j), inputs[j], 1));
  }
  const int out = k->AddParam(KernelParam::Ndarray("out", output, 1));
  IRBuilder b(k.get());
  auto* loop = b.RangeFor(b.ConstI32(0), b.NdarrayShape(out, 0));
  auto scope = b.EnterBlock(loop->body());
  Stmt* i = b.LoopIndex(loop);
  std::vector<Stmt*> elements;
  for (size_t j = 0; j < inputs.size(); ++j) {
    elements.push_back(b.GlobalLoad(b.NdarrayPtr(static_cast<int>(j), {i})));
  }
  b.GlobalStore(b.NdarrayPtr(out, {i}), fn(b, elements));
  return k;
}

ElementFn UnaryFn(UnaryOpKind op) {
  return [op](IRBuilder& b, const std::vector<Stmt*>& x) {
    return b.Unary(op, x[0]);
  };
}
ElementFn BinaryFn(BinaryOpKind op) {
  return [op](IRBuilder& b, const std::vector<Stmt*>& x) {
    return b.Binary(op, x[0], x[1]);
  };
}

class CpuMathTest : public CpuProgramTest {
 protected:
  // Runs `fn` elementwise over `inputs` (each a column of Ts) and returns
  // the output column, read back as R from an ndarray of `out_type`.
  template <typename R, typename T>
  std::vector<R> Map(const std::string& name, const ElementFn& fn,
                     const std::vector<std::vector<T>>& inputs,
                     PrimitiveType out_type = kTypeOf<R>) {
    const size_t n = inputs.at(0).size();
    std::vector<std::shared_ptr<Ndarray>> arrays;
    std::vector<KernelArgument> args;
    for (const auto& column : inputs) {
      EXPECT_EQ(column.size(), n);
      arrays.push_back(Array(kTypeOf<T>, {static_cast<int64_t>(n)}));
      std::memcpy(arrays.back()->data(), column.data(), n * sizeof(T));
      args.push_back(Arg(arrays.back()));
    }
    auto out = Array(out_type, {static_cast<int64_t>(n)});
    EXPECT_EQ(out->element_bytes(), static_cast<int64_t>(sizeof(R)));
    args.push_back(Arg(out));
    auto kernel = ElementwiseKernel(
        name, std::vector<PrimitiveType>(inputs.size(), kTypeOf<T>), out_type,
        fn);
    absl::Status status = Run(*kernel, args);
    EXPECT_TRUE(status.ok()) << status;
    std::vector<R> result(n);
    if (status.ok())
      std::memcpy(result.data(), out->data(), n * sizeof(R));
    return result;
  }
};

// ==== Float math
// =================================================================

// Where a unary op's inputs come from.
enum class Domain {
  kReal,      // everything: signs, magnitudes 1e-38..1e38 (f32) / 1e-307..1e308
  kPositive,  // sqrt, rsqrt, log (plus a few negatives, which give NaN)
  kUnitInterval,  // asin, acos: [-1, 1] (plus a few values outside)
  kTrig,          // sin, cos, tan: periods around 0, and large arguments
  kExp,           // exp, tanh: up to past the overflow threshold
};

template <typename T>
std::vector<T> UnaryInputs(Domain domain) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),           T(-0.0),         L::infinity(),
                      -L::infinity(), L::quiet_NaN(),  T(1),
                      T(-1),          L::denorm_min(), L::min()};
  std::mt19937 rng(20240611);
  auto linear = [&](T lo, T hi, int n) {
    for (int i = 0; i < n; ++i)
      v.push_back(lo + (hi - lo) * T(i) / T(n - 1));
  };
  auto uniform = [&](T lo, T hi, int n) {
    std::uniform_real_distribution<T> dist(lo, hi);
    for (int i = 0; i < n; ++i)
      v.push_back(dist(rng));
  };
  // 1.2345 * 10^e over the whole exponent range, with both signs if asked.
  auto magnitudes = [&](bool negative_too) {
    for (int e = L::min_exponent10; e <= L::max_exponent10;
         e += sizeof(T) == 4 ? 2 : 16) {
      const T x = static_cast<T>(1.2345L * std::pow(10.0L, e));
      v.push_back(x);
      if (negative_too)
        v.push_back(-x);
    }
    v.push_back(L::max());
    if (negative_too)
      v.push_back(L::lowest());
  };
  const T pi = static_cast<T>(3.14159265358979323846L);
  switch (domain) {
    case Domain::kReal:
      magnitudes(true);
      linear(T(-10), T(10), 121);  // includes halves: floor/ceil ties
      for (T h : {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997})
        v.push_back(h);
      v.push_back(-L::denorm_min());
      uniform(T(-1000), T(1000), 40);
      break;
    case Domain::kPositive:
      magnitudes(false);
      linear(T(0), T(10), 161);
      uniform(T(0), T(1e4), 40);
      for (T x : {T(-1), T(-1e-30), -L::denorm_min(), L::min() / 2})
        v.push_back(x);
      break;
    case Domain::kUnitInterval:
      linear(T(-1), T(1), 241);
      for (T x :
           {T(1e-20), T(-1e-20), T(1) - L::epsilon() / 2,
            T(-1) + L::epsilon() / 2, T(1) + L::epsilon(), T(-1.5), T(2)}) {
        v.push_back(x);
      }
      break;
    case Domain::kTrig:
      linear(-4 * pi, 4 * pi, 241);
      uniform(T(-1e4), T(1e4), 40);
      for (T x : {pi / 2, -pi / 2, pi, T(1e6), T(-1e6), T(1e20), T(-1e20),
                  T(1e-20)}) {
        v.push_back(x);
      }
      break;
    case Domain::kExp: {
      const T limit =
          sizeof(T) == 4 ? T(110) : T(750);  // past overflow / underflow
      linear(-limit, limit, 221);
      uniform(T(-20), T(20), 60);
      for (T x : {T(1e-30), T(-1e-30), L::epsilon(), -L::epsilon()})
        v.push_back(x);
      break;
    }
  }
  return v;
}

struct FloatUnaryCase {
  UnaryOpKind op;
  Domain domain;
  Accuracy accuracy;
  float (*f32)(float);
  double (*f64)(double);
};

void PrintTo(const FloatUnaryCase& c, std::ostream* os) {
  *os << ir::OpName(c.op);
}

// The reference for `op` in both precisions, from one generic expression.
#define QD_REF1(expr) \
  [](float x) -> float { return expr; }, [](double x) -> double { return expr; }

const std::vector<FloatUnaryCase>& FloatUnaryCases() {
  using A = Accuracy;
  using D = Domain;
  static const auto* cases = new std::vector<FloatUnaryCase>{
      {UnaryOpKind::kNeg, D::kReal, A::kExact, QD_REF1(-x)},
      {UnaryOpKind::kAbs, D::kReal, A::kExact, QD_REF1(std::fabs(x))},
      {UnaryOpKind::kFloor, D::kReal, A::kExact, QD_REF1(std::floor(x))},
      {UnaryOpKind::kCeil, D::kReal, A::kExact, QD_REF1(std::ceil(x))},
      {UnaryOpKind::kSqrt, D::kPositive, A::kExact, QD_REF1(std::sqrt(x))},
      {UnaryOpKind::kRsqrt, D::kPositive, A::kExact, QD_REF1(1 / std::sqrt(x))},
      {UnaryOpKind::kSin, D::kTrig, A::kLibm, QD_REF1(std::sin(x))},
      {UnaryOpKind::kCos, D::kTrig, A::kLibm, QD_REF1(std::cos(x))},
      {UnaryOpKind::kTan, D::kTrig, A::kLibm, QD_REF1(std::tan(x))},
      {UnaryOpKind::kTanh, D::kExp, A::kLibm, QD_REF1(std::tanh(x))},
      {UnaryOpKind::kExp, D::kExp, A::kLibm, QD_REF1(std::exp(x))},
      {UnaryOpKind::kLog, D::kPositive, A::kLibm, QD_REF1(std::log(x))},
      {UnaryOpKind::kAsin, D::kUnitInterval, A::kLibm, QD_REF1(std::asin(x))},
      {UnaryOpKind::kAcos, D::kUnitInterval, A::kLibm, QD_REF1(std::acos(x))},
  };
  return *cases;
}

class CpuFloatUnaryTest : public CpuMathTest,
                          public ::testing::WithParamInterface<
                              std::tuple<FloatUnaryCase, PrimitiveType>> {
 protected:
  template <typename T>
  void Check(const FloatUnaryCase& c, T (*reference)(T)) {
    const std::string name =
        absl::StrCat(ir::OpName(c.op), "_", ir::PrimitiveTypeName(kTypeOf<T>));
    const std::vector<T> in = UnaryInputs<T>(c.domain);
    ASSERT_GE(in.size(), 200u);
    const std::vector<T> out =
        Map<T>(name, UnaryFn(c.op), std::vector<std::vector<T>>{in});
    Mismatches mismatches(name);
    for (size_t i = 0; i < in.size(); ++i) {
      const T want = reference(in[i]);
      mismatches.Check(Matches(c.accuracy, out[i], want), [&] {
        return absl::StrCat(ir::OpName(c.op), "(", Show(in[i]),
                            ") = ", Show(out[i]), ", expected ", Show(want),
                            " (", UlpDistance(out[i], want), " ulp apart)");
      });
    }
  }
};

TEST_P(CpuFloatUnaryTest, MatchesTheCxxReference) {
  const auto& [c, dtype] = GetParam();
  if (dtype == kF32) {
    Check<float>(c, c.f32);
  } else {
    Check<double>(c, c.f64);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, CpuFloatUnaryTest,
    ::testing::Combine(::testing::ValuesIn(FloatUnaryCases()),
                       ::testing::Values(kF32, kF64)),
    [](const auto& info) {
      return absl::StrCat(ir::OpName(std::get<0>(info.param).op), "_",
                          ir::PrimitiveTypeName(std::get<1>(info.param)));
    });

template <typename T>
T FloorDivRef(T a, T b) {
  return std::floor(a / b);
}
template <typename T>
T FloatModRef(T a, T b) {
  // The language's definition: a - b * floor(a / b). Kept in separate
  // statements so the C++ compiler cannot contract it into an fma (which
  // the generated code does not do either: its IR carries no fast-math or
  // contract flags).
  const T product = b * std::floor(a / b);
  return a - product;
}

struct FloatBinaryCase {
  BinaryOpKind op;
  Accuracy accuracy;
  float (*f32)(float, float);
  double (*f64)(double, double);
};

void PrintTo(const FloatBinaryCase& c, std::ostream* os) {
  *os << ir::OpName(c.op);
}

#define QD_REF2(expr)                             \
  [](float a, float b) -> float { return expr; }, \
      [](double a, double b) -> double { return expr; }

const std::vector<FloatBinaryCase>& FloatBinaryCases() {
  using A = Accuracy;
  static const auto* cases = new std::vector<FloatBinaryCase>{
      {BinaryOpKind::kAdd, A::kExact, QD_REF2(a + b)},
      {BinaryOpKind::kSub, A::kExact, QD_REF2(a - b)},
      {BinaryOpKind::kMul, A::kExact, QD_REF2(a * b)},
      {BinaryOpKind::kDiv, A::kExact, QD_REF2(a / b)},
      {BinaryOpKind::kFloorDiv, A::kExact, QD_REF2(FloorDivRef(a, b))},
      {BinaryOpKind::kMod, A::kExact, QD_REF2(FloatModRef(a, b))},
      {BinaryOpKind::kMin, A::kExactUpToSignOfZeroTies,
       QD_REF2(std::fmin(a, b))},
      {BinaryOpKind::kMax, A::kExactUpToSignOfZeroTies,
       QD_REF2(std::fmax(a, b))},
      {BinaryOpKind::kPow, A::kLibm, QD_REF2(std::pow(a, b))},
      {BinaryOpKind::kAtan2, A::kLibm, QD_REF2(std::atan2(a, b))},
  };
  return *cases;
}

// Operand pairs: every pair of a set of special and ordinary values, random
// pairs, and small integer-valued pairs (floordiv / mod / pow territory).
template <typename T>
std::pair<std::vector<T>, std::vector<T>> BinaryInputs() {
  using L = std::numeric_limits<T>;
  const std::vector<T> special = {T(0),
                                  T(-0.0),
                                  T(1),
                                  T(-1),
                                  T(0.5),
                                  T(-0.5),
                                  T(2),
                                  T(-2),
                                  T(3),
                                  T(-3),
                                  T(0.1),
                                  T(-7.25),
                                  T(10),
                                  T(1e-3),
                                  T(1e10),
                                  T(-1e10),
                                  T(123.456),
                                  T(1e30),
                                  L::denorm_min(),
                                  L::max(),
                                  L::infinity(),
                                  -L::infinity(),
                                  L::quiet_NaN()};
  std::vector<T> a, b;
  for (T x : special) {
    for (T y : special) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<T> real(T(-100), T(100));
  std::uniform_int_distribution<int> small(-20, 20);
  for (int i = 0; i < 300; ++i) {
    a.push_back(real(rng));
    b.push_back(real(rng));
  }
  for (int i = 0; i < 100; ++i) {
    a.push_back(T(small(rng)));
    b.push_back(T(small(rng) / 3));
  }
  return {a, b};
}

class CpuFloatBinaryTest : public CpuMathTest,
                           public ::testing::WithParamInterface<
                               std::tuple<FloatBinaryCase, PrimitiveType>> {
 protected:
  template <typename T>
  void Check(const FloatBinaryCase& c, T (*reference)(T, T)) {
    const std::string name =
        absl::StrCat(ir::OpName(c.op), "_", ir::PrimitiveTypeName(kTypeOf<T>));
    const auto inputs = BinaryInputs<T>();
    const std::vector<T>& a = inputs.first;
    const std::vector<T>& b = inputs.second;
    const std::vector<T> out =
        Map<T>(name, BinaryFn(c.op), std::vector<std::vector<T>>{a, b});
    Mismatches mismatches(name);
    for (size_t i = 0; i < a.size(); ++i) {
      const T want = reference(a[i], b[i]);
      mismatches.Check(Matches(c.accuracy, out[i], want), [&] {
        return absl::StrCat(ir::OpName(c.op), "(", Show(a[i]), ", ", Show(b[i]),
                            ") = ", Show(out[i]), ", expected ", Show(want),
                            " (", UlpDistance(out[i], want), " ulp apart)");
      });
    }
  }
};

TEST_P(CpuFloatBinaryTest, MatchesTheCxxReference) {
  const auto& [c, dtype] = GetParam();
  if (dtype == kF32) {
    Check<float>(c, c.f32);
  } else {
    Check<double>(c, c.f64);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, CpuFloatBinaryTest,
    ::testing::Combine(::testing::ValuesIn(FloatBinaryCases()),
                       ::testing::Values(kF32, kF64)),
    [](const auto& info) {
      return absl::StrCat(ir::OpName(std::get<0>(info.param).op), "_",
                          ir::PrimitiveTypeName(std::get<1>(info.param)));
    });

// Comparisons of every kind, each a kernel producing u1 (0 or 1 bytes).
struct ComparisonCase {
  BinaryOpKind op;
  bool (*ref)(double, double);  // exact for f32 operands too
};

const std::vector<ComparisonCase>& ComparisonCases() {
  static const auto* cases = new std::vector<ComparisonCase>{
      {BinaryOpKind::kLt, [](double a, double b) { return a < b; }},
      {BinaryOpKind::kLe, [](double a, double b) { return a <= b; }},
      {BinaryOpKind::kGt, [](double a, double b) { return a > b; }},
      {BinaryOpKind::kGe, [](double a, double b) { return a >= b; }},
      {BinaryOpKind::kEq, [](double a, double b) { return a == b; }},
      {BinaryOpKind::kNe,
       [](double a, double b) { return a != b; }},  // true for NaN
  };
  return *cases;
}

class CpuFloatCompareTest
    : public CpuMathTest,
      public ::testing::WithParamInterface<PrimitiveType> {
 protected:
  template <typename T>
  void CheckAll() {
    const auto inputs = BinaryInputs<T>();
    const std::vector<T>& a = inputs.first;
    const std::vector<T>& b = inputs.second;
    for (const ComparisonCase& c : ComparisonCases()) {
      const std::string name = absl::StrCat(ir::OpName(c.op), "_",
                                            ir::PrimitiveTypeName(kTypeOf<T>));
      const auto out = Map<BoolByte>(name, BinaryFn(c.op),
                                     std::vector<std::vector<T>>{a, b}, kU1);
      Mismatches mismatches(name);
      for (size_t i = 0; i < a.size(); ++i) {
        const BoolByte want = c.ref(a[i], b[i]) ? 1 : 0;
        mismatches.Check(out[i] == want, [&] {
          return absl::StrCat(ir::OpName(c.op), "(", Show(a[i]), ", ",
                              Show(b[i]), ") = ", int{out[i]}, ", expected ",
                              int{want});
        });
      }
    }
  }
};

TEST_P(CpuFloatCompareTest, OrderedExceptNotEqual) {
  if (GetParam() == kF32) {
    CheckAll<float>();
  } else {
    CheckAll<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuFloatCompareTest,
                         ::testing::Values(kF32, kF64), [](const auto& info) {
                           return std::string(
                               ir::PrimitiveTypeName(info.param));
                         });

// ==== Integer ops
// ================================================================ References
// compute in 64 (or 128) bits and wrap to the width explicitly.

template <typename T>
T Wrap(uint64_t bits) {
  // Conversion to an unsigned type is modular; to a signed one it is modular
  // with clang (and since C++20 by definition).
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(bits));
}
template <typename T>
uint64_t Bits(T x) {
  return static_cast<uint64_t>(static_cast<int64_t>(x));  // sign-/zero-extends
}

template <typename T>
struct IntRef {
  static constexpr int kWidth = 8 * sizeof(T);

  static T Add(T a, T b) { return Wrap<T>(Bits(a) + Bits(b)); }
  static T Sub(T a, T b) { return Wrap<T>(Bits(a) - Bits(b)); }
  static T Mul(T a, T b) { return Wrap<T>(Bits(a) * Bits(b)); }
  static T Neg(T a) { return Wrap<T>(0 - Bits(a)); }
  static T Abs(T a) {
    if constexpr (std::is_signed_v<T>)
      return a < 0 ? Neg(a) : a;
    return a;
  }
  static T BitNot(T a) { return Wrap<T>(~Bits(a)); }
  static T And(T a, T b) { return Wrap<T>(Bits(a) & Bits(b)); }
  static T Or(T a, T b) { return Wrap<T>(Bits(a) | Bits(b)); }
  static T Xor(T a, T b) { return Wrap<T>(Bits(a) ^ Bits(b)); }
  static T Min(T a, T b) { return std::min(a, b); }
  static T Max(T a, T b) { return std::max(a, b); }

  // Python's a // b and a % b on unbounded integers, then wrapped (only
  // MIN // -1 needs it); a divisor of 0 gives 0.
  static T FloorDiv(T a, T b) {
    if (b == 0)
      return 0;
    const __int128 x = a, y = b;
    __int128 q = x / y;
    if (x % y != 0 && ((x < 0) != (y < 0)))
      --q;
    return Wrap<T>(static_cast<uint64_t>(q));
  }
  static T Mod(T a, T b) {
    if (b == 0)
      return 0;
    const __int128 x = a, y = b;
    __int128 r = x % y;
    if (r != 0 && ((r < 0) != (y < 0)))
      r += y;
    return Wrap<T>(static_cast<uint64_t>(r));
  }

  // The shift amount is taken modulo the width (its low bits).
  static int Amount(T b) { return static_cast<int>(Bits(b) & (kWidth - 1)); }
  static T Shl(T a, T b) { return Wrap<T>(Bits(a) << Amount(b)); }
  static T Shr(T a, T b) {
    // Arithmetic for signed types (sign-extended bits), logical for unsigned.
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<int64_t>(a) >> Amount(b));
    } else {
      return static_cast<T>(Bits(a) >> Amount(b));
    }
  }

  // a ** b modulo 2^width; a negative exponent gives the integer part of
  // the real result: 1 for a == 1, +-1 for a == -1, else 0.
  static T Pow(T a, T b) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) {
        if (a == 1)
          return 1;
        if (a == -1)
          return (Bits(b) & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    uint64_t result = 1, base = Bits(a);
    for (uint64_t e = Bits(b); e != 0; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return Wrap<T>(result);
  }
};

// MIN, MAX, around 0 and the middle, and a few random values.
template <typename T>
std::vector<T> IntEdgeValues() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {L::min(),
                      T(L::min() + 1),
                      T(0),
                      T(1),
                      T(2),
                      T(3),
                      T(7),
                      T(L::max() / 2),
                      T(L::max() / 2 + 1),
                      T(L::max() - 1),
                      L::max()};
  if constexpr (std::is_signed_v<T>) {
    for (T x : {T(-1), T(-2), T(-3), T(-7), T(L::min() / 2)})
      v.push_back(x);
  }
  std::mt19937_64 rng(sizeof(T) * 1000 + std::is_signed_v<T>);
  for (int i = 0; i < 6; ++i)
    v.push_back(Wrap<T>(rng()));
  return v;
}

// Every (a, b) with a from `as` and b from `bs`.
template <typename T>
std::vector<std::vector<T>> AllPairs(const std::vector<T>& as,
                                     const std::vector<T>& bs) {
  std::vector<std::vector<T>> columns(2);
  for (T x : as) {
    for (T y : bs) {
      columns[0].push_back(x);
      columns[1].push_back(y);
    }
  }
  return columns;
}

template <typename T>
class CpuIntMathTest : public CpuMathTest {
 protected:
  using Ref = IntRef<T>;

  // Runs `op` elementwise over the operand columns and checks every result
  // against `reference`.
  template <typename R, typename RefFn>
  void CheckBinary(BinaryOpKind op, const std::vector<std::vector<T>>& pairs,
                   RefFn reference, PrimitiveType out_type = kTypeOf<T>) {
    const std::string name =
        absl::StrCat(ir::OpName(op), "_", ir::PrimitiveTypeName(kTypeOf<T>));
    const auto out = this->template Map<R>(name, BinaryFn(op), pairs, out_type);
    const auto& a = pairs[0];
    const auto& b = pairs[1];
    Mismatches mismatches(name);
    for (size_t i = 0; i < a.size(); ++i) {
      const R want = static_cast<R>(reference(a[i], b[i]));
      mismatches.Check(out[i] == want, [&] {
        return absl::StrCat(ir::OpName(op), "(", Show(a[i]), ", ", Show(b[i]),
                            ") = ", Show(out[i]), ", expected ", Show(want));
      });
    }
  }

  void CheckBinary(BinaryOpKind op, T (*reference)(T, T)) {
    const auto edges = IntEdgeValues<T>();
    CheckBinary<T>(op, AllPairs(edges, edges), reference);
  }

  void CheckUnary(UnaryOpKind op, T (*reference)(T)) {
    const std::string name =
        absl::StrCat(ir::OpName(op), "_", ir::PrimitiveTypeName(kTypeOf<T>));
    const auto in = IntEdgeValues<T>();
    const auto out = this->template Map<T>(name, UnaryFn(op),
                                           std::vector<std::vector<T>>{in});
    Mismatches mismatches(name);
    for (size_t i = 0; i < in.size(); ++i) {
      mismatches.Check(out[i] == reference(in[i]), [&] {
        return absl::StrCat(ir::OpName(op), "(", Show(in[i]),
                            ") = ", Show(out[i]), ", expected ",
                            Show(reference(in[i])));
      });
    }
  }
};

using IntTypes = ::testing::Types<int8_t, int16_t, int32_t, int64_t, uint8_t,
                                  uint16_t, uint32_t, uint64_t>;

struct IntTypeNames {
  template <typename T>
  static std::string GetName(int) {
    return std::string(ir::PrimitiveTypeName(kTypeOf<T>));
  }
};

TYPED_TEST_SUITE(CpuIntMathTest, IntTypes, IntTypeNames);

TYPED_TEST(CpuIntMathTest, AddSubMulWrapAround) {
  using Ref = typename TestFixture::Ref;
  this->CheckBinary(BinaryOpKind::kAdd, &Ref::Add);
  this->CheckBinary(BinaryOpKind::kSub, &Ref::Sub);
  this->CheckBinary(BinaryOpKind::kMul, &Ref::Mul);
}

TYPED_TEST(CpuIntMathTest,
           FloorDivAndModFollowPythonAndGiveZeroForZeroDivisors) {
  using Ref = typename TestFixture::Ref;
  this->CheckBinary(BinaryOpKind::kFloorDiv, &Ref::FloorDiv);
  this->CheckBinary(BinaryOpKind::kMod, &Ref::Mod);
}

TYPED_TEST(CpuIntMathTest, FloorDivAndModOnSmallOperandsOfEverySign) {
  // The classic table: 7 // -2 == -4, -7 % 2 == 1, 7 % -2 == -1, ...
  using T = TypeParam;
  using Ref = typename TestFixture::Ref;
  std::vector<T> values;
  for (int x = std::is_signed_v<T> ? -9 : 0; x <= 9; ++x)
    values.push_back(static_cast<T>(x));
  const auto pairs = AllPairs(values, values);
  this->template CheckBinary<T>(BinaryOpKind::kFloorDiv, pairs, &Ref::FloorDiv);
  this->template CheckBinary<T>(BinaryOpKind::kMod, pairs, &Ref::Mod);
  if constexpr (std::is_signed_v<T>) {
    // Spot checks, independent of the reference implementation.
    EXPECT_EQ(Ref::FloorDiv(T(7), T(-2)), T(-4));
    EXPECT_EQ(Ref::FloorDiv(T(-7), T(2)), T(-4));
    EXPECT_EQ(Ref::Mod(T(-7), T(2)), T(1));
    EXPECT_EQ(Ref::Mod(T(7), T(-2)), T(-1));
    EXPECT_EQ(Ref::FloorDiv(std::numeric_limits<T>::min(), T(-1)),
              std::numeric_limits<T>::min());
  }
}

TYPED_TEST(CpuIntMathTest, ShiftsMaskTheAmountAndShrFollowsSignedness) {
  using T = TypeParam;
  using Ref = typename TestFixture::Ref;
  constexpr int width = Ref::kWidth;
  std::vector<T> amounts;
  for (int s = 0; s <= width + 2; ++s)
    amounts.push_back(static_cast<T>(s));
  for (T s : {T(2 * width - 1), T(-1), T(-width), std::numeric_limits<T>::max(),
              std::numeric_limits<T>::min()}) {
    amounts.push_back(s);
  }
  const auto pairs = AllPairs(IntEdgeValues<T>(), amounts);
  this->template CheckBinary<T>(BinaryOpKind::kShl, pairs, &Ref::Shl);
  this->template CheckBinary<T>(BinaryOpKind::kShr, pairs, &Ref::Shr);
  const T min = std::numeric_limits<T>::min(),
          max = std::numeric_limits<T>::max();
  if constexpr (std::is_signed_v<T>) {
    EXPECT_EQ(Ref::Shr(min, T(width - 1)), T(-1));
    EXPECT_EQ(Ref::Shr(T(-8), T(1)), T(-4));
  } else {
    EXPECT_EQ(Ref::Shr(max, T(width - 1)), T(1));
  }
  EXPECT_EQ(Ref::Shl(T(1), T(width)), T(1));  // amount width & (width-1) == 0
}

TYPED_TEST(CpuIntMathTest, BitwiseOps) {
  using Ref = typename TestFixture::Ref;
  this->CheckBinary(BinaryOpKind::kBitAnd, &Ref::And);
  this->CheckBinary(BinaryOpKind::kBitOr, &Ref::Or);
  this->CheckBinary(BinaryOpKind::kBitXor, &Ref::Xor);
  this->CheckUnary(UnaryOpKind::kBitNot, &Ref::BitNot);
}

TYPED_TEST(CpuIntMathTest, NegAndAbsWrapAround) {
  using Ref = typename TestFixture::Ref;
  this->CheckUnary(UnaryOpKind::kNeg, &Ref::Neg);
  this->CheckUnary(UnaryOpKind::kAbs, &Ref::Abs);  // abs(MIN) == MIN
}

TYPED_TEST(CpuIntMathTest, PowBySquaringWrapsAndNegativeExponentsTruncate) {
  using T = TypeParam;
  using Ref = typename TestFixture::Ref;
  std::vector<T> bases = {T(0),
                          T(1),
                          T(2),
                          T(3),
                          T(10),
                          std::numeric_limits<T>::max(),
                          std::numeric_limits<T>::min()};
  std::vector<T> exponents;
  for (int e = 0; e <= Ref::kWidth + 2; ++e)
    exponents.push_back(static_cast<T>(e));
  exponents.push_back(std::numeric_limits<T>::max());
  if constexpr (std::is_signed_v<T>) {
    for (T x : {T(-1), T(-2), T(-3)})
      bases.push_back(x);
    for (T x : {T(-1), T(-2), T(-3), std::numeric_limits<T>::min()})
      exponents.push_back(x);
  }
  std::mt19937_64 rng(99);
  for (int i = 0; i < 4; ++i) {
    bases.push_back(Wrap<T>(rng()));
    exponents.push_back(Wrap<T>(rng()));
  }
  this->template CheckBinary<T>(BinaryOpKind::kPow, AllPairs(bases, exponents),
                                &Ref::Pow);
  EXPECT_EQ(Ref::Pow(T(3), T(4)), T(81));
  EXPECT_EQ(Ref::Pow(T(2), T(Ref::kWidth)), T(0));
}

TYPED_TEST(CpuIntMathTest, MinMaxFollowSignedness) {
  using Ref = typename TestFixture::Ref;
  this->CheckBinary(BinaryOpKind::kMin, &Ref::Min);
  this->CheckBinary(BinaryOpKind::kMax, &Ref::Max);
}

TYPED_TEST(CpuIntMathTest, ComparisonsFollowSignedness) {
  using T = TypeParam;
  const auto edges = IntEdgeValues<T>();
  const auto pairs = AllPairs(edges, edges);
  const std::vector<std::pair<BinaryOpKind, bool (*)(T, T)>> cases = {
      {BinaryOpKind::kLt, [](T a, T b) { return a < b; }},
      {BinaryOpKind::kLe, [](T a, T b) { return a <= b; }},
      {BinaryOpKind::kGt, [](T a, T b) { return a > b; }},
      {BinaryOpKind::kGe, [](T a, T b) { return a >= b; }},
      {BinaryOpKind::kEq, [](T a, T b) { return a == b; }},
      {BinaryOpKind::kNe, [](T a, T b) { return a != b; }},
  };
  for (const auto& [op, reference] : cases) {
    this->template CheckBinary<BoolByte>(op, pairs, reference, kU1);
  }
}

// ==== Casts
// ======================================================================

Constant Int(PrimitiveType t, int64_t v) {
  return Constant::Int(t, v);
}
Constant U64(uint64_t v) {
  return Constant::Int(kU64, static_cast<int64_t>(v));
}
Constant Flt(PrimitiveType t, double v) {
  return Constant::Float(t, v);
}
Constant Bool(bool v) {
  return Constant::Bool(v);
}

struct CastCase {
  Constant from;  // its type is the source type
  PrimitiveType to;
  Constant expected;  // of type `to`
  const char* what;
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

const std::vector<CastCase>& CastCases() {
  static const auto* cases = new std::vector<CastCase>{
      // float -> int: truncation toward zero, saturation, NaN -> 0.
      {Flt(kF32, 3.9), kI32, Int(kI32, 3), "truncates toward zero"},
      {Flt(kF32, -3.9), kI32, Int(kI32, -3), "truncates toward zero"},
      {Flt(kF32, -0.5), kI32, Int(kI32, 0), "truncates toward zero"},
      {Flt(kF32, 2147483648.0), kI32, Int(kI32, INT32_MAX), "saturates at MAX"},
      {Flt(kF32, -2147483648.0), kI32, Int(kI32, INT32_MIN), "MIN is exact"},
      {Flt(kF32, -3e9), kI32, Int(kI32, INT32_MIN), "saturates at MIN"},
      {Flt(kF32, kInf), kI32, Int(kI32, INT32_MAX), "inf saturates"},
      {Flt(kF32, -kInf), kI32, Int(kI32, INT32_MIN), "-inf saturates"},
      {Flt(kF32, kNaN), kI32, Int(kI32, 0), "NaN gives 0"},
      {Flt(kF32, 255.9), kU8, Int(kU8, 255), "truncates"},
      {Flt(kF32, 256), kU8, Int(kU8, 255), "saturates at MAX"},
      {Flt(kF32, -0.9), kU8, Int(kU8, 0), "truncates to 0"},
      {Flt(kF32, -1), kU8, Int(kU8, 0), "negative saturates at 0"},
      {Flt(kF32, kNaN), kU8, Int(kU8, 0), "NaN gives 0"},
      {Flt(kF32, 1e20), kU64, U64(kU64Max), "saturates at MAX"},
      {Flt(kF32, 1e19), kU64, U64(9999999980506447872ull),
       "large but in range"},
      {Flt(kF64, 127.9), kI8, Int(kI8, 127), "truncates"},
      {Flt(kF64, 128), kI8, Int(kI8, 127), "saturates at MAX"},
      {Flt(kF64, -128.99), kI8, Int(kI8, -128), "truncates to MIN"},
      {Flt(kF64, -129), kI8, Int(kI8, -128), "saturates at MIN"},
      {Flt(kF64, 40000), kI16, Int(kI16, 32767), "saturates at MAX"},
      {Flt(kF64, -32768.5), kI16, Int(kI16, -32768), "truncates to MIN"},
      {Flt(kF64, 65535.5), kU16, Int(kU16, 65535), "truncates"},
      {Flt(kF64, 4294967295.9), kU32, Int(kU32, 4294967295), "truncates"},
      {Flt(kF64, 4294967296.0), kU32, Int(kU32, 4294967295),
       "saturates at MAX"},
      {Flt(kF64, 0x1p62), kI64, Int(kI64, int64_t{1} << 62), "exact"},
      {Flt(kF64, 9.3e18), kI64, Int(kI64, kI64Max), "saturates at MAX"},
      {Flt(kF64, -0x1p63), kI64, Int(kI64, kI64Min), "MIN is exact"},
      {Flt(kF64, -9.3e18), kI64, Int(kI64, kI64Min), "saturates at MIN"},
      {Flt(kF64, kNaN), kI64, Int(kI64, 0), "NaN gives 0"},
      {Flt(kF64, 0x1p63), kU64, U64(uint64_t{1} << 63), "exact"},
      {Flt(kF64, 0x1p64), kU64, U64(kU64Max), "saturates at MAX"},
      {Flt(kF64, -5), kU64, U64(0), "negative saturates at 0"},
      {Flt(kF64, -kInf), kU64, U64(0), "-inf saturates at 0"},
      {Flt(kF16, -2.5), kI32, Int(kI32, -2), "f16 truncates"},
      {Flt(kF16, 65504), kI32, Int(kI32, 65504), "largest f16"},
      {Flt(kF16, 300), kI8, Int(kI8, 127), "f16 saturates"},
      // int -> float: round to nearest even; unsigned sources are unsigned.
      {Int(kI32, 16777217), kF32, Flt(kF32, 16777216), "2^24+1 rounds to even"},
      {Int(kI32, 16777219), kF32, Flt(kF32, 16777220), "2^24+3 rounds to even"},
      {Int(kI32, INT32_MIN), kF32, Flt(kF32, -0x1p31), "MIN"},
      {Int(kI64, (int64_t{1} << 53) + 1), kF64, Flt(kF64, 0x1p53),
       "2^53+1 rounds to even"},
      {Int(kI64, kI64Min), kF64, Flt(kF64, -0x1p63), "MIN"},
      {Int(kI64, kI64Max), kF32, Flt(kF32, 0x1p63), "MAX rounds up"},
      // 2^60 + 2^36 + 1 lies just above the midpoint of two f32 values: a
      // direct conversion rounds up; going through f64 first loses the +1
      // and then ties to even, down to 2^60.
      {Int(kI64, (int64_t{1} << 60) + (int64_t{1} << 36) + 1), kF32,
       Flt(kF32, 0x1p60 + 0x1p37), "rounded once, not via f64"},
      {U64((uint64_t{1} << 63) + (uint64_t{1} << 39) + 1), kF32,
       Flt(kF32, 0x1p63 + 0x1p40), "rounded once, not via f64"},
      {U64(kU64Max), kF32, Flt(kF32, 0x1p64), "u64 MAX is unsigned"},
      {U64(kU64Max), kF64, Flt(kF64, 0x1p64), "u64 MAX is unsigned"},
      {Int(kU32, 4294967295), kF32, Flt(kF32, 0x1p32), "u32 MAX is unsigned"},
      {Int(kU32, 4294967295), kF64, Flt(kF64, 4294967295),
       "u32 MAX is exact in f64"},
      {Int(kU8, 255), kF32, Flt(kF32, 255), "u8 is unsigned"},
      {Int(kU16, 65535), kF64, Flt(kF64, 65535), "u16 is unsigned"},
      {Int(kI8, -1), kF64, Flt(kF64, -1), "i8 is signed"},
      {Int(kI16, -32768), kF32, Flt(kF32, -32768), "i16 is signed"},
      {Int(kI32, 65504), kF16, Flt(kF16, 65504), "largest f16"},
      {Int(kI32, 2049), kF16, Flt(kF16, 2048), "2049 rounds to even in f16"},
      {Int(kI32, 70000), kF16, Flt(kF16, kInf), "overflows f16"},
      // int -> int: narrowing wraps.
      {Int(kI32, 300), kI8, Int(kI8, 44), "wraps"},
      {Int(kI32, -129), kI8, Int(kI8, 127), "wraps"},
      {Int(kI32, 0x12345678), kI16, Int(kI16, 0x5678), "keeps the low bits"},
      {Int(kI32, -1), kU8, Int(kU8, 255), "wraps"},
      {Int(kI64, 0x100000001), kI32, Int(kI32, 1), "keeps the low bits"},
      {Int(kI64, -1), kU32, Int(kU32, 4294967295), "wraps"},
      {Int(kU32, 4294967295), kI32, Int(kI32, -1), "reinterprets"},
      {U64(uint64_t{1} << 63), kI64, Int(kI64, kI64Min), "reinterprets"},
      {Int(kI16, -32768), kU16, Int(kU16, 32768), "reinterprets"},
      {Int(kU16, 0xABCD), kU8, Int(kU8, 0xCD), "keeps the low bits"},
      // int -> int: widening extends by the source's signedness.
      {Int(kI8, -1), kI32, Int(kI32, -1), "sign-extends"},
      {Int(kI8, -128), kU32, Int(kU32, 4294967168),
       "sign-extends into unsigned"},
      {Int(kI16, -2), kI64, Int(kI64, -2), "sign-extends"},
      {Int(kI32, -1), kU64, U64(kU64Max), "sign-extends into unsigned"},
      {Int(kU8, 255), kI32, Int(kI32, 255), "zero-extends"},
      {Int(kU8, 200), kI64, Int(kI64, 200), "zero-extends"},
      {Int(kU16, 65535), kI32, Int(kI32, 65535), "zero-extends"},
      {Int(kU32, 4294967295), kI64, Int(kI64, 4294967295), "zero-extends"},
      {Int(kU32, 0x80000000), kU64, U64(0x80000000), "zero-extends"},
      // float <-> float.
      {Flt(kF64, 0.1), kF32, Flt(kF32, 0.1f), "rounds to nearest"},
      {Flt(kF64, 1 + 0x1p-24), kF32, Flt(kF32, 1), "tie rounds to even (down)"},
      {Flt(kF64, 1 + 3 * 0x1p-24), kF32, Flt(kF32, 1 + 0x1p-22),
       "tie rounds to even (up)"},
      {Flt(kF64, 1e300), kF32, Flt(kF32, kInf), "overflows to inf"},
      {Flt(kF64, -1e300), kF32, Flt(kF32, -kInf), "overflows to -inf"},
      {Flt(kF64, 1e-50), kF32, Flt(kF32, 0), "underflows to 0"},
      {Flt(kF64, -1e-50), kF32, Flt(kF32, -0.0), "underflows to -0"},
      {Flt(kF64, 1e-45), kF32, Flt(kF32, 0x1p-149),
       "rounds to the smallest subnormal"},
      {Flt(kF64, kNaN), kF32, Flt(kF32, kNaN), "NaN stays NaN"},
      {Flt(kF32, 0.1f), kF64, Flt(kF64, static_cast<double>(0.1f)),
       "widens exactly"},
      {Flt(kF32, -kInf), kF64, Flt(kF64, -kInf), "widens exactly"},
      {Flt(kF32, 0x1p-149), kF64, Flt(kF64, 0x1p-149),
       "subnormal widens exactly"},
      {Flt(kF32, 1.0 / 3), kF16, Flt(kF16, 0.333251953125),
       "rounds to nearest"},
      {Flt(kF32, 65520), kF16, Flt(kF16, kInf), "overflows f16"},
      {Flt(kF64, 0x1p-25), kF16, Flt(kF16, 0), "tie with 0 rounds to even"},
      {Flt(kF16, 0x1p-24), kF64, Flt(kF64, 0x1p-24),
       "f16 subnormal widens exactly"},
      // Anything -> u1 is (x != 0).
      {Int(kI32, 0), kU1, Bool(false), "zero"},
      {Int(kI32, 5), kU1, Bool(true), "nonzero"},
      {Int(kI32, -1), kU1, Bool(true), "nonzero"},
      {Int(kI64, int64_t{1} << 32), kU1, Bool(true), "nonzero (not truncated)"},
      {Int(kU8, 0), kU1, Bool(false), "zero"},
      {Int(kI8, -128), kU1, Bool(true), "nonzero"},
      {U64(uint64_t{1} << 63), kU1, Bool(true), "nonzero"},
      {Flt(kF32, 0), kU1, Bool(false), "zero"},
      {Flt(kF32, -0.0), kU1, Bool(false), "negative zero is zero"},
      {Flt(kF32, 0.1), kU1, Bool(true), "nonzero (not truncated)"},
      {Flt(kF64, 1e-300), kU1, Bool(true), "tiny is nonzero"},
      {Flt(kF32, kNaN), kU1, Bool(true), "NaN != 0"},
      {Flt(kF16, 0.5), kU1, Bool(true), "nonzero"},
      // u1 -> anything: false/true are 0/1.
      {Bool(true), kI32, Int(kI32, 1), "true is 1, not -1"},
      {Bool(true), kI8, Int(kI8, 1), "true is 1"},
      {Bool(true), kU64, U64(1), "true is 1"},
      {Bool(false), kI64, Int(kI64, 0), "false is 0"},
      {Bool(true), kF32, Flt(kF32, 1), "true is 1.0, not -1.0"},
      {Bool(true), kF64, Flt(kF64, 1), "true is 1.0"},
  };
  return *cases;
}

// Where the kernel's operand comes from.
enum class CastSource {
  kArgument,  // a scalar kernel argument: converted by generated code
  kConstant,  // a constant: folded at compile time by the simplifier
};

void PrintTo(CastSource source, std::ostream* os) {
  *os << (source == CastSource::kArgument ? "argument" : "constant");
}

bool SameValue(const Constant& a, const Constant& b) {
  if (a.is_float() && b.is_float() && std::isnan(a.as_float()) &&
      std::isnan(b.as_float())) {
    return a.type() == b.type();
  }
  return a == b;
}

class CpuCastTest
    : public CpuMathTest,
      public ::testing::WithParamInterface<std::tuple<size_t, CastSource>> {};

TEST_P(CpuCastTest, ConvertsAsSpecified) {
  const auto& [row, source] = GetParam();
  const CastCase& c = CastCases()[row];
  SCOPED_TRACE(absl::StrCat(ir::PrimitiveTypeName(c.from.type()), " ",
                            c.from.ToString(), " -> ",
                            ir::PrimitiveTypeName(c.to), ": ", c.what));
  ASSERT_EQ(c.expected.type(), c.to);
  // out[0] = cast(x, to)
  Kernel k("cast");
  if (source == CastSource::kArgument)
    k.AddParam(KernelParam::Scalar("x", c.from.type()));
  const int out_arg = k.AddParam(KernelParam::Ndarray("out", c.to, 1));
  IRBuilder b(&k);
  Stmt* x = source == CastSource::kArgument
                ? static_cast<Stmt*>(b.ArgLoad(0))
                : static_cast<Stmt*>(b.Const(c.from));
  b.GlobalStore(b.NdarrayPtr(out_arg, {b.ConstI32(0)}), b.Cast(x, c.to));

  auto out = Array(c.to, {1});
  std::vector<KernelArgument> args;
  if (source == CastSource::kArgument)
    args.push_back(KernelArgument::Scalar(c.from));
  args.push_back(Arg(out));
  const absl::Status status = Run(k, args);
  ASSERT_TRUE(status.ok()) << status;
  absl::StatusOr<Constant> got = out->Read({0});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameValue(*got, c.expected))
      << "got " << got->ToString() << ", expected " << c.expected.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Table, CpuCastTest,
    ::testing::Combine(::testing::Range<size_t>(0, CastCases().size()),
                       ::testing::Values(CastSource::kArgument,
                                         CastSource::kConstant)),
    [](const auto& info) {
      const size_t row = std::get<0>(info.param);
      const CastSource source = std::get<1>(info.param);
      const CastCase& c = CastCases()[row];
      return absl::StrFormat("row%03d_%s_to_%s_%s", row,
                             ir::PrimitiveTypeName(c.from.type()),
                             ir::PrimitiveTypeName(c.to),
                             source == CastSource::kArgument ? "arg" : "const");
    });

// ==== Implicit conversions (type checker) at run time
// ============================

TEST_F(CpuMathTest, IntegerTrueDivisionAndFloatMathUseTheDefaultFloat) {
  const std::vector<int32_t> a = {7, -7, 1, 2, 0, INT32_MAX, 16777217};
  const std::vector<int32_t> b = {2, 2, 3, -4, 5, 1, 1};
  const auto quotient = Map<float>("true_div", BinaryFn(BinaryOpKind::kDiv),
                                   std::vector<std::vector<int32_t>>{a, b});
  const auto root = Map<float>("sqrt_int", UnaryFn(UnaryOpKind::kSqrt),
                               std::vector<std::vector<int32_t>>{a});
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(quotient[i], static_cast<float>(a[i]) / static_cast<float>(b[i]))
        << a[i];
    const float want = std::sqrt(static_cast<float>(a[i]));
    EXPECT_TRUE(Matches(Accuracy::kExact, root[i], want))
        << a[i] << ": " << root[i];
  }
}

TEST_F(CpuMathTest, DefaultFloatF64AppliesToIntegerDivision) {
  Init({.default_fp = kF64});
  const std::vector<int32_t> a = {1, 16777217, -7};
  const std::vector<int32_t> b = {3, 1, 2};
  const auto out = Map<double>("true_div", BinaryFn(BinaryOpKind::kDiv),
                               std::vector<std::vector<int32_t>>{a, b});
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(out[i], static_cast<double>(a[i]) / b[i]) << a[i];
  }
}

// op(x, y) on scalar arguments of different types: the type checker
// promotes both sides with PromoteTypes (float over int, wider over
// narrower, unsigned over signed at equal width) before the op runs.
struct PromotionCase {
  BinaryOpKind op;
  Constant x, y;
  Constant expected;  // its type is the promoted result type
  const char* what;
};

void PrintTo(const PromotionCase& c, std::ostream* os) {
  *os << c.what;
}

const std::vector<PromotionCase>& PromotionCases() {
  static const auto* cases = new std::vector<PromotionCase>{
      {BinaryOpKind::kLt, Int(kI32, -1), Int(kU32, 1), Bool(false),
       "i32 < u32 compares as u32: -1 is 4294967295"},
      {BinaryOpKind::kMin, Int(kI32, -1), Int(kU32, 1), Int(kU32, 1),
       "min over u32"},
      {BinaryOpKind::kAdd, Int(kI32, -1), Flt(kF32, 0.25), Flt(kF32, -0.75),
       "i32 + f32 is f32"},
      {BinaryOpKind::kMul, Int(kI8, -128), Int(kI32, 1000), Int(kI32, -128000),
       "i8 * i32 sign-extends to i32"},
      {BinaryOpKind::kAdd, Int(kU8, 255), Int(kI16, 1), Int(kI16, 256),
       "u8 + i16 zero-extends to i16"},
      {BinaryOpKind::kMul, Flt(kF32, 0.1), Flt(kF64, 10),
       Flt(kF64, double{0.1f} * 10), "f32 * f64 is f64"},
      {BinaryOpKind::kFloorDiv, Int(kI64, -7), Int(kI32, 2), Int(kI64, -4),
       "i64 // i32 is i64"},
  };
  return *cases;
}

class CpuPromotionTest : public CpuMathTest,
                         public ::testing::WithParamInterface<PromotionCase> {};

TEST_P(CpuPromotionTest, OperandsArePromotedBeforeTheOp) {
  const PromotionCase& c = GetParam();
  SCOPED_TRACE(c.what);
  // out[0] = op(x, y)
  Kernel k("promote");
  k.AddParam(KernelParam::Scalar("x", c.x.type()));
  k.AddParam(KernelParam::Scalar("y", c.y.type()));
  k.AddParam(KernelParam::Ndarray("out", c.expected.type(), 1));
  IRBuilder b(&k);
  b.GlobalStore(b.NdarrayPtr(2, {b.ConstI32(0)}),
                b.Binary(c.op, b.ArgLoad(0), b.ArgLoad(1)));
  auto out = Array(c.expected.type(), {1});
  const absl::Status status = Run(
      k, {KernelArgument::Scalar(c.x), KernelArgument::Scalar(c.y), Arg(out)});
  ASSERT_TRUE(status.ok()) << status;
  absl::StatusOr<Constant> got = out->Read({0});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameValue(*got, c.expected))
      << "got " << got->ToString() << ", expected " << c.expected.ToString();
}

INSTANTIATE_TEST_SUITE_P(Table, CpuPromotionTest,
                         ::testing::ValuesIn(PromotionCases()),
                         [](const auto& info) {
                           const PromotionCase& c = info.param;
                           return absl::StrCat(
                               ir::OpName(c.op), "_",
                               ir::PrimitiveTypeName(c.x.type()), "_",
                               ir::PrimitiveTypeName(c.y.type()));
                         });

TEST_F(CpuMathTest, SelectPromotesItsBranches) {
  // out[i] = cond[i] ? 7 (i32) : 0.5 (f32)  -> f32
  const std::vector<int32_t> cond = {1, 0, -3};
  const auto out = Map<float>(
      "select",
      [](IRBuilder& b, const std::vector<Stmt*>& x) {
        return b.Select(x[0], b.ConstI32(7), b.ConstF32(0.5f));
      },
      std::vector<std::vector<int32_t>>{cond});
  EXPECT_EQ(out, (std::vector<float>{7.0f, 0.5f, 7.0f}));
}

}  // namespace
}  // namespace quadrants
