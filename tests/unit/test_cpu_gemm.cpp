// The CPU GEMM variants (strided batches, the bias / GELU epilogues) against a float64 reference written
// here from the definitions, at awkward sizes, every transpose, padded leading dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/convolution.h"  // haveOneDnn
#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"  // randomInputs: random data, never zeros

namespace ts {
namespace {

// Row-major element (i, j) of op(X), X stored with leading dimension ld.
double at(const float* X, int ld, bool trans, int i, int j) {
  return trans ? X[std::size_t(j) * ld + i] : X[std::size_t(i) * ld + j];
}

// alpha op(A) op(B) + beta C0 (+ bias[j]) (then GELU), one matrix, in float64.
std::vector<double> reference(bool ta, bool tb, int m, int n, int k, double alpha, const float* A, int lda, const float* B,
                              int ldb, double beta, const float* C0, int ldc, const float* bias, bool gelu) {
  std::vector<double> out(std::size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int p = 0; p < k; ++p) acc += at(A, lda, ta, i, p) * at(B, ldb, tb, p, j);
      double x = alpha * acc + beta * C0[std::size_t(i) * ldc + j] + (bias ? double(bias[j]) : 0.0);
      if (gelu) x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      out[std::size_t(i) * n + j] = x;
    }
  return out;
}

// Largest |got - want| / max(1, |want|) over the m x n matrix C (leading dimension ldc); NaN counts as +inf.
double maxRelErr(const float* C, int ldc, const std::vector<double>& want, int m, int n) {
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const double got = C[std::size_t(i) * ldc + j], w = want[std::size_t(i) * n + j];
      if (!std::isfinite(got)) return INFINITY;
      worst = std::max(worst, std::fabs(got - w) / std::max(1.0, std::fabs(w)));
    }
  return worst;
}

}  // namespace

TEST(CpuGemm, StridedBatchedMatchesFloat64PerMatrix) {
  for (auto [m, n, k, batch] :
       {std::tuple{1, 1, 1, 1}, std::tuple{7, 13, 5, 3}, std::tuple{37, 37, 64, 3}, std::tuple{33, 1, 17, 4}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        // Leading dimensions one longer than a row and strides with a gap, so that neither can be mistaken for packed.
        const int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 1, ldc = n + 1;
        const std::int64_t sA = std::int64_t(ta ? k : m) * lda + 3, sB = std::int64_t(tb ? n : k) * ldb + 5,
                           sC = std::int64_t(m) * ldc + 7;
        const auto A = randomInputs(std::size_t(sA) * batch, 1), B = randomInputs(std::size_t(sB) * batch, 2);
        auto C = randomInputs(std::size_t(sC) * batch, 3);
        const auto C0 = C;
        cpu::gemmStridedBatched(ta, tb, m, n, k, 1.5f, A.data(), lda, sA, B.data(), ldb, sB, 0.5f, C.data(), ldc, sC, batch);
        std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), Cd(C0.begin(), C0.end());
        cpu::gemmStridedBatched(ta, tb, m, n, k, 1.5, Ad.data(), lda, sA, Bd.data(), ldb, sB, 0.5, Cd.data(), ldc, sC, batch);
        for (int b = 0; b < batch; ++b) {
          const auto want = reference(ta, tb, m, n, k, 1.5, A.data() + b * sA, lda, B.data() + b * sB, ldb, 0.5,
                                      C0.data() + b * sC, ldc, nullptr, false);
          EXPECT_LT(maxRelErr(C.data() + b * sC, ldc, want, m, n), 1e-5 * std::sqrt(double(k)))
              << m << "x" << n << "x" << k << " b=" << b << " " << ta << tb;
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j)
              EXPECT_NEAR(Cd[b * sC + std::int64_t(i) * ldc + j], want[std::size_t(i) * n + j],
                          1e-12 * std::max(1.0, std::fabs(want[std::size_t(i) * n + j])));
        }
        // The gaps between matrices and after each row are left alone.
        for (int b = 0; b < batch; ++b)
          for (std::int64_t e = 0; e < sC; ++e) {
            const std::int64_t i = e / ldc, j = e % ldc;
            if (i >= m || j >= n) {
              EXPECT_EQ(C[b * sC + e], C0[b * sC + e]) << "batch " << b << " offset " << e;
            }
          }
      }
  }
}

// Dense calls with alpha 1 and beta 0 are the ones oneDNN's fused GEMM takes where the build has it; the
// others (alpha 1.25, beta 0.5, a padded C) run OpenBLAS and the pass over C.
TEST(CpuGemm, EpiloguesMatchFloat64) {
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{64, 65, 129}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int epilogue = 0; epilogue < 4; ++epilogue)
          for (float beta : {0.0f, 0.5f, -1.0f}) {  // -1: the dense call, alpha 1 and beta 0
            const bool dense = beta < 0, withBias = epilogue & 1, gelu = epilogue & 2;
            const float alpha = dense ? 1.0f : 1.25f;
            if (dense) beta = 0.0f;
            const int lda = ta ? m : k, ldb = tb ? k : n, ldc = dense ? n : n + 2;
            // Scaled so that the products are O(1) and GELU is tested where it bends, not only where it is ~x or ~0.
            auto A = randomInputs(std::size_t(ta ? k : m) * lda, 4), B = randomInputs(std::size_t(tb ? n : k) * ldb, 5);
            for (auto& x : A) x *= 2.0f / std::sqrt(float(k));
            const auto bias = randomInputs(std::size_t(n), 6);
            auto C = randomInputs(std::size_t(m) * ldc, 7);
            const auto C0 = C;
            if (beta == 0.0f)
              for (int i = 0; i < m; ++i)
                for (int j = 0; j < n; ++j) C[std::size_t(i) * ldc + j] = NAN;  // beta = 0: the old contents must not leak in
            cpu::gemmEpilogue(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc,
                              withBias ? bias.data() : nullptr, gelu);
            const auto want = reference(ta, tb, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C0.data(), ldc,
                                        withBias ? bias.data() : nullptr, gelu);
            EXPECT_LT(maxRelErr(C.data(), ldc, want, m, n), 1e-5 * std::sqrt(double(k)))
                << m << "x" << n << "x" << k << " " << ta << tb << " epilogue " << epilogue << " beta " << beta << " dense "
                << dense << " (" << cpu::gemmEpilogueImplementation(ta, tb, m, n, k, withBias, gelu) << ")";
            for (int i = 0; i < m; ++i)
              for (int j = n; j < ldc; ++j) {
                EXPECT_EQ(C[std::size_t(i) * ldc + j], C0[std::size_t(i) * ldc + j]);
              }
          }
  }
}

TEST(CpuGemm, TheEpilogueNamesWhatRunsIt) {
  const std::string fused = cpu::gemmEpilogueImplementation(false, false, 64, 65, 129, true, true);
  if (cpu::haveOneDnn())
    EXPECT_NE(fused.find("oneDNN inner product"), std::string::npos) << fused;
  else
    EXPECT_NE(fused.find("then a pass over C"), std::string::npos) << fused;
  EXPECT_EQ(cpu::gemmEpilogueImplementation(false, false, 64, 65, 129, false, false).find("oneDNN"), std::string::npos)
      << "no epilogue: the plain GEMM";
}

TEST(CpuGemm, GeluEpilogueIsTheTanhApproximationAfterTheBias) {
  // 1x1x1: C = gelu(a*b + bias) exactly as geluForward computes it, so the order (bias first) shows.
  const float a = 0.75f, b = -1.5f, bias = 2.0f;
  float c = NAN, want = 0;
  cpu::gemmEpilogue(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1, &bias, true);
  const float x = a * b + bias;
  cpu::geluForward(&want, &x, 1);
  EXPECT_FLOAT_EQ(c, want);
}

}  // namespace ts
