// The training ops of kernels/cuda/training_ops.cu against their CPU functions (kernels/cpu/cpu_ops.h) on random
// inputs of awkward sizes (one element, not multiples of 32, ~1e6), backward ops accumulating into random
// starting values. Tolerances, per op:
//   - exact ops (ReLU, scale, the head permutes, the 16-bit rounding, pooling forward, embedding forward,
//     dwpe): bit-equal;
//   - ops that repeat the CPU's arithmetic step by step (axpy, Adam, RMSprop, LAMB's m / v / update): bit-equal
//     where the CPU build does not fuse multiply-adds (x86-64 without FMA, the default), else 1e-6;
//   - sums taken in another order: float64 sums 1e-12 relative (sum of squares); float sums 1e-6 of the sum
//     of the terms' magnitudes (bias gradient, dwte, max-pool backward: cancellation makes a plain relative
//     error meaningless); batch-norm and average-pool outputs, computed in float64 from reordered sums, 1e-5
//     (max |got - want| / max(1, |want|)).
// Skips, saying why, where no GPU is usable; one test (the CPU rounding against CUDA's own host-side
// conversions, which the kernels mirror) needs none.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/specs/kernel_op.h"  // randomInputs
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

// Whether the CPU reference rounds every float operation on its own (no contracted multiply-adds), as the
// kernels do: then the step-by-step ops must be bit-equal.
#if (defined(__x86_64__) || defined(__i386__)) && !defined(__FMA__)
constexpr bool kCpuRoundsEachStep = true;
#else
constexpr bool kCpuRoundsEachStep = false;
#endif

// Waits for the queued kernels, so that a failure is reported at the op that caused it.
void sync() { CUDA_CHECK(cudaDeviceSynchronize()); }

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
std::string hexBits(float f) {  // AssertionResult formats each << on its own, so no std::hex
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(bits(f)));
  return buf;
}
float fromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

::testing::AssertionResult bitEqual(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]) && bad++ == 0) first = i;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ in their bits; first at " << first
                                       << ": got " << got[first] << " (" << hexBits(got[first]) << ") want " << want[first]
                                       << " (" << hexBits(want[first]) << ")";
}
::testing::AssertionResult intEqual(const std::vector<int>& got, const std::vector<int>& want) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << " want " << want[i];
  return ::testing::AssertionSuccess();
}
// max |got - want| / max(1, |want|) <= tol; a NaN or inf got fails.
::testing::AssertionResult close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e =
        std::isfinite(got[i]) ? std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(double(want[i]))) : INFINITY;
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  if (worst <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "relative error " << worst << " > " << tol << " at " << at << " of " << got.size()
                                       << ": got " << got[at] << " want " << want[at];
}
// Sums in another order: |got - want| <= tol * scale, scale = the sum of the magnitudes of the terms.
::testing::AssertionResult sumClose(const std::vector<float>& got, const std::vector<float>& want,
                                    const std::vector<float>& scale, double tol) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - want[i]);
    if (!(e <= tol * std::max(double(scale[i]), 1e-30)))
      return ::testing::AssertionFailure() << "element " << i << " of " << got.size() << ": got " << got[i] << " want " << want[i]
                                           << ", error " << e << " > " << tol << " x " << scale[i];
  }
  return ::testing::AssertionSuccess();
}
// The step-by-step ops: bit-equal where the CPU rounds each step, else within tol.
::testing::AssertionResult stepwise(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  return kCpuRoundsEachStep ? bitEqual(got, want) : close(got, want, tol);
}

std::vector<float> absOf(std::vector<float> v) {
  for (float& x : v) x = std::fabs(x);
  return v;
}

const std::vector<std::size_t> kSizes = {1, 1000, (std::size_t{1} << 20) + 3};

// Random float bit patterns (every exponent, NaNs with payloads, infinities, subnormals) and the special
// values of the 16-bit formats: the halfway cases, the float16 overflow edge, its subnormal range.
std::vector<float> roundingInputs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(n);
  for (auto& v : x) v = fromBits(static_cast<std::uint32_t>(rng()));
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            -NAN,
                            fromBits(0x7f800001u),
                            fromBits(0xffc12345u),
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            -65520.0f,
                            65536.0f,
                            1e9f,
                            6.0e-8f,
                            2.98e-8f,
                            2.9802322e-8f,
                            5.9604645e-8f,
                            8.940697e-8f,
                            6.1035156e-5f,
                            6.1e-5f,
                            1e-40f,
                            -1e-45f,
                            fromBits(0x3f808000u),
                            fromBits(0x3f818000u),
                            fromBits(0x3f807fffu),
                            fromBits(0x7f7fffffu),
                            fromBits(0xff7fffffu),
                            1.0009765625f,
                            1.00048828125f,
                            1.00146484375f};
  for (std::size_t i = 0; i < std::size(specials) && i < n; ++i) x[(i * 7919) % n] = specials[i];
  return x;
}

}  // namespace

TEST(CudaTrainingOps, CpuRoundingIsTheCudaIntrinsicsRounding) {
  // Needs no GPU: the kernels repeat the CPU's conversions bit for bit; here those conversions meet CUDA's
  // own (host-side) __float2bfloat16_rn / __float2half_rn on every non-NaN input.
  const auto x = roundingInputs(1 << 20, 1);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;  // NaN encodings differ (the CPU keeps the payload); NaN either way
    ASSERT_EQ(floatToBFloat16(x[i]), __bfloat16_as_ushort(__float2bfloat16_rn(x[i]))) << "bfloat16 of " << hexBits(x[i]);
    ASSERT_EQ(floatToHalf(x[i]), __half_as_ushort(__float2half_rn(x[i]))) << "float16 of " << hexBits(x[i]);
  }
}

TEST(CudaTrainingOps, ElementwiseAgainstTheCpu) {
  REQUIRE_GPU();
  for (std::size_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto x = randomInputs(n, 1, -3, 3);
    const auto dy = randomInputs(n, 2), start = randomInputs(n, 3);
    x[0] = -0.0f;
    if (n > 2) x[n / 2] = NAN;  // NaN and -0 give +0 forward and no gradient, as on the CPU
    Dev<float> dX(x), dDY(dy);
    {
      std::vector<float> y(n);
      cpu::reluForward(y.data(), x.data(), n);
      Dev<float> dY(n);
      cuda::reluForward(dY.p, dX.p, n, nullptr);
      sync();
      EXPECT_TRUE(bitEqual(dY.host(), y)) << "reluForward";
      auto dx = start;
      Dev<float> dDX(dx);
      cpu::reluBackward(dx.data(), x.data(), dy.data(), n);
      cuda::reluBackward(dDX.p, dX.p, dDY.p, n, nullptr);
      sync();
      EXPECT_TRUE(bitEqual(dDX.host(), dx)) << "reluBackward";
    }
    {
      auto y = start;
      Dev<float> dY(y);
      cpu::axpy(y.data(), dy.data(), -0.37f, n);
      cuda::axpy(dY.p, dDY.p, -0.37f, n, nullptr);
      sync();
      EXPECT_TRUE(stepwise(dY.host(), y, 1e-6)) << "axpy";
      cpu::scale(y.data(), 1.7f, n);
      cuda::scale(dY.p, 1.7f, n, nullptr);
      sync();
      EXPECT_TRUE(bitEqual(dY.host(), y)) << "scale";
    }
    {
      const auto big = randomInputs(n, 4, -40, 40);
      Dev<float> dBig(big);
      const double want = cpu::sumOfSquares(big.data(), n);
      const double got = cuda::sumOfSquares(dBig.p, n, nullptr);
      EXPECT_LE(std::fabs(got - want), 1e-12 * want) << "sumOfSquares: got " << got << " want " << want;
    }
  }
  EXPECT_EQ(cuda::sumOfSquares(nullptr, 0, nullptr), 0.0);
}

TEST(CudaTrainingOps, RoundingAgainstTheCpu) {
  REQUIRE_GPU();
  for (std::size_t n : kSizes) {
    const auto x = roundingInputs(n, 2 + static_cast<unsigned>(n));
    auto b = x, h = x;
    Dev<float> dB(x), dH(x);
    cpu::roundToBFloat16(b.data(), n);
    cpu::roundToHalf(h.data(), n);
    cuda::roundToBFloat16(dB.p, n, nullptr);
    cuda::roundToHalf(dH.p, n, nullptr);
    sync();
    EXPECT_TRUE(bitEqual(dB.host(), b)) << "roundToBFloat16 n = " << n;
    EXPECT_TRUE(bitEqual(dH.host(), h)) << "roundToHalf n = " << n;
  }
}

TEST(CudaTrainingOps, BiasBackwardAgainstTheCpu) {
  REQUIRE_GPU();
  // The last shape has more than 65535 slices of 256 rows: the slices stride over gridDim.y.
  for (auto [N, C] :
       {std::pair<std::size_t, std::size_t>{1, 1}, {3, 33}, {1000, 769}, {4099, 1000}, {(std::size_t{1} << 24) + 1001, 1}}) {
    const auto dout = randomInputs(N * C, 5);
    auto db = randomInputs(C, 6);
    auto scale = absOf(db);
    cpu::biasBackward(scale.data(), absOf(dout).data(), N, C);
    Dev<float> dDout(dout), dDb(db);
    cpu::biasBackward(db.data(), dout.data(), N, C);
    cuda::biasBackward(dDb.p, dDout.p, N, C, nullptr);
    sync();
    EXPECT_TRUE(sumClose(dDb.host(), db, scale, 1e-6)) << "biasBackward " << N << "x" << C;
  }
}

TEST(CudaTrainingOps, BatchnormAgainstTheCpu) {
  REQUIRE_GPU();
  for (auto [N, C, HW] : {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 1},
                          {2, 3, 5},
                          {7, 33, 49},
                          {5, 4, 1},
                          {32, 64, 784},
                          {3, 2, 100003}}) {
    SCOPED_TRACE(std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW));
    const std::size_t n = N * C * HW;
    const auto x = randomInputs(n, 7, -2, 3), w = randomInputs(C, 8), b = randomInputs(C, 9);
    auto rm = randomInputs(C, 10), rv = randomInputs(C, 11, 0.5f, 2);
    std::vector<float> y(n), mean(C), rstd(C);
    Dev<float> dX(x), dW(w), dB(b), dRm(rm), dRv(rv), dY(n), dMean(C), dRstd(C);
    const bool nulls = N == 5;  // one shape without the optional outputs
    cpu::batchnormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, HW, 1e-5f,
                          nulls ? nullptr : rm.data(), nulls ? nullptr : rv.data(), 0.1f);
    cuda::batchnormForward(dY.p, nulls ? nullptr : dMean.p, nulls ? nullptr : dRstd.p, dX.p, dW.p, dB.p, N, C, HW, 1e-5f,
                           nulls ? nullptr : dRm.p, nulls ? nullptr : dRv.p, 0.1f, nullptr);
    sync();
    EXPECT_TRUE(close(dY.host(), y, 1e-5)) << "batchnormForward out";
    if (!nulls) {
      EXPECT_TRUE(close(dMean.host(), mean, 1e-6)) << "batchnormForward mean";
      EXPECT_TRUE(close(dRstd.host(), rstd, 1e-5)) << "batchnormForward rstd";
      EXPECT_TRUE(close(dRm.host(), rm, 1e-6)) << "batchnormForward running mean";
      EXPECT_TRUE(close(dRv.host(), rv, 1e-5)) << "batchnormForward running var";
    } else {
      EXPECT_TRUE(bitEqual(dRm.host(), rm)) << "running mean untouched";
    }
    // The backward reads the CPU's statistics on both sides.
    const auto dy = randomInputs(n, 12);
    auto dx = randomInputs(n, 13), dw = randomInputs(C, 14), db = randomInputs(C, 15);
    Dev<float> dDy(dy), dDx(dx), dDw(dw), dDb(db), dM(mean), dR(rstd);
    cpu::batchnormBackward(nulls ? nullptr : dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                           rstd.data(), N, C, HW);
    cuda::batchnormBackward(nulls ? nullptr : dDx.p, dDw.p, dDb.p, dDy.p, dX.p, dW.p, dM.p, dR.p, N, C, HW, nullptr);
    sync();
    EXPECT_TRUE(close(dDx.host(), dx, 1e-5)) << "batchnormBackward dinp";
    EXPECT_TRUE(close(dDw.host(), dw, 1e-5)) << "batchnormBackward dweight";
    EXPECT_TRUE(close(dDb.host(), db, 1e-5)) << "batchnormBackward dbias";
  }
}

TEST(CudaTrainingOps, PoolingAgainstTheCpu) {
  REQUIRE_GPU();
  for (auto [N, C, HW] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{1, 1, 1}, {3, 7, 49}, {64, 512, 49}, {2, 3, 100003}}) {
    SCOPED_TRACE("avg pool " + std::to_string(N) + "x" + std::to_string(C) + "x" + std::to_string(HW));
    const auto x = randomInputs(N * C * HW, 16), dy = randomInputs(N * C, 17);
    auto dx = randomInputs(N * C * HW, 18);
    std::vector<float> y(N * C);
    Dev<float> dX(x), dY(N * C), dDy(dy), dDx(dx);
    cpu::globalAvgPoolForward(y.data(), x.data(), N, C, HW);
    cuda::globalAvgPoolForward(dY.p, dX.p, N, C, HW, nullptr);
    cpu::globalAvgPoolBackward(dx.data(), dy.data(), N, C, HW);
    cuda::globalAvgPoolBackward(dDx.p, dDy.p, N, C, HW, nullptr);
    sync();
    EXPECT_TRUE(close(dY.host(), y, 1e-6)) << "globalAvgPoolForward";
    EXPECT_TRUE(bitEqual(dDx.host(), dx)) << "globalAvgPoolBackward";
  }
  struct Pool {
    int N, C, H, W, k, stride, pad;
  };
  // Overlapping windows, non-overlapping ones, a window wholly in the padding (argmax -1), and a large one.
  for (const Pool s :
       {Pool{1, 1, 1, 1, 1, 1, 0}, Pool{2, 3, 7, 9, 3, 2, 1}, Pool{4, 5, 32, 33, 2, 2, 0}, Pool{1, 2, 5, 5, 3, 1, 1},
        Pool{1, 1, 2, 2, 2, 1, 2}, Pool{3, 1, 11, 4, 4, 3, 2}, Pool{8, 64, 56, 56, 3, 2, 1}}) {
    SCOPED_TRACE("max pool " + std::to_string(s.N) + "x" + std::to_string(s.C) + "x" + std::to_string(s.H) + "x" +
                 std::to_string(s.W) + " k " + std::to_string(s.k) + " stride " + std::to_string(s.stride) + " pad " +
                 std::to_string(s.pad));
    const int P = (s.H + 2 * s.pad - s.k) / s.stride + 1, Q = (s.W + 2 * s.pad - s.k) / s.stride + 1;
    const std::size_t in = std::size_t(s.N) * s.C * s.H * s.W, out = std::size_t(s.N) * s.C * P * Q;
    auto x = randomInputs(in, 19);
    for (auto& v : x) v = std::round(v * 4) / 4;  // many ties: the first in scan order must win
    std::vector<float> y(out);
    std::vector<int> arg(out);
    cpu::maxPool2dForward(y.data(), arg.data(), x.data(), s.N, s.C, s.H, s.W, s.k, s.stride, s.pad);
    Dev<float> dX(x), dY(out);
    Dev<int> dArg(out);
    cuda::maxPool2dForward(dY.p, dArg.p, dX.p, s.N, s.C, s.H, s.W, s.k, s.stride, s.pad, nullptr);
    sync();
    EXPECT_TRUE(bitEqual(dY.host(), y)) << "maxPool2dForward out";
    EXPECT_TRUE(intEqual(dArg.host(), arg)) << "maxPool2dForward argmax";
    const auto dy = randomInputs(out, 20);
    auto dx = randomInputs(in, 21);
    auto scale = absOf(dx);
    cpu::maxPool2dBackward(scale.data(), absOf(dy).data(), arg.data(), out);
    Dev<float> dDy(dy), dDx(dx);
    cpu::maxPool2dBackward(dx.data(), dy.data(), arg.data(), out);
    cuda::maxPool2dBackward(dDx.p, dDy.p, dArg.p, out, nullptr);
    sync();
    EXPECT_TRUE(sumClose(dDx.host(), dx, scale, 1e-6)) << "maxPool2dBackward";
  }
}

TEST(CudaTrainingOps, EmbeddingAgainstTheCpu) {
  REQUIRE_GPU();
  // (B, T, C, vocabulary): a vocabulary of 1 or 2 makes every row of dwte collect many atomic additions.
  for (auto [B, T, C, V] : {std::tuple<std::size_t, std::size_t, std::size_t, int>{1, 1, 1, 1},
                            {3, 5, 33, 7},
                            {2, 3, 1000, 2},
                            {4, 256, 768, 1000},
                            {64, 64, 3, 1}}) {
    SCOPED_TRACE(std::to_string(B) + "x" + std::to_string(T) + "x" + std::to_string(C) + " V " + std::to_string(V));
    std::mt19937 rng(static_cast<unsigned>(B * 131 + T));
    std::vector<int> tokens(B * T);
    for (int& t : tokens) t = static_cast<int>(rng() % static_cast<unsigned>(V));
    const auto wte = randomInputs(std::size_t(V) * C, 22), wpe = randomInputs(T * C, 23);
    std::vector<float> y(B * T * C);
    cpu::embeddingForward(y.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    Dev<int> dTok(tokens);
    Dev<float> dWte(wte), dWpe(wpe), dY(B * T * C);
    cuda::embeddingForward(dY.p, dTok.p, dWte.p, dWpe.p, B, T, C, nullptr);
    sync();
    EXPECT_TRUE(bitEqual(dY.host(), y)) << "embeddingForward";
    const auto dout = randomInputs(B * T * C, 24);
    auto gte = randomInputs(std::size_t(V) * C, 25), gpe = randomInputs(T * C, 26);
    auto scale = absOf(gte);
    cpu::embeddingBackward(scale.data(), nullptr, absOf(dout).data(), tokens.data(), B, T, C);
    Dev<float> dDout(dout), dGte(gte), dGpe(gpe);
    cpu::embeddingBackward(gte.data(), gpe.data(), dout.data(), tokens.data(), B, T, C);
    cuda::embeddingBackward(dGte.p, dGpe.p, dDout.p, dTok.p, B, T, C, nullptr);
    sync();
    EXPECT_TRUE(sumClose(dGte.host(), gte, scale, 1e-6)) << "embeddingBackward dwte";
    EXPECT_TRUE(bitEqual(dGpe.host(), gpe)) << "embeddingBackward dwpe";
    // Either gradient may be null.
    cpu::embeddingBackward(nullptr, gpe.data(), dout.data(), tokens.data(), B, T, C);
    cuda::embeddingBackward(nullptr, dGpe.p, dDout.p, dTok.p, B, T, C, nullptr);
    cuda::embeddingBackward(dGte.p, nullptr, dDout.p, dTok.p, B, T, C, nullptr);
    cpu::embeddingBackward(gte.data(), nullptr, dout.data(), tokens.data(), B, T, C);
    sync();
    EXPECT_TRUE(bitEqual(dGpe.host(), gpe)) << "embeddingBackward dwpe only";
    EXPECT_TRUE(sumClose(dGte.host(), gte, scale, 2e-6)) << "embeddingBackward dwte only";
  }
}

TEST(CudaTrainingOps, OptimizersAgainstTheCpu) {
  REQUIRE_GPU();
  for (std::size_t n : kSizes) {
    SCOPED_TRACE("n = " + std::to_string(n));
    const auto g = randomInputs(n, 27);
    Dev<float> dG(g);
    for (int t : {1, 7}) {
      auto p = randomInputs(n, 28), m = randomInputs(n, 29, -0.1f, 0.1f), v = randomInputs(n, 30, 0, 0.1f);
      Dev<float> dP(p), dM(m), dV(v);
      cpu::adamUpdate(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t);
      cuda::adamUpdate(dP.p, dG.p, dM.p, dV.p, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, t, nullptr);
      sync();
      EXPECT_TRUE(stepwise(dP.host(), p, 1e-6)) << "adam params, t = " << t;
      EXPECT_TRUE(stepwise(dM.host(), m, 1e-6)) << "adam m, t = " << t;
      EXPECT_TRUE(stepwise(dV.host(), v, 1e-6)) << "adam v, t = " << t;
    }
    {
      auto p = randomInputs(n, 31), sq = randomInputs(n, 32, 0, 0.1f);
      Dev<float> dP(p), dSq(sq);
      cpu::rmspropUpdate(p.data(), g.data(), sq.data(), n, 1e-2f, 0.99f, 1e-8f, 0.01f);
      cuda::rmspropUpdate(dP.p, dG.p, dSq.p, n, 1e-2f, 0.99f, 1e-8f, 0.01f, nullptr);
      sync();
      EXPECT_TRUE(stepwise(dP.host(), p, 1e-6)) << "rmsprop params";
      EXPECT_TRUE(stepwise(dSq.host(), sq, 1e-6)) << "rmsprop sq";
    }
    // LAMB: random parameters, then all-zero ones (||p|| = 0: trust 1). The trust ratio comes from float64
    // norms summed in another order, so the parameters may differ in their last bit.
    for (bool zero : {false, true}) {
      auto p = zero ? std::vector<float>(n, 0.0f) : randomInputs(n, 33), m = randomInputs(n, 34, -0.1f, 0.1f),
           v = randomInputs(n, 35, 0, 0.1f);
      std::vector<float> u(n);
      Dev<float> dP(p), dM(m), dV(v), dU(n);
      cpu::lambUpdate(p.data(), g.data(), m.data(), v.data(), u.data(), n, 1e-3f, 0.9f, 0.999f, 1e-6f, 0.01f, 3);
      cuda::lambUpdate(dP.p, dG.p, dM.p, dV.p, dU.p, n, 1e-3f, 0.9f, 0.999f, 1e-6f, 0.01f, 3, nullptr);
      sync();
      EXPECT_TRUE(close(dP.host(), p, 1e-6)) << "lamb params" << (zero ? " (zero)" : "");
      EXPECT_TRUE(stepwise(dM.host(), m, 1e-6)) << "lamb m";
      EXPECT_TRUE(stepwise(dV.host(), v, 1e-6)) << "lamb v";
      EXPECT_TRUE(stepwise(dU.host(), u, 1e-6)) << "lamb update";
    }
    // The two-pass LAMB (a tensor in parts on several ranks): the sums come back to the host, the step
    // recomputes the direction.
    {
      auto p = randomInputs(n, 36), m = randomInputs(n, 37, -0.1f, 0.1f), v = randomInputs(n, 38, 0, 0.1f);
      Dev<float> dP(p), dM(m), dV(v);
      double cpuSums[2] = {0, 0}, gpuSums[2] = {0, 0};
      cpu::lambMoments(p.data(), g.data(), m.data(), v.data(), n, 0.9f, 0.999f, 1e-6f, 0.01f, 3, cpuSums);
      cuda::lambMoments(dP.p, dG.p, dM.p, dV.p, n, 0.9f, 0.999f, 1e-6f, 0.01f, 3, gpuSums, nullptr);
      EXPECT_NEAR(gpuSums[0], cpuSums[0], 1e-9 * cpuSums[0]);
      EXPECT_NEAR(gpuSums[1], cpuSums[1], 1e-9 * cpuSums[1]);
      const double trust = cpu::lambTrust(cpuSums[0], cpuSums[1]);
      cpu::lambApply(p.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 1e-6f, 0.01f, 3, trust);
      cuda::lambApply(dP.p, dM.p, dV.p, n, 1e-3f, 0.9f, 0.999f, 1e-6f, 0.01f, 3, trust, nullptr);
      sync();
      EXPECT_TRUE(stepwise(dP.host(), p, 1e-6)) << "lamb in parts: params";
      EXPECT_TRUE(stepwise(dM.host(), m, 1e-6)) << "lamb in parts: m";
      EXPECT_TRUE(stepwise(dV.host(), v, 1e-6)) << "lamb in parts: v";
    }
  }
}

TEST(CudaTrainingOps, HeadPermutesAgainstTheCpu) {
  REQUIRE_GPU();
  struct Shape {
    int B, T, NH, D, col0, W;
  };
  // The q, k and v slices of a fused QKV row (col0 = 0, C, 2C; W = 3C), odd sizes, and a GPT-2-small batch.
  for (const Shape s : {Shape{1, 1, 1, 1, 0, 1}, Shape{2, 5, 3, 7, 0, 63}, Shape{2, 5, 3, 7, 21, 63}, Shape{2, 5, 3, 7, 42, 63},
                        Shape{3, 17, 2, 5, 3, 14}, Shape{4, 128, 12, 64, 768, 2304}}) {
    SCOPED_TRACE("B " + std::to_string(s.B) + " T " + std::to_string(s.T) + " NH " + std::to_string(s.NH) + " D " +
                 std::to_string(s.D) + " col0 " + std::to_string(s.col0) + " W " + std::to_string(s.W));
    const std::size_t heads = std::size_t(s.B) * s.NH * s.T * s.D, rows = std::size_t(s.B) * s.T * s.W;
    const auto r = randomInputs(rows, 36);
    std::vector<float> h(heads);
    cpu::headsFromRows(h.data(), r.data(), s.B, s.T, s.NH, s.D, s.col0, s.W);
    Dev<float> dR(r), dH(heads);
    cuda::headsFromRows(dH.p, dR.p, s.B, s.T, s.NH, s.D, s.col0, s.W, nullptr);
    sync();
    EXPECT_TRUE(bitEqual(dH.host(), h)) << "headsFromRows";
    const auto h2 = randomInputs(heads, 37);
    auto r2 = randomInputs(rows, 38);  // the columns outside [col0, col0 + NH*D) must keep these
    Dev<float> dH2(h2), dR2(r2);
    cpu::rowsFromHeads(r2.data(), h2.data(), s.B, s.T, s.NH, s.D, s.col0, s.W);
    cuda::rowsFromHeads(dR2.p, dH2.p, s.B, s.T, s.NH, s.D, s.col0, s.W, nullptr);
    sync();
    EXPECT_TRUE(bitEqual(dR2.host(), r2)) << "rowsFromHeads";
  }
}

}  // namespace ts
