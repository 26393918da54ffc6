#pragma once
// Float math the compiler vectorises: exp as Cephes' expf (range reduction to [-ln2/2, ln2/2], a
// polynomial, the exponent put in by bits; within 2 ulp of the correctly rounded float over the whole
// range), and the tanh-GELU through a sigmoid. std::exp and std::tanh are calls into libm that no loop
// vectorises: they were 38% of a transformer step on the CPU (issue #20). Branch-free, so that a loop of
// them becomes SIMD code (each loop that uses them says `#pragma omp simd`).
//
// TS_SIMD_CLONES compiles a function for AVX-512, AVX2 + FMA and the x86-64 baseline, and picks one at
// load time (GCC's target_clones): the binary stays portable and runs wide where the CPU can. The kernels
// are compiled with -ffp-contract=off and sum through blockedSum, so every clone computes the same IEEE
// operations in the same order: the same bits on every x86-64 machine, whichever clone runs.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define TS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TS_SIMD_CLONES
#endif

namespace ts::cpu::vmath {

// e^c for c in [kMin, kMax]: n = round(c / ln2), r = c - n ln2 in [-ln2/2, ln2/2] (ln2 in two parts), e^r
// by Cephes' polynomial, returned apart from 2^n. The multiply-adds are explicit std::fma: one rounding each,
// the same on every clone (the AVX2 and AVX-512 ones use the instruction; the baseline one calls libm's fmaf,
// which rounds the same), and half the operations of a separate multiply and add, where the kernels are
// otherwise compiled with -ffp-contract=off so that no other expression is fused differently per clone.
struct ExpParts {
  float p;         // e^r
  std::int32_t n;  // the power of two
};
constexpr float kExpMin = -87.3365479f;  // e^x below it leaves the normal floats
constexpr float kExpMax = 88.7228317f;   // e^x above it overflows
// kPrecise: Cephes' polynomial, degree 7 (exp's 2-ulp promise); otherwise a degree-5 minimax fit of e^r on
// [-ln2/2, ln2/2] (within 1.4 ulp; two multiply-adds fewer), where e^r is an intermediate of a sigmoid.
template <bool kPrecise = true>
inline ExpParts expParts(float c) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  // n = round(c / ln2) by the 1.5 * 2^23 trick (round to nearest, vectorises where rintf may not).
  constexpr float kRound = 12582912.0f;
  const float n = std::fma(c, kLog2e, kRound) - kRound;
  const float r = std::fma(n, -kLn2Lo, std::fma(n, -kLn2Hi, c));
  float p;
  if constexpr (kPrecise) {
    p = 1.9875691500e-4f;
    p = std::fma(p, r, 1.3981999507e-3f);
    p = std::fma(p, r, 8.3334519073e-3f);
    p = std::fma(p, r, 4.1665795894e-2f);
    p = std::fma(p, r, 1.6666665459e-1f);
    p = std::fma(p, r, 5.0000001201e-1f);
  } else {
    p = 8.3125252277e-3f;
    p = std::fma(p, r, 4.1890114546e-2f);
    p = std::fma(p, r, 1.6667114198e-1f);
    p = std::fma(p, r, 4.9999231100e-1f);
  }
  p = std::fma(p, r * r, r) + 1.0f;
  return {p, static_cast<std::int32_t>(n)};
}
inline float pow2(std::int32_t n) { return std::bit_cast<float>((n + 127) << 23); }  // n in [-126, 127]

// e^x in float, within 2 ulp of the correctly rounded float over the whole range. Below kExpMin it is 0,
// above kExpMax +inf, NaN stays NaN.
inline float exp(float x) {
  // Far below kExpMin (a masked score, -inf) the polynomial runs on 0 instead: clamped to kExpMin, its
  // scaling would make a denormal, which costs a microcode assist per vector before the select drops it.
  const auto [p, n] = expParts(x < kExpMin ? 0.0f : std::min(x, kExpMax));
  // 2^n in two halves, each a normal float over n's range [-126, 128] (2^128 itself is not a float).
  const std::int32_t a = n >> 1;
  const float y = p * pow2(a) * pow2(n - a);
  float e = x < kExpMin ? 0.0f : y;
  e = x > kExpMax ? __builtin_inff() : e;
  return x != x ? x : e;
}

// GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x sigmoid(2u):
// the same function (1 + tanh(u) = 2 sigmoid(2u)) without the cancellation of 1 + tanh(u) for negative x.
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;
// sigmoid(2u) = 1 / (1 + e^z), z = -2u: the denominator 1 + e^z needs no infinities from exp. Where
// z > kSigmoidZeroAt it is taken as +inf (so x / it is 0, never a denormal, and x = -inf gives NaN as
// 0.5 x (1 + tanh(u)) does); below -kSigmoidZeroAt it is 1 (e^z < 2^-24 from z < -17 on). So e^z is one
// polynomial and one scaling with no edge cases and never a denormal (each costs a microcode assist): the
// GEMM epilogue's GELU (issue #20) costs a third of what it did through exp() above.
inline float geluDenominator(float x) {
  constexpr float kSigmoidZeroAt = 87.0f;             // e^87 and e^-87 are normal floats
  constexpr float kMinus2Scale = -2.0f * kGeluScale;  // exact: a power of two times the float
  const float z = std::fma(kGeluCubic * x * x, x, x) * kMinus2Scale;
  const float c = z > -kSigmoidZeroAt ? z : -kSigmoidZeroAt;  // each one vmaxps / vminps (NaN: 87, x carries it)
  const auto [p, n] = expParts<false>(c < kSigmoidZeroAt ? c : kSigmoidZeroAt);
  return z > kSigmoidZeroAt ? __builtin_inff() : 1.0f + p * pow2(n);
}
inline float geluSigmoid(float x) { return 1.0f / geluDenominator(x); }
inline float gelu(float x) { return x / geluDenominator(x); }
// d gelu / dx = s + 2 x s (1 - s) u'(x), s = sigmoid(2u), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
inline float geluGrad(float x) {
  const float s = geluSigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
}

// The float64 sum of f(i) over [0, n) in a fixed order: 32 interleaved partial sums, then those in order.
// The vector loop over the 32 lanes is the same arithmetic at any SIMD width (8, 4 or 2 float64 lanes per
// register), where a `reduction` clause would sum in an order that depends on the width. 32, not 16: four
// AVX-512 accumulators, so four add chains run at once (batch norm's sums were latency-bound on two).
template <class F>
inline double blockedSum(std::size_t n, F&& f) {
  constexpr std::size_t kLanes = 32;
  double acc[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  }
  for (std::size_t j = 0; i < n; ++i, ++j) acc[j] += f(i);
  double s = 0;
  for (double a : acc) s += a;
  return s;
}

}  // namespace ts::cpu::vmath
