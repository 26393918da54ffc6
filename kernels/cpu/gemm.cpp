// GEMM through OpenBLAS (row-major CBLAS); without OpenBLAS, a blocked loop that is correct but slow.
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

}  // namespace

void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  naiveGemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C,
          int ldc) {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#else
  naiveGemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

}  // namespace ts::cpu
