// cuBLASLt GEMM beyond the plain product (strided batches, the bias / GELU epilogues, 16-bit outputs) and
// both attention implementations, against the CPU at awkward sizes (T = 1, T = 37, D = 80, B*NH = 3,
// T = 1024); and the benchmark's own CUDA cases at their built-in shapes. Skips, saying why, where no GPU
// is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/specs/kernel_op.h"  // randomInputs, the ops
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

// x rounded to t (float32: unchanged), and its bits in t.
float roundTo(float x, DType t) {
  if (t == DType::kBFloat16) return bfloat16ToFloat(floatToBFloat16(x));
  if (t == DType::kFloat16) return halfToFloat(floatToHalf(x));
  return x;
}
std::vector<unsigned char> bytesIn(const std::vector<float>& v, DType t) {
  std::vector<unsigned char> out(v.size() * dtypeSize(t));
  for (std::size_t i = 0; i < v.size(); ++i) storeElement(out.data(), t, i, v[i]);
  return out;
}
std::vector<float> floatsFrom(const std::vector<unsigned char>& bytes, DType t) {
  std::vector<float> out(bytes.size() / dtypeSize(t));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(loadElement(bytes.data(), t, i));
  return out;
}

double geluRef(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

std::string name(DType t, bool tf32) { return tf32 ? "tf32" : std::string(dtypeName(t)); }

}  // namespace

// Batches with a gap between matrices (so a wrong stride shows), every transpose and dtype; the gaps must
// stay unwritten.
TEST(CudaGemm, StridedBatchedAgainstTheCpuForEveryDtypeAndTranspose) {
  REQUIRE_GPU();
  cuda::Blas blas;
  for (auto [m, n, k, batch] : {std::tuple{1, 1, 1, 1}, std::tuple{7, 13, 5, 3}, std::tuple{37, 37, 64, 3},
                                std::tuple{64, 80, 37, 12}, std::tuple{256, 128, 512, 4}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [t, tf32] : {std::pair{DType::kFloat32, false}, std::pair{DType::kFloat32, true},
                               std::pair{DType::kBFloat16, false}, std::pair{DType::kFloat16, false}}) {
          cuda::GemmSpec s;
          s.transA = ta;
          s.transB = tb;
          s.m = m;
          s.n = n;
          s.k = k;
          s.lda = ta ? m : k;
          s.ldb = tb ? k : n;
          s.ldc = n;
          s.batch = batch;
          s.strideA = std::int64_t(m) * k + 3;
          s.strideB = std::int64_t(k) * n + 5;
          s.strideC = std::int64_t(m) * n + 7;
          s.alpha = 0.75f;
          s.inputs = t;
          s.tf32 = tf32;
          auto A = randomInputs(std::size_t(s.strideA) * batch, 1), B = randomInputs(std::size_t(s.strideB) * batch, 2);
          for (auto& x : A) x = roundTo(x, t);
          for (auto& x : B) x = roundTo(x, t);
          Dev<unsigned char> dA(bytesIn(A, t)), dB(bytesIn(B, t));
          Dev<float> dC(std::size_t(s.strideC) * batch);
          blas.gemm(s, dA.p, dB.p, dC.p, nullptr);
          CUDA_CHECK(cudaDeviceSynchronize());
          const auto C = dC.host();
          std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), want(C.size(), 0.0);
          cpu::gemmStridedBatched(ta, tb, m, n, k, 0.75, Ad.data(), s.lda, s.strideA, Bd.data(), s.ldb, s.strideB, 0.0,
                                  want.data(), n, s.strideC, batch);
          const double tol = (t == DType::kFloat32 && !tf32 ? 1e-5 : 2e-3) * std::sqrt(double(k));
          double worst = 0;
          bool gapsUnwritten = true;
          for (int b = 0; b < batch; ++b)
            for (std::int64_t e = 0; e < s.strideC; ++e) {
              const std::size_t i = std::size_t(b * s.strideC + e);
              if (e >= std::int64_t(m) * n) {
                gapsUnwritten = gapsUnwritten && std::isnan(C[i]);
                continue;
              }
              worst =
                  std::isfinite(C[i]) ? std::max(worst, std::fabs(C[i] - want[i]) / std::max(1.0, std::fabs(want[i]))) : INFINITY;
            }
          const auto what = ::testing::Message()
                            << batch << " x " << m << "x" << n << "x" << k << " " << name(t, tf32) << " trans " << ta << tb;
          EXPECT_LT(worst, tol) << what;
          EXPECT_TRUE(gapsUnwritten) << what;
        }
  }
}

// Each epilogue (bias, GELU, bias+GELU) in each input type, float32 output and the 16-bit one, one matrix
// and a batch; products scaled to O(1), where GELU bends.
TEST(CudaGemm, EpiloguesAgainstTheCpu) {
  REQUIRE_GPU();
  cuda::Blas blas;
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{37, 13, 64}, std::tuple{129, 65, 257}, std::tuple{512, 3072, 768}})
    for (int batch : {1, 3})
      for (int epilogue = 1; epilogue < 4; ++epilogue)
        for (auto [t, tf32] : {std::pair{DType::kFloat32, false}, std::pair{DType::kFloat32, true},
                               std::pair{DType::kBFloat16, false}, std::pair{DType::kFloat16, false}})
          for (bool out16 : {false, true}) {
            if (out16 && t == DType::kFloat32) continue;
            const DType out = out16 ? t : DType::kFloat32;
            const bool withBias = epilogue & 1, gelu = epilogue & 2;
            const bool ta = (m + batch) % 2 == 0, tb = epilogue == 2;  // a mix of transposes
            cuda::GemmSpec s;
            s.transA = ta;
            s.transB = tb;
            s.m = m;
            s.n = n;
            s.k = k;
            s.lda = ta ? m : k;
            s.ldb = tb ? k : n;
            s.ldc = n;
            s.batch = batch;
            s.strideA = std::int64_t(m) * k;
            s.strideB = std::int64_t(k) * n;
            s.strideC = std::int64_t(m) * n;
            s.gelu = gelu;
            s.inputs = t;
            s.output = out;
            s.tf32 = tf32;
            auto A = randomInputs(std::size_t(s.strideA) * batch, 3), B = randomInputs(std::size_t(s.strideB) * batch, 4),
                 bias = randomInputs(std::size_t(n), 5);
            for (auto& x : A) x = roundTo(x * 2.0f / std::sqrt(float(k)), t);
            for (auto& x : B) x = roundTo(x, t);
            for (auto& x : bias) x = roundTo(x, out);  // the bias has the output's type
            Dev<unsigned char> dA(bytesIn(A, t)), dB(bytesIn(B, t)), dBias(bytesIn(bias, out)),
                dC(std::size_t(s.strideC) * batch * dtypeSize(out));
            if (withBias) s.bias = dBias.p;
            blas.gemm(s, dA.p, dB.p, dC.p, nullptr);
            CUDA_CHECK(cudaDeviceSynchronize());
            const auto C = floatsFrom(dC.host(), out);
            std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), want(C.size());
            cpu::gemmStridedBatched(ta, tb, m, n, k, 1.0, Ad.data(), s.lda, s.strideA, Bd.data(), s.ldb, s.strideB, 0.0,
                                    want.data(), n, s.strideC, batch);
            for (std::size_t i = 0; i < want.size(); ++i) {
              if (withBias) want[i] += bias[i % n];
              if (gelu) want[i] = geluRef(want[i]);
            }
            // The accumulation's error, cuBLASLt's GELU (it may use a fast tanh), the rounding of a 16-bit output.
            double tol = (t == DType::kFloat32 && !tf32 ? 1e-5 : 2e-3) * std::sqrt(double(k)) + (gelu ? 1e-3 : 0.0);
            if (out == DType::kBFloat16) tol += 8e-3;
            if (out == DType::kFloat16) tol += 1e-3;
            double worst = 0;
            for (std::size_t i = 0; i < C.size(); ++i)
              worst =
                  std::isfinite(C[i]) ? std::max(worst, std::fabs(C[i] - want[i]) / std::max(1.0, std::fabs(want[i]))) : INFINITY;
            EXPECT_LT(worst, tol) << batch << " x " << m << "x" << n << "x" << k << " epilogue " << epilogue << " "
                                  << name(t, tf32) << " -> " << dtypeName(out) << " trans " << ta << tb;
          }
}

// D = alpha A B + beta C + bias: the bias is added after beta C (cuBLASLt's order; cpu::gemmEpilogue's).
TEST(CudaGemm, BiasWithBetaMatchesCpuGemmEpilogue) {
  REQUIRE_GPU();
  cuda::Blas blas;
  const int m = 33, n = 17, k = 65;
  const auto A = randomInputs(std::size_t(m) * k, 6), B = randomInputs(std::size_t(k) * n, 7),
             bias = randomInputs(std::size_t(n), 8);
  auto C = randomInputs(std::size_t(m) * n, 9);
  Dev<float> dA(A), dB(B), dBias(bias), dC(C);
  cuda::GemmSpec s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = k;
  s.ldb = n;
  s.ldc = n;
  s.alpha = 1.5f;
  s.beta = 0.5f;
  s.bias = dBias.p;
  s.gelu = true;
  blas.gemm(s, dA.p, dB.p, dC.p, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  cpu::gemmEpilogue(false, false, m, n, k, 1.5f, A.data(), k, B.data(), n, 0.5f, C.data(), n, bias.data(), true);
  const auto got = dC.host();
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::isfinite(got[i]) ? std::max(worst, std::fabs(got[i] - C[i]) / std::max(1.0, std::fabs(double(C[i])))) : INFINITY;
  EXPECT_LT(worst, 1e-5 * std::sqrt(double(k)) + 1e-3);
}

TEST(CudaGemm, ArgumentsItCannotTakeAreUsageErrors) {
  REQUIRE_GPU();
  cuda::Blas blas;
  Dev<float> buf(64);
  cuda::GemmSpec s;
  s.m = s.n = s.k = 4;
  s.lda = s.ldb = s.ldc = 4;
  s.output = DType::kBFloat16;  // float32 inputs cannot give a bfloat16 output
  EXPECT_THROW(blas.gemm(s, buf.p, buf.p, buf.p, nullptr), UsageError);
  s.output = DType::kFloat32;
  s.lda = 3;  // shorter than a row of A
  EXPECT_THROW(blas.gemm(s, buf.p, buf.p, buf.p, nullptr), UsageError);
  s.lda = 4;
  s.batch = 0;
  EXPECT_THROW(blas.gemm(s, buf.p, buf.p, buf.p, nullptr), UsageError);
}

// Both implementations against cpu::attentionForward: one token, odd lengths, head dimensions that are not
// a multiple of the kernel's (80 -> 96, 33 -> 64, 1 -> 32), 128, several heads, and a long sequence.
TEST(CudaAttention, FusedAndTwoPassAgainstTheCpu) {
  REQUIRE_GPU();
  cuda::Blas blas;
  for (auto [B, NH, T, D] :
       {std::tuple{1, 1, 1, 64}, std::tuple{1, 3, 37, 64}, std::tuple{3, 1, 37, 80}, std::tuple{1, 3, 37, 80},
        std::tuple{2, 1, 65, 33}, std::tuple{1, 2, 100, 1}, std::tuple{1, 2, 129, 128}, std::tuple{2, 3, 64, 96},
        std::tuple{1, 2, 1024, 64}, std::tuple{1, 1, 1024, 80}}) {
    const std::size_t n = std::size_t(B) * NH * T * D;
    const auto q = randomInputs(n, 21), k = randomInputs(n, 22), v = randomInputs(n, 23);
    std::vector<float> want(n);
    cpu::attentionForward(want.data(), q.data(), k.data(), v.data(), B, NH, T, D);
    Dev<float> dq(q), dk(k), dv(v);
    for (bool twoPass : {false, true}) {
      Dev<float> dout(n);  // poisoned: a row the kernel skips stays NaN
      Dev<unsigned char> workspace(twoPass ? cuda::attentionTwoPassWorkspaceBytes(B, NH, T) : 0);
      if (twoPass)
        cuda::attentionForwardTwoPass(dout.p, dq.p, dk.p, dv.p, B, NH, T, D, blas, workspace.p, nullptr);
      else
        cuda::attentionForward(dout.p, dq.p, dk.p, dv.p, B, NH, T, D, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = dout.host();
      double worst = 0;
      for (std::size_t i = 0; i < n; ++i)
        worst = std::isfinite(got[i])
                    ? std::max(worst, std::fabs(got[i] - double(want[i])) / std::max(1.0, std::fabs(double(want[i]))))
                    : INFINITY;
      EXPECT_LT(worst, 3e-5) << (twoPass ? "two-pass" : "fused") << " B=" << B << " NH=" << NH << " T=" << T << " D=" << D;
    }
  }
}

// Runs without a GPU: the arguments are checked before anything is launched.
TEST(CudaAttention, HeadDimensionsBeyondTheFusedKernelAreUsageErrors) {
  EXPECT_THROW(cuda::attentionForward(nullptr, nullptr, nullptr, nullptr, 1, 1, 16, cuda::kAttentionMaxHeadDim + 1, nullptr),
               UsageError);
  EXPECT_THROW(cuda::attentionForward(nullptr, nullptr, nullptr, nullptr, 1, 1, 0, 64, nullptr), UsageError);
}

// The benchmark's CUDA cases (kernels/specs) at the tiny preset's built-in shapes pass their own check, in
// every precision each op supports.
TEST(CudaGemm, BenchmarkCasesPassTheirChecks) {
  REQUIRE_GPU();
  for (const KernelOp* op : {&kernel_ops::gemm(), &kernel_ops::attention()})
    for (Precision p : {Precision::kFloat32, Precision::kTF32, Precision::kBFloat16, Precision::kFloat16}) {
      if (!op->supports(p, true)) continue;
      for (const KernelShape& shape : op->shapes(128, 64, 2, 1024)) {
        if (shape.name == "square 2048") continue;  // its float64 reference alone takes seconds per precision
        auto kc = op->makeCuda(shape, KernelSettings{p});
        ASSERT_NE(kc, nullptr) << op->name() << " " << shape.name;
        const KernelCheck c = kc->check();
        EXPECT_TRUE(c.passed) << op->name() << " " << shape.name << " " << precisionName(p) << ": " << c.maxRelErr << " > "
                              << c.tolerance;
        kc->run();
        CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(kc->deviceStream())));
      }
    }
}

}  // namespace ts
