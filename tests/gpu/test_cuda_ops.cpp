// Every CUDA op against its CPU reference on random inputs of awkward sizes (not multiples of 8, one row,
// large). Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm.h"
#include "kernels/specs/kernel_op.h"  // randomInputs
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {}  // namespace

TEST(CudaOps, GemmAgainstOpenBlasForEveryDtypeAndTranspose) {
  REQUIRE_GPU();
  cuda::Blas blas;
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{129, 65, 257}, std::tuple{1024, 1024, 1024}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
          for (bool tf32 : {false, true}) {
            if (tf32 && t != DType::kFloat32) continue;
            auto A = randomInputs(std::size_t(m) * k, 1), B = randomInputs(std::size_t(k) * n, 2);
            // Inputs rounded to the dtype on the host too, so only accumulation differs.
            std::vector<std::uint16_t> A16(A.size()), B16(B.size());
            if (t != DType::kFloat32) {
              for (std::size_t i = 0; i < A.size(); ++i) {
                A16[i] = t == DType::kBFloat16 ? floatToBFloat16(A[i]) : floatToHalf(A[i]);
                A[i] = t == DType::kBFloat16 ? bfloat16ToFloat(A16[i]) : halfToFloat(A16[i]);
              }
              for (std::size_t i = 0; i < B.size(); ++i) {
                B16[i] = t == DType::kBFloat16 ? floatToBFloat16(B[i]) : floatToHalf(B[i]);
                B[i] = t == DType::kBFloat16 ? bfloat16ToFloat(B16[i]) : halfToFloat(B16[i]);
              }
            }
            std::vector<float> want(std::size_t(m) * n);
            cpu::gemm(ta, tb, m, n, k, 1.0f, A.data(), ta ? m : k, B.data(), tb ? k : n, 0.0f, want.data(), n);
            Dev<float> dA(A), dB(B), dC(std::size_t(m) * n);
            Dev<std::uint16_t> hA(A16), hB(B16);
            const void* a = t == DType::kFloat32 ? static_cast<const void*>(dA.p) : hA.p;
            const void* b = t == DType::kFloat32 ? static_cast<const void*>(dB.p) : hB.p;
            blas.gemm(ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, dC.p, n, t, tf32, nullptr);
            CUDA_CHECK(cudaDeviceSynchronize());
            const double tol = (t == DType::kFloat32 && !tf32) ? 1e-5 * std::sqrt(double(k)) : 2e-3 * std::sqrt(double(k));
            EXPECT_LT(maxRel(dC.host(), want), tol)
                << m << "x" << n << "x" << k << " " << dtypeName(t) << (tf32 ? " tf32" : "") << " " << ta << tb;
          }
  }
}

TEST(CudaOps, RowOpsAgainstTheCpu) {
  REQUIRE_GPU();
  for (auto [N, C] : {std::pair<std::size_t, std::size_t>{1, 1}, {3, 33}, {1000, 769}, {8192, 4096}}) {
    const auto x = randomInputs(N * C, 3, -5, 5), w = randomInputs(C, 4), b = randomInputs(C, 5);
    std::vector<float> y(N * C), mean(N), rstd(N);
    cpu::layernormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    Dev<float> dx(x), dw(w), db(b), dy(N * C), dm(N), dr(N);
    cuda::layernormForward(dy.p, dm.p, dr.p, dx.p, dw.p, db.p, N, C, nullptr);
    EXPECT_LT(maxRel(dy.host(), y), 1e-5) << "layernorm " << N << "x" << C;
    EXPECT_LT(maxRel(dr.host(), rstd), 1e-5);
    {
      const auto dy = randomInputs(N * C, 6);
      auto dxWant = randomInputs(N * C, 7), dwWant = randomInputs(C, 8), dbWant = randomInputs(C, 9);
      Dev<float> ddy(dy), ddx(dxWant), ddw(dwWant), ddb(dbWant);  // accumulated into, as on the CPU
      cpu::layernormBackward(dxWant.data(), dwWant.data(), dbWant.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                             N, C);
      cuda::layernormBackward(ddx.p, ddw.p, ddb.p, ddy.p, dx.p, dw.p, dm.p, dr.p, N, C, nullptr);
      // dweight and dbias sum N rows (in another order on the GPU).
      EXPECT_LT(maxRel(ddx.host(), dxWant), 1e-4) << "layernorm backward dinp " << N << "x" << C;
      EXPECT_LT(maxRel(ddw.host(), dwWant), 1e-6 * std::sqrt(double(N)) * 10) << "layernorm backward dweight " << N << "x" << C;
      EXPECT_LT(maxRel(ddb.host(), dbWant), 1e-6 * std::sqrt(double(N)) * 10) << "layernorm backward dbias " << N << "x" << C;
    }
    for (std::size_t causal : {std::size_t{0}, C}) {
      cpu::softmaxForward(y.data(), x.data(), N, C, causal);
      Dev<float> ds(N * C);
      cuda::softmaxForward(ds.p, dx.p, N, C, causal, nullptr);
      EXPECT_LT(maxRel(ds.host(), y), 1e-6) << "softmax " << N << "x" << C << " causal " << causal;
      const auto dout = randomInputs(N * C, 10);
      auto dinp = randomInputs(N * C, 11);
      Dev<float> ddout(dout), ddinp(dinp);
      cpu::softmaxBackward(dinp.data(), dout.data(), y.data(), N, C);
      cuda::softmaxBackward(ddinp.p, ddout.p, ds.p, N, C, nullptr);
      EXPECT_LT(maxRel(ddinp.host(), dinp), 1e-5) << "softmax backward " << N << "x" << C << " causal " << causal;
    }
    std::vector<int> targets(N);
    for (std::size_t i = 0; i < N; ++i) targets[i] = static_cast<int>((i * 31) % C);
    std::vector<float> losses(N), dz(N * C);
    cpu::crossEntropyForwardBackward(losses.data(), dz.data(), x.data(), targets.data(), N, C, 0.5f);
    Dev<int> dt(targets);
    Dev<float> dl(N), ddz(N * C);
    cuda::crossEntropyForwardBackward(dl.p, ddz.p, dx.p, dt.p, N, C, 0.5f, nullptr);
    EXPECT_LT(maxRel(dl.host(), losses), 1e-5) << "cross-entropy loss";
    EXPECT_LT(maxRel(ddz.host(), dz), 1e-6) << "cross-entropy grad";
  }
}

// Issue #33: the column sums (biasBackward, layernormBackward's dweight and dbias) launched a block row per
// 256 rows, past grid.y's limit of 65535 above 16.7 M rows (the launch failed); now capped and strided.
TEST(CudaOps, ColumnSumsOfMoreThan65535RowSlices) {
  REQUIRE_GPU();
  const std::size_t N = 65535 * 256 + 1000, C = 3;
  const auto x = randomInputs(N * C, 30), dy = randomInputs(N * C, 31);
  const std::vector<float> mean(N, 0.0f), rstd(N, 1.0f);  // xhat = x
  std::vector<double> wantW(C, 0.0), wantB(C, 0.0), scale(C, 0.0);
  for (std::size_t r = 0; r < N; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      const double g = dy[r * C + c], v = x[r * C + c];
      wantW[c] += g * v;
      wantB[c] += g;
      scale[c] += std::fabs(g) * (1 + std::fabs(v));
    }
  Dev<float> dx(x), ddy(dy), dmean(mean), drstd(rstd), dw(C, false), db(C, false), dbias(C, false);
  cuda::layernormBackward(nullptr, dw.p, db.p, ddy.p, dx.p, nullptr, dmean.p, drstd.p, N, C, nullptr);
  cuda::biasBackward(dbias.p, ddy.p, N, C, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto gotW = dw.host(), gotB = db.host(), gotBias = dbias.host();
  for (std::size_t c = 0; c < C; ++c) {  // float sums of 16.7 M terms: within 1e-5 of the terms' magnitude
    EXPECT_NEAR(gotW[c], wantW[c], 1e-5 * scale[c]) << "layernorm dweight, column " << c;
    EXPECT_NEAR(gotB[c], wantB[c], 1e-5 * scale[c]) << "layernorm dbias, column " << c;
    EXPECT_NEAR(gotBias[c], wantB[c], 1e-5 * scale[c]) << "biasBackward, column " << c;
  }
}

TEST(CudaOps, ElementwiseAndOptimizersAgainstTheCpu) {
  REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{1023}, std::size_t{1} << 24}) {
    const auto x = randomInputs(n, 6, -6, 6), g = randomInputs(n, 7), dy = randomInputs(n, 8);
    std::vector<float> y(n), dx(n, 0.0f);
    cpu::geluForward(y.data(), x.data(), n);
    cpu::geluBackward(dx.data(), x.data(), dy.data(), n);
    Dev<float> dX(x), dG(g), dDY(dy), dY(n), dDX(n, false);
    cuda::geluForward(dY.p, dX.p, n, nullptr);
    cuda::geluBackward(dDX.p, dX.p, dDY.p, n, nullptr);
    EXPECT_LT(maxRel(dY.host(), y), 1e-6) << "gelu " << n;
    EXPECT_LT(maxRel(dDX.host(), dx), 1e-5) << "gelu backward " << n;
    cpu::residualAdd(y.data(), x.data(), g.data(), n);
    cuda::residualAdd(dY.p, dX.p, dG.p, n, nullptr);
    EXPECT_EQ(maxRel(dY.host(), y), 0.0);
    auto p = randomInputs(n, 9), m = randomInputs(n, 10, 0, 1), v = randomInputs(n, 11, 0, 1);
    Dev<float> dp(p), dm(m), dv(v);
    cpu::adamwUpdate(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 7);
    cuda::adamwUpdate(dp.p, dG.p, dm.p, dv.p, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 7, nullptr);
    EXPECT_LT(maxRel(dp.host(), p), 1e-6) << "adamw " << n;
    auto q = randomInputs(n, 12), buf = randomInputs(n, 13);
    Dev<float> dq(q), dbuf(buf);
    cpu::sgdMomentumUpdate(q.data(), g.data(), buf.data(), n, 0.05f, 0.9f, 1e-2f);
    cuda::sgdMomentumUpdate(dq.p, dG.p, dbuf.p, n, 0.05f, 0.9f, 1e-2f, nullptr);
    EXPECT_LT(maxRel(dq.host(), q), 1e-6) << "sgd " << n;
    std::vector<std::uint16_t> h(n);
    Dev<std::uint16_t> dh(n);
    cpu::castToBFloat16(h.data(), x.data(), n);
    cuda::castToBFloat16(dh.p, dX.p, n, nullptr);
    EXPECT_EQ(dh.host(), h) << "bf16 cast";
    cpu::castToHalf(h.data(), x.data(), n);
    cuda::castToHalf(dh.p, dX.p, n, nullptr);
    EXPECT_EQ(dh.host(), h) << "half cast";
  }
  const std::size_t N = 37, C = 129;
  const auto x = randomInputs(N * C, 14), b = randomInputs(C, 15);
  std::vector<float> y(N * C);
  cpu::biasAdd(y.data(), x.data(), b.data(), N, C);
  Dev<float> dx(x), db(b), dy(N * C);
  cuda::biasAdd(dy.p, dx.p, db.p, N, C, nullptr);
  EXPECT_EQ(maxRel(dy.host(), y), 0.0);
}

}  // namespace ts
