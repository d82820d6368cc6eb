// Float math on whole vectors of f32 lanes, for kernels the CPU backend
// runs in SIMD lanes. Each function evaluates in f64 (range reduction and
// a polynomial whose truncation error is below 1e-15 relative), so the f32
// result is within 1 ulp, nearly always the correctly rounded one. Lanes
// outside the reduced-argument range (huge, infinite or NaN inputs, pow's
// non-positive bases) take the C library's scalar function instead, so no
// lane is less accurate than the scalar path.
//
// Entry points: void qd_<op>_f32x<N>(float* out, const float* x[, y]) for N
// in {4, 8, 16, 32, 64}, and qd_sincos_f32x<N>(float* sin, float* cos,
// const float* x), over N-lane arrays aligned as N-float vectors; inlined
// into the kernel, the arrays become registers.
#ifndef QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_SIMD_MATH_H_
#define QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_SIMD_MATH_H_

namespace qd_simd {

template <int N>
struct Lanes {
  typedef float F __attribute__((ext_vector_type(N)));
  typedef double D __attribute__((ext_vector_type(N)));
  typedef long L __attribute__((ext_vector_type(N)));
  typedef int I __attribute__((ext_vector_type(N)));
};

// pi/2 as a double and the double nearest the rest (their sum is within
// 6e-33 of pi/2).
constexpr double kPio2 = 1.5707963267948966;
constexpr double kPio2Tail = 6.123233995736766e-17;
constexpr double kTwoOverPi = 0.6366197723675814;
constexpr double kInvPi = 0.3183098861837907;
constexpr double kPi = 3.141592653589793;
constexpr double kPi2 = 1.5707963267948966;
constexpr double kPi4 = 0.7853981633974483;
constexpr double kTanPi8 = 0.41421356237309503;
// ln 2 with 32 significant bits in the high part.
constexpr double kLn2Hi = 0.6931471806019545;
constexpr double kLn2Lo = -4.2009150726810846e-11;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kInvLn2 = 1.4426950408889634;
constexpr double kSqrt2 = 1.4142135623730951;
// Trigonometric lanes beyond this magnitude use the C library.
constexpr double kTrigLimit = 1.0e5;

template <int N>
using D = typename Lanes<N>::D;
template <int N>
using L = typename Lanes<N>::L;
template <int N>
using F = typename Lanes<N>::F;
template <int N>
using I = typename Lanes<N>::I;

// Sine and cosine of r, |r| <= pi/4, by their Taylor series to r^15 and
// r^16 (the next terms are below 5e-17 relative).
template <int N>
__attribute__((always_inline)) inline void SinCosPoly(D<N> r, D<N>* s,
                                                      D<N>* c) {
  const D<N> r2 = r * r;
  D<N> ps = -1.0 / 1307674368000.0;  // -1/15!
  ps = ps * r2 + 1.0 / 6227020800.0;
  ps = ps * r2 - 1.0 / 39916800.0;
  ps = ps * r2 + 1.0 / 362880.0;
  ps = ps * r2 - 1.0 / 5040.0;
  ps = ps * r2 + 1.0 / 120.0;
  ps = ps * r2 - 1.0 / 6.0;
  *s = r + r * r2 * ps;
  D<N> pc = 1.0 / 20922789888000.0;  // 1/16!
  pc = pc * r2 - 1.0 / 87178291200.0;
  pc = pc * r2 + 1.0 / 479001600.0;
  pc = pc * r2 - 1.0 / 3628800.0;
  pc = pc * r2 + 1.0 / 40320.0;
  pc = pc * r2 - 1.0 / 720.0;
  pc = pc * r2 + 1.0 / 24.0;
  pc = pc * r2 - 0.5;
  *c = 1.0 + r2 * pc;
}

// x - k m pi/2 for m = 1 or 2, x an f32 value within the trigonometric
// range and k the integer that leaves |x - k m pi/2| <= pi/2. The first
// fused multiply-add is exact: k is 0 unless |x| >= pi/4, where x is a
// multiple of 2^-24, so x and k m kPio2 are multiples of 2^-52 and their
// difference, below 2, fits in 53 bits. Dropping the rest of pi/2 errs by
// at most |k m| 6e-33 < 1e-27, far below an ulp of the smallest such
// difference of an f32 in range.
template <int N>
__attribute__((always_inline)) inline D<N> ReduceBy(D<N> x, D<N> k, double m) {
  const D<N> head = __builtin_elementwise_fma(-k, D<N>(m * kPio2), x);
  return __builtin_elementwise_fma(-k, D<N>(m * kPio2Tail), head);
}

// x = k * pi/2 + r; returns r and the quadrant k mod 4.
template <int N>
__attribute__((always_inline)) inline D<N> ReduceQuadrant(D<N> x,
                                                          L<N>* quadrant) {
  const D<N> k = __builtin_elementwise_roundeven(x * kTwoOverPi);
  *quadrant = __builtin_convertvector(k, L<N>) & 3;
  return ReduceBy<N>(x, k, 1.0);
}

// e^x for |x| <= 200 (inputs are clamped by the callers): x = k ln2 + r,
// |r| <= ln2 / 2, e^r by Taylor to r^13 (next term below 2e-17 relative).
template <int N>
__attribute__((always_inline)) inline D<N> ExpCore(D<N> x) {
  const D<N> k = __builtin_elementwise_roundeven(x * kInvLn2);
  const D<N> r = (x - k * kLn2Hi) - k * kLn2Lo;
  D<N> p = 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const L<N> bits = (__builtin_convertvector(k, L<N>) + 1023) << 52;
  return p * __builtin_bit_cast(D<N>, bits);
}

// ln x for finite x > 0: x = 2^e m, m in [sqrt(1/2), sqrt(2)), and
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to
// s^19 (next term below 3e-17 relative).
template <int N>
__attribute__((always_inline)) inline D<N> LogCore(D<N> x) {
  const L<N> bits = __builtin_bit_cast(L<N>, x);
  L<N> e = ((bits >> 52) & 0x7ff) - 1023;
  D<N> m = __builtin_bit_cast(
      D<N>, (bits & 0x000fffffffffffffL) | 0x3ff0000000000000L);
  const L<N> high = m > kSqrt2;
  m = high ? m * 0.5 : m;
  e = e - high;  // `high` lanes are -1
  const D<N> s = (m - 1.0) / (m + 1.0);
  const D<N> s2 = s * s;
  D<N> p = 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  return __builtin_convertvector(e, D<N>) * kLn2 + 2.0 * s * p;
}

// Clamps to [lo, hi]; NaN lanes stay NaN.
template <int N>
__attribute__((always_inline)) inline D<N> Clamp(D<N> v, double lo, double hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

template <int N>
__attribute__((always_inline)) inline F<N> Load(const float* p) {
  return *reinterpret_cast<const F<N>*>(p);
}

template <int N>
__attribute__((always_inline)) inline void Store(float* p, F<N> v) {
  *reinterpret_cast<F<N>*>(p) = v;
}

// The lanes of `x` (and `y`) flagged in `scalar`, recomputed into `out` by
// `fn`, the C library's function. Out of line: a slow path for a few lanes
// that would otherwise be N inlined calls at every use. The vectors are
// copies, so only they live in memory; the caller's stay in registers.
template <int N, typename Mask, typename Fn>
__attribute__((noinline)) void ScalarLanes(F<N>* out, const F<N>* x,
                                           const F<N>* y, const Mask* scalar,
                                           Fn fn) {
  for (int lane = 0; lane < N; ++lane) {
    if ((*scalar)[lane] != 0)
      (*out)[lane] = fn((*x)[lane], (*y)[lane]);
  }
}

template <int N, typename Mask, typename Fn>
__attribute__((always_inline)) inline void FixScalarLanes(float* out,
                                                          const float* x,
                                                          const float* y,
                                                          Mask scalar, Fn fn) {
  if (__builtin_reduce_or(scalar) != 0) {
    F<N> lanes = Load<N>(out);
    const F<N> xs = Load<N>(x), ys = Load<N>(y);
    ScalarLanes<N>(&lanes, &xs, &ys, &scalar, fn);
    Store<N>(out, lanes);
  }
}

#define QD_SIMD_SCALAR_LANES1(fn) \
  FixScalarLanes<N>(out, x, x, scalar, [](float a, float) { return fn(a); })

// sin r for |r| <= pi/2 as r P(r^2), P of degree 5 fitted to sin(r)/r for
// least maximum relative error (2.1e-11, measured against mpmath on a
// dense grid; f32 results need about 1e-9 to stay within 0.5 ulp + 2^-10).
template <int N>
__attribute__((always_inline)) inline D<N> SinPoly(D<N> r) {
  const D<N> r2 = r * r;
  D<N> p = -2.3868344578570344e-08;
  p = p * r2 + 2.7523970959481003e-06;
  p = p * r2 + -0.0001984083282081696;
  p = p * r2 + 0.008333330720534821;
  p = p * r2 + -0.1666666660882511;
  p = p * r2 + 0.9999999999788473;
  return r * p;
}

// Lanes whose f32 input lies beyond the trigonometric range (or is NaN):
// checked before widening, on half the registers of the f64 copy.
template <int N>
__attribute__((always_inline)) inline I<N> BeyondTrigRange(const float* x) {
  return !(__builtin_elementwise_abs(Load<N>(x)) <=
           static_cast<float>(kTrigLimit));
}

// 1.5 * 2^52: adding it to |y| < 2^51 rounds y to the integer k and leaves
// k's low bits in the low bits of the sum, so quadrant logic stays in a few
// integer operations; subtracting it back gives k as a double, +0 for zero.
constexpr double kRound = 6755399441055744.0;

// sin x = (-1)^k sin r with x = k pi + r, |r| <= pi/2: one polynomial. A
// zero x keeps its sign through r and the polynomial (k is +0 then).
template <int N>
__attribute__((always_inline)) inline void Sin(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> t = d * kInvPi + kRound;
  const D<N> k = t - kRound;
  const D<N> r = ReduceBy<N>(d, k, 2.0);
  const L<N> sign = __builtin_bit_cast(L<N>, t) << 63;
  const D<N> v = __builtin_bit_cast(
      D<N>, __builtin_bit_cast(L<N>, SinPoly<N>(r)) ^ sign);
  Store<N>(out, __builtin_convertvector(v, F<N>));
  const I<N> scalar = BeyondTrigRange<N>(x);
  QD_SIMD_SCALAR_LANES1(__builtin_sinf);
}

// cos x = (-1)^(h+1) sin r with x = (h + 1/2) pi + r, |r| <= pi/2.
template <int N>
__attribute__((always_inline)) inline void Cos(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> h = __builtin_elementwise_roundeven(d * kInvPi - 0.5);
  const D<N> r = ReduceBy<N>(d, 2.0 * h + 1.0, 1.0);
  const D<N> s = SinPoly<N>(r);
  const D<N> v = (__builtin_convertvector(h, L<N>) & 1) != 0 ? s : -s;
  Store<N>(out, __builtin_convertvector(v, F<N>));
  const I<N> scalar = BeyondTrigRange<N>(x);
  QD_SIMD_SCALAR_LANES1(__builtin_cosf);
}

// The lanes of SinCos flagged in `scalar`, by the C library; out of line,
// as the slow path of a few lanes.
template <int N>
__attribute__((noinline)) void SinCosScalarLanes(F<N>* sin_lanes,
                                                 F<N>* cos_lanes,
                                                 const F<N>* x,
                                                 const I<N>* scalar) {
  for (int lane = 0; lane < N; ++lane) {
    if ((*scalar)[lane] != 0) {
      (*sin_lanes)[lane] = __builtin_sinf((*x)[lane]);
      (*cos_lanes)[lane] = __builtin_cosf((*x)[lane]);
    }
  }
}

// sin x and cos x together: one reduction x = k pi/2 + r, |r| <= pi/4, and
// for sin r and cos r polynomials fitted for least maximum relative error
// (5.2e-12 and 1.2e-10, measured against mpmath on a dense grid), then the
// quadrant k mod 4 picks and signs them. Both results are within 1 ulp,
// like Sin and Cos.
template <int N>
__attribute__((always_inline)) inline void SinCos(float* sin_out,
                                                  float* cos_out,
                                                  const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> t = d * kTwoOverPi + kRound;
  const D<N> k = t - kRound;
  const L<N> q = __builtin_bit_cast(L<N>, t);
  const D<N> r = ReduceBy<N>(d, k, 1.0);
  const D<N> r2 = r * r;
  // sin r = r + r^3 (s0 + s1 r^2 + s2 r^4 + s3 r^6)
  D<N> ps = 2.7181215610625094e-06;
  ps = ps * r2 + -0.00019839312262449633;
  ps = ps * r2 + 0.008333329304820565;
  ps = ps * r2 + -0.16666666640796848;
  // r (1 + r^2 P) rather than r + r^3 P: a zero r keeps its sign.
  const D<N> s = r * (1.0 + r2 * ps);
  // cos r = 1 - r^2 / 2 + r^4 (c0 + c1 r^2 + c2 r^4)
  D<N> pc = 2.443315631237659e-05;
  pc = pc * r2 + -0.001388731624784215;
  pc = pc * r2 + 0.04166664568284115;
  pc = pc * r2 - 0.5;
  const D<N> c = 1.0 + r2 * pc;
  // Quadrants 1 and 3 swap sin and cos; bit 1 of k (of k + 1) is the sign
  // of sin x (of cos x).
  const L<N> odd = (q & 1) != 0;
  const L<N> sin_sign = (q & 2) << 62;
  const L<N> cos_sign = ((q + 1) & 2) << 62;
  const D<N> sv = __builtin_bit_cast(
      D<N>, __builtin_bit_cast(L<N>, odd ? c : s) ^ sin_sign);
  const D<N> cv = __builtin_bit_cast(
      D<N>, __builtin_bit_cast(L<N>, odd ? s : c) ^ cos_sign);
  F<N> sf = __builtin_convertvector(sv, F<N>);
  F<N> cf = __builtin_convertvector(cv, F<N>);
  const I<N> scalar = BeyondTrigRange<N>(x);
  if (__builtin_reduce_or(scalar) != 0) {
    // Copies, so that only they live in memory: the results and the caller's
    // slots stay in registers on the common path.
    F<N> s_lanes = sf, c_lanes = cf;
    const F<N> x_lanes = Load<N>(x);
    SinCosScalarLanes<N>(&s_lanes, &c_lanes, &x_lanes, &scalar);
    sf = s_lanes;
    cf = c_lanes;
  }
  Store<N>(sin_out, sf);
  Store<N>(cos_out, cf);
}

template <int N>
__attribute__((always_inline)) inline void Tan(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  L<N> q;
  D<N> s, c;
  SinCosPoly<N>(ReduceQuadrant<N>(d, &q), &s, &c);
  D<N> r = (q & 1) != 0 ? -c / s : s / c;
  r = d == 0.0 ? d : r;
  Store<N>(out, __builtin_convertvector(r, F<N>));
  const I<N> scalar = BeyondTrigRange<N>(x);
  QD_SIMD_SCALAR_LANES1(__builtin_tanf);
}

template <int N>
__attribute__((always_inline)) inline void Exp(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  // f32 results saturate well inside +-200 (to inf above 88.8, to 0 below
  // -103.98); NaN lanes keep their input.
  D<N> r = ExpCore<N>(Clamp<N>(d, -200.0, 200.0));
  r = d != d ? d : r;
  Store<N>(out, __builtin_convertvector(r, F<N>));
}

template <int N>
__attribute__((always_inline)) inline void Log(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  D<N> r = LogCore<N>(d);
  const D<N> inf = __builtin_inf();
  r = d == 0.0 ? -inf : r;
  r = d == inf ? inf : r;
  r = ((d < 0.0) | (d != d)) ? __builtin_nan("") : r;
  Store<N>(out, __builtin_convertvector(r, F<N>));
}

// tanh |x| = e / (e + 2) with e = expm1(2|x|) (Taylor to the 20th power
// for 2|x| <= 1, next term below 2e-19 relative), else 1 - 2 / (e^2|x| + 1);
// the sign is restored after.
template <int N>
__attribute__((always_inline)) inline void Tanh(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> a = Clamp<N>(__builtin_elementwise_abs(d), 0.0, 20.0);
  const D<N> t = 2.0 * a;
  D<N> p = 1.0 / 2432902008176640000.0;  // 1/20!
  double factorial = 2432902008176640000.0;
  for (int n = 19; n >= 1; --n) {
    factorial /= n + 1;
    p = p * t + 1.0 / factorial;
  }
  const D<N> small = t * p / (t * p + 2.0);
  const D<N> large = 1.0 - 2.0 / (ExpCore<N>(t) + 1.0);
  D<N> r = t <= 1.0 ? small : large;
  r = d < 0.0 ? -r : r;
  r = d != d ? d : r;
  r = d == 0.0 ? d : r;
  Store<N>(out, __builtin_convertvector(r, F<N>));
}

// x^y = e^(y ln x) for finite x > 0 and finite y; other lanes (zero,
// negative, infinite or NaN operands, with their special cases) use powf.
template <int N>
__attribute__((always_inline)) inline void Pow(float* out, const float* x,
                                               const float* y) {
  const D<N> dx = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> dy = __builtin_convertvector(Load<N>(y), D<N>);
  const D<N> inf = __builtin_inf();
  const L<N> scalar =
      !((dx > 0.0) & (dx < inf) & (__builtin_elementwise_abs(dy) < inf));
  const D<N> safe_x = scalar ? 1.0 : dx;
  D<N> e = dy * LogCore<N>(safe_x);
  e = Clamp<N>(e, -200.0, 200.0);
  e = scalar ? 0.0 : e;
  Store<N>(out, __builtin_convertvector(ExpCore<N>(e), F<N>));
  FixScalarLanes<N>(out, x, y, scalar,
                    [](float a, float b) { return __builtin_powf(a, b); });
}

// atan u for u >= 0 (inf included): u > 1 through pi/2 - atan(1/u), then
// t > tan(pi/8) through pi/4 + atan((t - 1) / (t + 1)), leaving |w| <=
// tan(pi/8) for w Q(w^2), Q of degree 6 fitted to atan(w)/w for least
// maximum relative error (2.1e-11 against mpmath).
template <int N>
__attribute__((always_inline)) inline D<N> AtanNonNegative(D<N> u) {
  const L<N> big = u > 1.0;
  const D<N> t = big ? 1.0 / u : u;
  const L<N> mid = t > kTanPi8;
  const D<N> w = mid ? (t - 1.0) / (t + 1.0) : t;
  const D<N> z = w * w;
  D<N> q = 0.04714332475163336;
  q = q * z + -0.08459797293911055;
  q = q * z + 0.110411871923281;
  q = q * z + -0.1428165111816287;
  q = q * z + 0.19999886376798928;
  q = q * z + -0.3333333213493587;
  q = q * z + 0.9999999999792978;
  D<N> a = w * q;
  a = mid ? kPi4 + a : a;
  return big ? kPi2 - a : a;
}

// Zero, infinite and NaN operands (the signed-zero and infinity cases)
// take the C library's atan2f.
template <int N>
__attribute__((always_inline)) inline void Atan2(float* out, const float* y,
                                                 const float* x) {
  const D<N> dy = __builtin_convertvector(Load<N>(y), D<N>);
  const D<N> dx = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> inf = __builtin_inf();
  const D<N> ay = __builtin_elementwise_abs(dy);
  const D<N> ax = __builtin_elementwise_abs(dx);
  const L<N> scalar = !((ay > 0.0) & (ay < inf) & (ax > 0.0) & (ax < inf));
  D<N> a = AtanNonNegative<N>(scalar ? 1.0 : ay / ax);
  a = dx < 0.0 ? kPi - a : a;
  a = dy < 0.0 ? -a : a;
  Store<N>(out, __builtin_convertvector(a, F<N>));
  FixScalarLanes<N>(out, y, x, scalar,
                    [](float a, float b) { return __builtin_atan2f(a, b); });
}

// asin x = atan(|x| / sqrt(1 - x^2)) with x's sign; 1 - x^2 is exact in f64
// for f32 x. |x| >= 1 and NaN lanes take the C library's asinf.
template <int N>
__attribute__((always_inline)) inline void Asin(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> ad = __builtin_elementwise_abs(d);
  const L<N> scalar = !(ad < 1.0);
  const D<N> root = __builtin_elementwise_sqrt(scalar ? 1.0 : 1.0 - d * d);
  D<N> a = AtanNonNegative<N>(ad / root);
  a = d < 0.0 ? -a : a;
  a = d == 0.0 ? d : a;  // keeps the sign of zero
  Store<N>(out, __builtin_convertvector(a, F<N>));
  QD_SIMD_SCALAR_LANES1(__builtin_asinf);
}

// acos x = atan(sqrt(1 - x^2) / |x|), reflected to pi - that for x < 0.
template <int N>
__attribute__((always_inline)) inline void Acos(float* out, const float* x) {
  const D<N> d = __builtin_convertvector(Load<N>(x), D<N>);
  const D<N> ad = __builtin_elementwise_abs(d);
  const L<N> scalar = !(ad < 1.0);
  const D<N> root = __builtin_elementwise_sqrt(scalar ? 1.0 : 1.0 - d * d);
  D<N> a = AtanNonNegative<N>(root / ad);
  a = d < 0.0 ? kPi - a : a;
  Store<N>(out, __builtin_convertvector(a, F<N>));
  QD_SIMD_SCALAR_LANES1(__builtin_acosf);
}

#undef QD_SIMD_SCALAR_LANES1

}  // namespace qd_simd

// Instantiates an entry-point macro for every lane count.
#define QD_SIMD_WIDTHS(M) M(4) M(8) M(16) M(32) M(64)

#define QD_SIMD_UNARY(name, Fn, n)                                 \
  QD_EXPORT void qd_##name##_f32x##n(float* out, const float* x) { \
    qd_simd::Fn<n>(out, x);                                        \
  }
#define QD_SIMD_UNARY_ALL(name, Fn) \
  QD_SIMD_UNARY(name, Fn, 4)        \
  QD_SIMD_UNARY(name, Fn, 8)        \
  QD_SIMD_UNARY(name, Fn, 16)       \
  QD_SIMD_UNARY(name, Fn, 32)       \
  QD_SIMD_UNARY(name, Fn, 64)

QD_SIMD_UNARY_ALL(sin, Sin)
QD_SIMD_UNARY_ALL(cos, Cos)
QD_SIMD_UNARY_ALL(tan, Tan)
QD_SIMD_UNARY_ALL(exp, Exp)
QD_SIMD_UNARY_ALL(log, Log)
QD_SIMD_UNARY_ALL(tanh, Tanh)
QD_SIMD_UNARY_ALL(asin, Asin)
QD_SIMD_UNARY_ALL(acos, Acos)

#define QD_SIMD_SINCOS(n)                                          \
  QD_EXPORT void qd_sincos_f32x##n(float* sin_out, float* cos_out, \
                                   const float* x) {               \
    qd_simd::SinCos<n>(sin_out, cos_out, x);                       \
  }
QD_SIMD_WIDTHS(QD_SIMD_SINCOS)

#define QD_SIMD_ATAN2(n)                                      \
  QD_EXPORT void qd_atan2_f32x##n(float* out, const float* y, \
                                  const float* x) {           \
    qd_simd::Atan2<n>(out, y, x);                             \
  }
QD_SIMD_WIDTHS(QD_SIMD_ATAN2)

#define QD_SIMD_POW(n)                                                        \
  QD_EXPORT void qd_pow_f32x##n(float* out, const float* x, const float* y) { \
    qd_simd::Pow<n>(out, x, y);                                               \
  }
QD_SIMD_WIDTHS(QD_SIMD_POW)

#undef QD_SIMD_UNARY
#undef QD_SIMD_UNARY_ALL
#undef QD_SIMD_POW
#undef QD_SIMD_ATAN2
#undef QD_SIMD_SINCOS
#undef QD_SIMD_WIDTHS

#endif  // QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_SIMD_MATH_H_
