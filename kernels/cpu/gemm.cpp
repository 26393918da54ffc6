// GEMM through OpenBLAS (row-major CBLAS); without OpenBLAS, a blocked loop that is correct but slow.
// The strided batch loops over it; the epilogue (bias, GELU) is a pass over C after it.
#include "kernels/cpu/ops.h"

#ifdef TRAINSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace ts::cpu {
namespace {

template <typename T>
void naiveGemm(bool ta, bool tb, int m, int n, int k, T alpha, const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      T acc = 0;
      for (int p = 0; p < k; ++p) acc += (ta ? A[p * lda + i] : A[i * lda + p]) * (tb ? B[j * ldb + p] : B[p * ldb + j]);
      C[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * C[i * ldc + j]);
    }
  }
}

template <typename T>
void stridedBatched(bool ta, bool tb, int m, int n, int k, T alpha, const T* A, int lda, std::int64_t sA, const T* B, int ldb,
                    std::int64_t sB, T beta, T* C, int ldc, std::int64_t sC, int batch) {
  for (int b = 0; b < batch; ++b) gemm(ta, tb, m, n, k, alpha, A + b * sA, lda, B + b * sB, ldb, beta, C + b * sC, ldc);
}

}  // namespace

void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
          float* C, int ldc) {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta,
              C, ldc);
#else
  naiveGemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta,
          double* C, int ldc) {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta,
              C, ldc);
#else
  naiveGemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void gemmStridedBatched(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, std::int64_t strideA,
                        const float* B, int ldb, std::int64_t strideB, float beta, float* C, int ldc, std::int64_t strideC,
                        int batch) {
  stridedBatched(ta, tb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

void gemmStridedBatched(bool ta, bool tb, int m, int n, int k, double alpha, const double* A, int lda, std::int64_t strideA,
                        const double* B, int ldb, std::int64_t strideB, double beta, double* C, int ldc, std::int64_t strideC,
                        int batch) {
  stridedBatched(ta, tb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, batch);
}

void gemmEpilogue(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc, const float* bias, bool gelu) {
  gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (!bias && !gelu) return;
  // Row by row: C's rows are ldc apart, which biasAdd and geluForward (contiguous [N,C]) do not know.
  for (int i = 0; i < m; ++i) {
    float* row = C + static_cast<std::size_t>(i) * ldc;
    if (bias) biasAdd(row, row, bias, 1, static_cast<std::size_t>(n));
    if (gelu) geluForward(row, row, static_cast<std::size_t>(n));
  }
}

}  // namespace ts::cpu
