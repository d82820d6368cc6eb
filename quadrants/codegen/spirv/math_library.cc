#include "quadrants/codegen/spirv/math_library.h"

#include <cmath>

namespace quadrants::codegen::spirv {
namespace {

// pi/2 in three parts of 33, 33 and 53 significant bits: k * part is exact
// for |k| < 2^20, so x - k * pi/2 keeps its precision (Cody and Waite).
constexpr double kPio2Hi = 1.5707963267341256;
constexpr double kPio2Mid = 6.077100506303966e-11;
constexpr double kPio2Lo = 2.0222662487959506e-21;
// ln 2 as a 32-bit head and a 53-bit tail.
constexpr double kLn2Hi = 0.6931471806019545;
constexpr double kLn2Lo = -4.2009150726810846e-11;
constexpr double kPi = 3.141592653589793;
constexpr double kPio2 = 1.5707963267948966;
constexpr double kPio6 = 0.5235987755982989;
constexpr double kSqrt3 = 1.7320508075688772;
constexpr double kTanPio12 = 0.2679491924311227;

// Coefficients of the Taylor series in x^2 (sin/x, cos), x (exp, expm1/x)
// and s^2 (atanh(s)/s, atan(a)/a).
std::vector<double> SeriesSin() {
  std::vector<double> c;
  double f = 1;
  for (int k = 0; k < 11; ++k) {
    c.push_back((k % 2 ? -1.0 : 1.0) / f);
    f *= (2 * k + 2) * (2 * k + 3);
  }
  return c;
}
std::vector<double> SeriesCos() {
  std::vector<double> c;
  double f = 1;
  for (int k = 0; k < 12; ++k) {
    c.push_back((k % 2 ? -1.0 : 1.0) / f);
    f *= (2 * k + 1) * (2 * k + 2);
  }
  return c;
}
std::vector<double> SeriesExp(int terms, int first) {
  // 1/first!, 1/(first+1)!, ...
  std::vector<double> c;
  double f = 1;
  for (int k = 1; k <= first; ++k)
    f *= k;
  for (int k = first; k < first + terms; ++k) {
    c.push_back(1.0 / f);
    f *= k + 1;
  }
  return c;
}
std::vector<double> SeriesOdd(int terms, bool alternating) {
  std::vector<double> c;
  for (int k = 0; k < terms; ++k)
    c.push_back((alternating && k % 2 ? -1.0 : 1.0) / (2 * k + 1));
  return c;
}

}  // namespace

Id MathLibrary::F(double v) {
  return b_.ConstFloat(b_.FloatType(64), v);
}
Id MathLibrary::Add(Id a, Id b) {
  return b_.Op(spv::OpFAdd, b_.FloatType(64), {a, b});
}
Id MathLibrary::Sub(Id a, Id b) {
  return b_.Op(spv::OpFSub, b_.FloatType(64), {a, b});
}
Id MathLibrary::Mul(Id a, Id b) {
  return b_.Op(spv::OpFMul, b_.FloatType(64), {a, b});
}
Id MathLibrary::Div(Id a, Id b) {
  return b_.Op(spv::OpFDiv, b_.FloatType(64), {a, b});
}
Id MathLibrary::Neg(Id a) {
  return b_.Op(spv::OpFNegate, b_.FloatType(64), {a});
}
Id MathLibrary::Lt(Id a, Id b) {
  return b_.Op(spv::OpFOrdLessThan, b_.BoolType(), {a, b});
}
Id MathLibrary::Gt(Id a, Id b) {
  return b_.Op(spv::OpFOrdGreaterThan, b_.BoolType(), {a, b});
}
Id MathLibrary::Eq(Id a, Id b) {
  return b_.Op(spv::OpFOrdEqual, b_.BoolType(), {a, b});
}
Id MathLibrary::Select(Id cond, Id a, Id b) {
  return b_.Op(spv::OpSelect, b_.FloatType(64), {cond, a, b});
}
Id MathLibrary::SignBit(Id a) {
  // OpSignBitSet is for OpenCL kernels only; read the top bit instead.
  const Id u64 = b_.IntType(64, false);
  return b_.Op(spv::OpINotEqual, b_.BoolType(),
               {b_.Op(spv::OpShiftRightLogical, u64,
                      {b_.Op(spv::OpBitcast, u64, {a}), b_.ConstU64(63)}),
                b_.ConstU64(0)});
}

Id MathLibrary::Abs(Id a) {
  return b_.Glsl(GLSLstd450FAbs, b_.FloatType(64), {a});
}

Id MathLibrary::Horner(Id x, const std::vector<double>& c) {
  Id acc = F(c.back());
  for (int k = static_cast<int>(c.size()) - 2; k >= 0; --k)
    acc = Add(F(c[k]), Mul(x, acc));
  return acc;
}

Id MathLibrary::Declare(Fn fn) {
  auto it = declared_.find(fn);
  if (it != declared_.end())
    return it->second;
  Id id = b_.NewId();
  declared_[fn] = id;
  return id;
}

Id MathLibrary::Call(Fn fn, const std::vector<Id>& args) {
  const Id f64 = b_.FloatType(64);
  std::vector<uint32_t> operands = {Declare(fn)};
  operands.insert(operands.end(), args.begin(), args.end());
  return b_.Op(spv::OpFunctionCall, f64, operands);
}

Id MathLibrary::IntPow(Id type, Id base, Id exponent) {
  Id& fn = int_pow_[type];
  if (fn == 0)
    fn = b_.NewId();
  return b_.Op(spv::OpFunctionCall, type, {fn, base, exponent});
}

void MathLibrary::Finish() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (const auto& [fn, id] : std::map<Fn, Id>(declared_)) {
      if (built_[fn])
        continue;
      built_[fn] = true;
      Build(fn, id);
      progress = true;
    }
    for (const auto& [type, id] : std::map<Id, Id>(int_pow_)) {
      if (int_pow_built_[type])
        continue;
      int_pow_built_[type] = true;
      BuildIntPow(type, id);
      progress = true;
    }
  }
}

Id MathLibrary::SinCos(Id x, int which) {
  const Id f64 = b_.FloatType(64);
  const Id i32 = b_.IntType(32, true);
  // x = k * pi/2 + r with |r| <= pi/4; the quadrant is k mod 4.
  Id k = b_.Glsl(GLSLstd450RoundEven, f64, {Mul(x, F(2.0 / kPi))});
  Id r = Sub(Sub(Sub(x, Mul(k, F(kPio2Hi))), Mul(k, F(kPio2Mid))),
             Mul(k, F(kPio2Lo)));
  Id r2 = Mul(r, r);
  Id s = Mul(r, Horner(r2, SeriesSin()));
  Id c = Horner(r2, SeriesCos());
  // The quadrant from k's low bits (k is integral; reduce it first so the
  // conversion stays in range).
  Id k_mod =
      Sub(k, Mul(F(4.0), b_.Glsl(GLSLstd450Floor, f64, {Mul(k, F(0.25))})));
  Id q = b_.Op(spv::OpConvertFToS, i32, {k_mod});
  Id bit0 = b_.Op(
      spv::OpINotEqual, b_.BoolType(),
      {b_.Op(spv::OpBitwiseAnd, i32, {q, b_.ConstI32(1)}), b_.ConstI32(0)});
  Id bit1 = b_.Op(
      spv::OpINotEqual, b_.BoolType(),
      {b_.Op(spv::OpBitwiseAnd, i32, {q, b_.ConstI32(2)}), b_.ConstI32(0)});
  if (which == 2) {
    // tan: s/c in even quadrants, -c/s in odd ones.
    return Select(bit0, Neg(Div(c, s)), Div(s, c));
  }
  if (which == 0) {
    // sin: s, c, -s, -c for q = 0..3.
    Id v = Select(bit0, c, s);
    return Select(bit1, Neg(v), v);
  }
  // cos: c, -s, -c, s.
  Id v = Select(bit0, s, c);
  Id negate = b_.Op(spv::OpLogicalNotEqual, b_.BoolType(), {bit0, bit1});
  return Select(negate, Neg(v), v);
}

Id MathLibrary::Exp(Id x) {
  const Id f64 = b_.FloatType(64);
  const Id i32 = b_.IntType(32, true);
  // Clamped so k fits an int; the ends overflow to inf and underflow to 0.
  Id xc = b_.Glsl(GLSLstd450FClamp, f64, {x, F(-746.0), F(710.0)});
  Id k = b_.Glsl(GLSLstd450RoundEven, f64, {Mul(xc, F(1.0 / std::log(2.0)))});
  Id r = Sub(Sub(xc, Mul(k, F(kLn2Hi))), Mul(k, F(kLn2Lo)));
  Id er = Horner(r, SeriesExp(16, 0));
  Id ki = b_.Op(spv::OpConvertFToS, i32, {k});
  // 2^k in two steps, so k below the normal range still scales correctly.
  Id half = b_.Op(spv::OpSDiv, i32, {ki, b_.ConstI32(2)});
  Id rest = b_.Op(spv::OpISub, i32, {ki, half});
  Id y = b_.Glsl(GLSLstd450Ldexp, f64,
                 {b_.Glsl(GLSLstd450Ldexp, f64, {er, half}), rest});
  // NaN stays NaN (the clamp would have made it a number).
  Id is_nan = b_.Op(spv::OpIsNan, b_.BoolType(), {x});
  return Select(is_nan, x, y);
}

Id MathLibrary::Expm1(Id x) {
  // The series for small |x| (no cancellation), exp(x) - 1 elsewhere.
  Id small = Mul(x, Horner(x, SeriesExp(19, 1)));
  Id large = Sub(Exp(x), F(1.0));
  return Select(Lt(Abs(x), F(0.5)), small, large);
}

Id MathLibrary::Log(Id x) {
  const Id f64 = b_.FloatType(64);
  const Id u64 = b_.IntType(64, false);
  const Id i64 = b_.IntType(64, true);
  // Subnormals are scaled into the normal range first.
  Id tiny = Lt(x, F(2.2250738585072014e-308));
  Id xs = Select(tiny, Mul(x, F(18014398509481984.0)), x);  // 2^54
  Id bits = b_.Op(spv::OpBitcast, u64, {xs});
  Id biased = b_.Op(spv::OpShiftRightLogical, u64, {bits, b_.ConstU64(52)});
  Id e = b_.Op(spv::OpISub, i64,
               {b_.Op(spv::OpBitcast, i64, {biased}), b_.ConstI64(1022)});
  e = b_.Op(
      spv::OpISub, i64,
      {e, b_.Op(spv::OpSelect, i64, {tiny, b_.ConstI64(54), b_.ConstI64(0)})});
  // m in [0.5, 1): the mantissa with the exponent of 0.5.
  Id mbits = b_.Op(spv::OpBitwiseOr, u64,
                   {b_.Op(spv::OpBitwiseAnd, u64,
                          {bits, b_.ConstU64(0x000fffffffffffffULL)}),
                    b_.ConstU64(0x3fe0000000000000ULL)});
  Id m = b_.Op(spv::OpBitcast, f64, {mbits});
  // Then m in [sqrt(1/2), sqrt(2)).
  Id low = Lt(m, F(0.7071067811865476));
  m = Select(low, Add(m, m), m);
  Id ef = b_.Op(spv::OpConvertSToF, f64, {e});
  ef = Select(low, Sub(ef, F(1.0)), ef);
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172.
  Id f = Sub(m, F(1.0));
  Id s = Div(f, Add(f, F(2.0)));
  Id lm = Mul(Add(s, s), Horner(Mul(s, s), SeriesOdd(14, false)));
  Id y = Add(Mul(ef, F(kLn2Hi)), Add(lm, Mul(ef, F(kLn2Lo))));
  // log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, log(NaN) = NaN.
  Id inf = F(INFINITY);
  y = Select(Eq(x, F(0.0)), Neg(inf), y);
  y = Select(Lt(x, F(0.0)), F(NAN), y);
  y = Select(Eq(x, inf), inf, y);
  return Select(b_.Op(spv::OpIsNan, b_.BoolType(), {x}), x, y);
}

Id MathLibrary::Atan(Id x) {
  Id a = Abs(x);
  // atan(a) = pi/2 - atan(1/a) above 1, then pi/6 + atan of the argument
  // reduced by tan(pi/6), leaving |a| <= tan(pi/12) for the series.
  Id invert = Gt(a, F(1.0));
  a = Select(invert, Div(F(1.0), a), a);
  Id shift = Gt(a, F(kTanPio12));
  a = Select(shift, Div(Sub(Mul(a, F(kSqrt3)), F(1.0)), Add(a, F(kSqrt3))), a);
  Id r = Mul(a, Horner(Mul(a, a), SeriesOdd(17, true)));
  r = Select(shift, Add(F(kPio6), r), r);
  r = Select(invert, Sub(F(kPio2), r), r);
  return Select(Lt(x, F(0.0)), Neg(r), r);
}

Id MathLibrary::Atan2(Id y, Id x) {
  Id base = Atan(Div(y, x));
  Id negative_y = SignBit(y);
  Id around = Select(negative_y, Sub(base, F(kPi)), Add(base, F(kPi)));
  Id r = Select(Lt(x, F(0.0)), around, base);
  // x = 0: +-pi/2 by the sign of y, or 0 for y = 0 (pi for x = -0).
  Id on_axis =
      Select(Gt(y, F(0.0)), F(kPio2), Select(Lt(y, F(0.0)), F(-kPio2), y));
  Id x_negative_zero = SignBit(x);
  Id zero_y = Eq(y, F(0.0));
  on_axis =
      Select(b_.Op(spv::OpLogicalAnd, b_.BoolType(), {zero_y, x_negative_zero}),
             Select(negative_y, F(-kPi), F(kPi)), on_axis);
  r = Select(Eq(x, F(0.0)), on_axis, r);
  // y = 0 with x > 0 keeps y's sign; with x < 0 it is +-pi.
  r = Select(b_.Op(spv::OpLogicalAnd, b_.BoolType(), {zero_y, Gt(x, F(0.0))}),
             y, r);
  r = Select(b_.Op(spv::OpLogicalAnd, b_.BoolType(), {zero_y, Lt(x, F(0.0))}),
             Select(negative_y, F(-kPi), F(kPi)), r);
  return r;
}

void MathLibrary::Build(Fn fn, Id id) {
  const Id f64 = b_.FloatType(64);
  const bool binary = fn == Fn::kAtan2 || fn == Fn::kPow;
  std::vector<Id> param_types(binary ? 2 : 1, f64);
  std::vector<Id> p;
  b_.BeginFunction(f64, b_.FunctionType(f64, param_types), param_types, &p, id);
  Id r = 0;
  switch (fn) {
    case Fn::kSin:
      r = SinCos(p[0], 0);
      break;
    case Fn::kCos:
      r = SinCos(p[0], 1);
      break;
    case Fn::kTan:
      r = SinCos(p[0], 2);
      break;
    case Fn::kExp:
      r = Exp(p[0]);
      break;
    case Fn::kExpm1:
      r = Expm1(p[0]);
      break;
    case Fn::kLog:
      r = Log(p[0]);
      break;
    case Fn::kTanh: {
      // tanh(t) = e / (e + 2) with e = expm1(2t), t = |x|; 1 beyond 22.
      Id t = Abs(p[0]);
      Id e = Expm1(Add(t, t));
      Id v = Select(Gt(t, F(22.0)), F(1.0), Div(e, Add(e, F(2.0))));
      r = Select(Lt(p[0], F(0.0)), Neg(v), v);
      r = Select(b_.Op(spv::OpIsNan, b_.BoolType(), {p[0]}), p[0], r);
      break;
    }
    case Fn::kAtan:
      r = Atan(p[0]);
      break;
    case Fn::kAtan2:
      r = Atan2(p[0], p[1]);
      break;
    case Fn::kAsin:
    case Fn::kAcos: {
      // sqrt((1 - x)(1 + x)) keeps precision near |x| = 1.
      Id c = b_.Glsl(GLSLstd450Sqrt, f64,
                     {Mul(Sub(F(1.0), p[0]), Add(F(1.0), p[0]))});
      r = fn == Fn::kAsin ? Atan2(p[0], c) : Atan2(c, p[0]);
      Id outside = Gt(Abs(p[0]), F(1.0));
      r = Select(outside, F(NAN), r);
      break;
    }
    case Fn::kPow: {
      Id x = p[0], y = p[1];
      Id ax = Abs(x);
      Id magnitude = Exp(Mul(y, Log(ax)));
      // Negative bases: defined for integral exponents, negative for odd.
      Id integral = Eq(b_.Glsl(GLSLstd450Floor, f64, {y}), y);
      Id half = Mul(y, F(0.5));
      Id odd = b_.Op(
          spv::OpLogicalAnd, b_.BoolType(),
          {integral, b_.Op(spv::OpFOrdNotEqual, b_.BoolType(),
                           {b_.Glsl(GLSLstd450Floor, f64, {half}), half})});
      Id signed_result = Select(odd, Neg(magnitude), magnitude);
      Id negative = Select(integral, signed_result, F(NAN));
      r = Select(Lt(x, F(0.0)), negative, magnitude);
      // Zero bases: 0 for y > 0 (-0 for odd y and x = -0), inf for y < 0.
      Id zero_pos =
          Select(b_.Op(spv::OpLogicalAnd, b_.BoolType(), {odd, SignBit(x)}),
                 F(-0.0), F(0.0));
      Id zero_neg =
          Select(b_.Op(spv::OpLogicalAnd, b_.BoolType(), {odd, SignBit(x)}),
                 F(-INFINITY), F(INFINITY));
      Id at_zero = Select(Gt(y, F(0.0)), zero_pos, zero_neg);
      r = Select(Eq(x, F(0.0)), at_zero, r);
      // x^0 = 1 and 1^y = 1, NaN included.
      r = Select(b_.Op(spv::OpLogicalOr, b_.BoolType(),
                       {Eq(y, F(0.0)), Eq(x, F(1.0))}),
                 F(1.0), r);
      break;
    }
  }
  b_.OpVoid(spv::OpReturnValue, {r});
  b_.EndFunction();
}

void MathLibrary::BuildIntPow(Id type, Id id) {
  const auto [width, is_signed] = b_.IntInfo(type);
  std::vector<Id> p;
  b_.BeginFunction(type, b_.FunctionType(type, {type, type}), {type, type}, &p,
                   id);
  const Id boolean = b_.BoolType();
  const Id zero = b_.ConstInt(type, 0);
  const Id one = b_.ConstInt(type, 1);
  // Squaring over every bit of the exponent, without a loop.
  Id result = one, base = p[0], e = p[1];
  for (int bit = 0; bit < width; ++bit) {
    Id set = b_.Op(spv::OpINotEqual, boolean,
                   {b_.Op(spv::OpBitwiseAnd, type, {e, one}), zero});
    result = b_.Op(spv::OpSelect, type,
                   {set, b_.Op(spv::OpIMul, type, {result, base}), result});
    base = b_.Op(spv::OpIMul, type, {base, base});
    e = b_.Op(spv::OpShiftRightLogical, type, {e, b_.ConstU32(1)});
  }
  if (is_signed) {
    const Id minus_one = b_.ConstInt(type, ~uint64_t{0});
    Id negative = b_.Op(spv::OpSLessThan, boolean, {p[1], zero});
    Id odd = b_.Op(spv::OpINotEqual, boolean,
                   {b_.Op(spv::OpBitwiseAnd, type, {p[1], one}), zero});
    Id for_minus_one = b_.Op(spv::OpSelect, type, {odd, minus_one, one});
    Id inverse = b_.Op(spv::OpSelect, type,
                       {b_.Op(spv::OpIEqual, boolean, {p[0], one}), one,
                        b_.Op(spv::OpSelect, type,
                              {b_.Op(spv::OpIEqual, boolean, {p[0], minus_one}),
                               for_minus_one, zero})});
    result = b_.Op(spv::OpSelect, type, {negative, inverse, result});
  }
  b_.OpVoid(spv::OpReturnValue, {result});
  b_.EndFunction();
}

}  // namespace quadrants::codegen::spirv
