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
#include "kernels/cpu/threads.h"
#include "kernels/specs/kernel_op.h"  // randomInputs: random data, never zeros
#include "tests/unit/compute_threads_scope.h"

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

// gemmStridedBatched in float32 and float64 against the reference, matrix by matrix, every transpose, with
// leading dimensions one longer than a row and strides with a gap, so that neither can be mistaken for packed;
// the gaps between matrices and after each row are left alone.
void expectStridedBatchedMatches(int m, int n, int k, int batch) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 1, ldc = n + 1;
      const std::int64_t sA = std::int64_t(ta ? k : m) * lda + 3, sB = std::int64_t(tb ? n : k) * ldb + 5,
                         sC = std::int64_t(m) * ldc + 7;
      const auto A = randomInputs(std::size_t(sA) * batch, 1), B = randomInputs(std::size_t(sB) * batch, 2);
      auto C = randomInputs(std::size_t(sC) * batch, 3);
      const auto C0 = C;
      cpu::gemmStridedBatched(ta, tb, m, n, k, 1.5f, A.data(), lda, sA, B.data(), ldb, sB, 0.5f, C.data(), ldc, sC, batch);
      std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), Cd(C0.begin(), C0.end());
      cpu::gemmStridedBatched(ta, tb, m, n, k, 1.5, Ad.data(), lda, sA, Bd.data(), ldb, sB, 0.5, Cd.data(), ldc, sC, batch);
      const std::string what = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " batch " +
                               std::to_string(batch) + " trans " + std::to_string(ta) + std::to_string(tb) + " (" +
                               cpu::gemmStridedBatchedImplementation(m, n, ldc, sC, batch) + ")";
      for (int b = 0; b < batch; ++b) {
        const auto want = reference(ta, tb, m, n, k, 1.5, A.data() + b * sA, lda, B.data() + b * sB, ldb, 0.5, C0.data() + b * sC,
                                    ldc, nullptr, false);
        EXPECT_LT(maxRelErr(C.data() + b * sC, ldc, want, m, n), 1e-5 * std::sqrt(double(k))) << what << " b=" << b;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j)
            EXPECT_NEAR(Cd[b * sC + std::int64_t(i) * ldc + j], want[std::size_t(i) * n + j],
                        1e-12 * std::max(1.0, std::fabs(want[std::size_t(i) * n + j])))
                << what << " float64, b=" << b;
      }
      for (int b = 0; b < batch; ++b)
        for (std::int64_t e = 0; e < sC; ++e) {
          const std::int64_t i = e / ldc, j = e % ldc;
          if (i >= m || j >= n) {
            EXPECT_EQ(C[b * sC + e], C0[b * sC + e]) << what << " batch " << b << " offset " << e;
          }
        }
    }
}

}  // namespace

TEST(CpuGemm, StridedBatchedMatchesFloat64PerMatrix) {
  for (auto [m, n, k, batch] :
       {std::tuple{1, 1, 1, 1}, std::tuple{7, 13, 5, 3}, std::tuple{37, 37, 64, 3}, std::tuple{33, 1, 17, 4}})
    expectStridedBatchedMatches(m, n, k, batch);
}

// Issue #40: on two or more threads a batch goes whole matrices to the threads (one single-threaded BLAS call
// each), the rest of a batch that is no multiple of the threads one after another on all threads. Both parts,
// batches smaller than the threads (a loop), at 2 and 3 threads, against float64.
TEST(CpuGemm, BatchesSplitOverTheThreadsMatchFloat64PerMatrix) {
  for (int threads : {2, 3}) {
    const test::ComputeThreadsScope scope(threads);
    for (auto [m, n, k, batch] : {std::tuple{19, 23, 11, 1}, std::tuple{19, 23, 11, 2}, std::tuple{37, 37, 64, 6},
                                  std::tuple{64, 64, 64, 7}, std::tuple{1, 5, 3, 5}})
      expectStridedBatchedMatches(m, n, k, batch);
  }
}

// Matrices of C that overlap (a stride of 0: every product summed into one C, beta 1) are not split over the
// threads (they would race on C): one after another, as the loop adds them.
TEST(CpuGemm, OverlappingOutputsStayOneAfterAnother) {
  const test::ComputeThreadsScope scope(2);
  const int m = 17, n = 9, k = 33, batch = 6;
  const std::int64_t sA = std::int64_t(m) * k, sB = std::int64_t(k) * n;
  const auto A = randomInputs(std::size_t(sA) * batch, 1), B = randomInputs(std::size_t(sB) * batch, 2);
  auto C = randomInputs(std::size_t(m) * n, 3);
  const auto C0 = C;
  EXPECT_EQ(cpu::gemmStridedBatchedImplementation(m, n, n, 0, batch).find("whole"), std::string::npos);
  cpu::gemmStridedBatched(false, false, m, n, k, 1.0f, A.data(), k, sA, B.data(), n, sB, 1.0f, C.data(), n, 0, batch);
  std::vector<double> want(C0.begin(), C0.end());
  for (int b = 0; b < batch; ++b) {
    const std::vector<float> none(want.size(), 0.0f);
    const auto product =
        reference(false, false, m, n, k, 1.0, A.data() + b * sA, k, B.data() + b * sB, n, 0.0, none.data(), n, nullptr, false);
    for (std::size_t e = 0; e < want.size(); ++e) want[e] += product[e];
  }
  EXPECT_LT(maxRelErr(C.data(), n, want, m, n), 1e-5 * std::sqrt(double(k * batch)));
}

// OpenBLAS's pthread build would start its own threads inside each of ours: there a batch stays a loop.
TEST(CpuGemm, TheBatchedRecordSaysHowTheBatchIsSplit) {
  if (cpu::blasThreading() == "pthread") {
    const test::ComputeThreadsScope scope(2);
    EXPECT_EQ(cpu::gemmStridedBatchedImplementation(256, 256, 256, 256 * 256, 48), "OpenBLAS sgemm");
    return;
  }
  {
    const test::ComputeThreadsScope scope(2);
    const std::string qk = cpu::gemmStridedBatchedImplementation(256, 256, 256, 256 * 256, 48);
    EXPECT_NE(qk.find("48 matrices whole to 2 threads"), std::string::npos) << qk;
    EXPECT_EQ(qk.find("then"), std::string::npos) << qk;
    const std::string odd = cpu::gemmStridedBatchedImplementation(256, 256, 256, 256 * 256, 5);
    EXPECT_NE(odd.find("4 matrices whole to 2 threads, then 1 on all threads"), std::string::npos) << odd;
    const std::string single = cpu::gemmStridedBatchedImplementation(256, 256, 256, 256 * 256, 1);
    EXPECT_EQ(single.find("whole"), std::string::npos) << single;
  }
  const test::ComputeThreadsScope scope(1);
  EXPECT_EQ(cpu::gemmStridedBatchedImplementation(256, 256, 256, 256 * 256, 48).find("whole"), std::string::npos);
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
