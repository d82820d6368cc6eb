// A hand-written forward + reverse pass of the adstack benchmark's
// recurrence, v = sin(v) * a + x[i] for `iterations` steps per thread, with
// an explicit per-thread tape: the reference a compiler-generated gradient
// should stay close to. Prints the best time of a forward+reverse pass,
// scalar (the C library's sinf/cosf per thread) and, where the CPU has
// AVX-512, hand-vectorized: 16 threads per register, one, two or four
// registers per step (each register is a dependency chain of its own), a
// lane-wide tape, and sin/cos evaluated in f64 like the compiler's SIMD lanes
// (the same <= 1 ulp contract): the practical limit of that approach.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

// pi/2 as a double and the double nearest the rest: x - m pi/2 in two
// fused multiply-adds, the first exact, as the compiler runtime reduces.
constexpr double kPio2 = 1.5707963267948966;
constexpr double kPio2Tail = 6.123233995736766e-17;
constexpr double kInvPi = 0.3183098861837907;

#define AVX512 __attribute__((target("avx512f,avx512dq")))

// sin r, |r| <= pi/2: r P(r^2), the compiler runtime's fitted polynomial.
AVX512 __m512d SinPoly(__m512d r) {
  static const double kCoefficients[] = {
      -2.3868344578570344e-08, 2.7523970959481003e-06, -0.0001984083282081696,
      0.008333330720534821,    -0.1666666660882511,    0.9999999999788473};
  const __m512d r2 = _mm512_mul_pd(r, r);
  __m512d p = _mm512_set1_pd(kCoefficients[0]);
  for (int k = 1; k < 6; ++k)
    p = _mm512_fmadd_pd(p, r2, _mm512_set1_pd(kCoefficients[k]));
  return _mm512_mul_pd(r, p);
}

// x - m pi/2, then sin of it, negated where `negate`.
AVX512 __m512d SinOfReduced(__m512d x, __m512d m, __mmask8 negate) {
  __m512d r = _mm512_fnmadd_pd(m, _mm512_set1_pd(kPio2), x);
  r = _mm512_fnmadd_pd(m, _mm512_set1_pd(kPio2Tail), r);
  const __m512d s = SinPoly(r);
  return _mm512_mask_sub_pd(s, negate, _mm512_setzero_pd(), s);
}

AVX512 __mmask8 Odd(__m512d k) {
  return _mm512_test_epi64_mask(_mm512_cvtpd_epi64(k), _mm512_set1_epi64(1));
}

// sin x = (-1)^k sin(x - k pi).
AVX512 __m512d Sin8(__m512d x) {
  const __m512d k = _mm512_roundscale_pd(
      _mm512_mul_pd(x, _mm512_set1_pd(kInvPi)), _MM_FROUND_TO_NEAREST_INT);
  return SinOfReduced(x, _mm512_add_pd(k, k), Odd(k));
}

// cos x = (-1)^(h+1) sin(x - (h + 1/2) pi).
AVX512 __m512d Cos8(__m512d x) {
  const __m512d h = _mm512_roundscale_pd(
      _mm512_fmsub_pd(x, _mm512_set1_pd(kInvPi), _mm512_set1_pd(0.5)),
      _MM_FROUND_TO_NEAREST_INT);
  const __m512d m =
      _mm512_fmadd_pd(h, _mm512_set1_pd(2.0), _mm512_set1_pd(1.0));
  return SinOfReduced(x, m, static_cast<__mmask8>(~Odd(h)));
}

// f32 x 16 through two f64 x 8 halves.
template <__m512d (*fn)(__m512d)>
AVX512 __m512 Apply16(__m512 v) {
  const __m512d lo = fn(_mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  const __m512d hi = fn(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)),
                            _mm512_cvtpd_ps(hi), 1);
}

// Threads [first, first + 16 G) of the recurrence, G registers of 16 per
// step (G chains overlap their latencies): forward with a tape, then
// reverse; returns the sum of their losses.
template <int G>
AVX512 double VectorSteps(const float* x, float* grad, int first,
                          int iterations, float a, float* tape) {
  const __m512 va = _mm512_set1_ps(a);
  __m512 xi[G], v[G];
  for (int g = 0; g < G; ++g)
    v[g] = xi[g] = _mm512_loadu_ps(x + first + 16 * g);
  for (int j = 0; j < iterations; ++j) {
    for (int g = 0; g < G; ++g) {
      _mm512_store_ps(tape + 16 * (G * j + g), v[g]);
      v[g] = _mm512_fmadd_ps(Apply16<Sin8>(v[g]), va, xi[g]);
    }
  }
  double loss = 0;
  for (int g = 0; g < G; ++g) {
    float losses[16];
    _mm512_storeu_ps(losses, v[g]);
    for (float l : losses)
      loss += l;
  }
  __m512 gv[G], gx[G];
  for (int g = 0; g < G; ++g) {
    gv[g] = _mm512_set1_ps(1.0f);
    gx[g] = _mm512_setzero_ps();
  }
  for (int j = iterations - 1; j >= 0; --j) {
    for (int g = 0; g < G; ++g) {
      gx[g] = _mm512_add_ps(gx[g], gv[g]);
      const __m512 c = Apply16<Cos8>(_mm512_load_ps(tape + 16 * (G * j + g)));
      gv[g] = _mm512_mul_ps(_mm512_mul_ps(gv[g], c), va);
    }
  }
  for (int g = 0; g < G; ++g)
    _mm512_storeu_ps(grad + first + 16 * g, _mm512_add_ps(gx[g], gv[g]));
  return loss;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tape_reference THREADS ITERATIONS WORKERS\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  const int iterations = std::atoi(argv[2]);
  const int workers = std::max(1, std::atoi(argv[3]));
  const float a = 0.9f;
  std::vector<float> x(n), grad(n);
  for (int i = 0; i < n; ++i)
    x[i] = 0.1f + 0.5f * i / n;
  std::vector<std::vector<float>> tapes(workers,
                                        std::vector<float>(iterations));
  std::vector<double> partial(workers);

  auto run = [&](int w) {
    std::vector<float>& tape = tapes[w];
    double loss = 0;
    for (int i = w; i < n; i += workers) {
      float v = x[i];
      for (int j = 0; j < iterations; ++j) {
        tape[j] = v;
        v = std::sin(v) * a + x[i];
      }
      loss += v;
      float g = 1.0f, gx = 0.0f;
      for (int j = iterations - 1; j >= 0; --j) {
        gx += g;
        g = g * std::cos(tape[j]) * a;
      }
      grad[i] = gx + g;
    }
    partial[w] = loss;
  };

  // G registers of 16 threads per step.
  auto run_vector = [&](int w, auto registers) {
    constexpr int G = decltype(registers)::value;
    std::vector<float> storage(16 * G * iterations + 16);
    float* tape = reinterpret_cast<float*>(
        (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t{63});
    double loss = 0;
    for (int first = 16 * G * w; first + 16 * G <= n;
         first += 16 * G * workers) {
      loss += VectorSteps<G>(x.data(), grad.data(), first, iterations, a, tape);
    }
    partial[w] = loss;
  };

  auto time_best = [&](auto body) {
    double best = 1e30;
    for (int repeat = 0; repeat < 5; ++repeat) {
      auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      for (int w = 1; w < workers; ++w)
        threads.emplace_back(body, w);
      body(0);
      for (auto& t : threads)
        t.join();
      best = std::min(best, std::chrono::duration<double>(
                                std::chrono::steady_clock::now() - start)
                                .count());
    }
    double checksum = 0;
    for (int i = 0; i < n; ++i)
      checksum += grad[i];
    return std::make_pair(best, checksum);
  };

  auto scalar = time_best(run);
  std::printf("seconds=%.9f checksum=%.6f\n", scalar.first, scalar.second);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      n % (64 * workers) == 0) {
    auto one = time_best(
        [&](int w) { run_vector(w, std::integral_constant<int, 1>()); });
    std::printf("avx512_seconds=%.9f checksum=%.6f\n", one.first, one.second);
    auto two = time_best(
        [&](int w) { run_vector(w, std::integral_constant<int, 2>()); });
    std::printf("avx512x2_seconds=%.9f checksum=%.6f\n", two.first, two.second);
    auto four = time_best(
        [&](int w) { run_vector(w, std::integral_constant<int, 4>()); });
    std::printf("avx512x4_seconds=%.9f checksum=%.6f\n", four.first,
                four.second);
  } else {
    std::printf("avx512_seconds=unavailable (no AVX-512F/DQ on this CPU)\n");
  }
  return 0;
}
