#pragma once
// Float math the compiler vectorises: exp as Cephes' expf (range reduction to [-ln2/2, ln2/2], a degree-6
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
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define TS_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TS_SIMD_CLONES
#endif

namespace ts::cpu::vmath {

// e^x in float. Below -87.33 (where e^x leaves the normal floats) it is 0, above 88.72 +inf, NaN stays NaN.
inline float exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMax = 88.7228317f, kMin = -87.3365479f;
  const float c = std::min(std::max(x, kMin), kMax);
  // n = round(c / ln2) by the 1.5 * 2^23 trick (round to nearest, vectorises where rintf may not).
  constexpr float kRound = 12582912.0f;
  const float n = (c * kLog2e + kRound) - kRound;
  const float r = (c - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two halves, each a normal float over n's range [-126, 128] (2^128 itself is not a float).
  const std::int32_t ni = static_cast<std::int32_t>(n), a = ni >> 1, b = ni - a;
  const float y = p * std::bit_cast<float>((a + 127) << 23) * std::bit_cast<float>((b + 127) << 23);
  float e = x < kMin ? 0.0f : y;
  e = x > kMax ? __builtin_inff() : e;
  return x != x ? x : e;
}

// GELU's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x * sigmoid(2u):
// the same function (1 + tanh(u) = 2 sigmoid(2u)) without the cancellation of 1 + tanh(u) for negative x.
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;
inline float geluSigmoid(float x) {  // sigmoid(2u)
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 1.0f / (1.0f + exp(-2.0f * u));
}
inline float gelu(float x) { return x * geluSigmoid(x); }
// d gelu / dx = s + 2 x s (1 - s) u'(x), s = sigmoid(2u), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
inline float geluGrad(float x) {
  const float s = geluSigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * kGeluScale * (1.0f + 3.0f * kGeluCubic * x * x);
}

// The float64 sum of f(i) over [0, n) in a fixed order: 16 interleaved partial sums, then those in order.
// The vector loop over the 16 lanes is the same arithmetic at any SIMD width (16, 8, 4 or 2 lanes), where a
// `reduction` clause would sum in an order that depends on the width.
template <class F>
inline double blockedSum(std::size_t n, F&& f) {
  constexpr std::size_t kLanes = 16;
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
