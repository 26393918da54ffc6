// GEMM through OpenBLAS (row-major CBLAS); without OpenBLAS, a blocked loop that is correct but slow.
// The strided batch gives whole matrices to the compute threads (stridedBatched says why). The epilogue
// (bias, GELU) is fused into oneDNN's GEMM where the build has oneDNN and the call is dense
// (gemm_backends.h), else one pass over C after OpenBLAS's GEMM.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/gemm_backends.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/threads.h"
#include "kernels/cpu/vector_math.h"

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

// Whether a BLAS call made on one of the compute threads, inside their parallel region, runs on that thread
// alone: OpenBLAS's OpenMP build does (it checks omp_in_parallel), its serial build and the blocked loop
// always do. Its pthread build keeps a pool of its own, which calls from several of ours would contend for,
// so a batch there stays a loop.
bool blasCallStaysOnItsThread() {
  static const bool stays = blasThreading() != "pthread";
  return stays;
}

// How many of a batch's matrices go to the compute threads whole: a multiple of the thread count, so that
// no thread idles at the end; the rest (fewer than the threads) run one after another, each GEMM on every
// thread. None where C's matrices overlap (a stride shorter than one matrix: the calls would race).
int wholeMatricesToThreads(int m, int n, int ldc, std::int64_t sC, int batch) {
  const int threads = computeThreads();
  const bool disjoint = std::abs(sC) >= std::int64_t(m - 1) * ldc + n;
  if (threads < 2 || batch < threads || !disjoint || !blasCallStaysOnItsThread()) return 0;
  return batch - batch % threads;
}

// Issue #40: one GEMM after another, each split over the threads by OpenBLAS, spent most of a 2-core run of
// 48 attention-sized GEMMs (256x256x64) in OpenBLAS's hand-offs between its threads (sched_yield, OpenMP's
// barrier: 10% of the samples in the GEMM kernel itself), 0.17-0.22x numpy's GFLOP/s on a shared host. Whole
// matrices to each thread instead: no hand-off inside a GEMM, one fork and join for the batch, and a thread
// the host preempts holds up one matrix, not the other thread's half of every one.
template <typename T>
void stridedBatched(bool ta, bool tb, int m, int n, int k, T alpha, const T* A, int lda, std::int64_t sA, const T* B, int ldb,
                    std::int64_t sB, T beta, T* C, int ldc, std::int64_t sC, int batch) {
  const auto one = [&](std::int64_t b) { gemm(ta, tb, m, n, k, alpha, A + b * sA, lda, B + b * sB, ldb, beta, C + b * sC, ldc); };
  const int whole = wholeMatricesToThreads(m, n, ldc, sC, batch);
  parallelEach(std::size_t(whole), [&](std::size_t b) { one(std::int64_t(b)); });
  for (int b = whole; b < batch; ++b) one(b);
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

namespace {
// One pass over a row of C: + bias, then GELU (either may be off).
TS_SIMD_CLONES void epilogueRow(float* row, const float* bias, bool gelu, std::size_t n) {
  if (bias && gelu) {
#pragma omp simd
    for (std::size_t j = 0; j < n; ++j) row[j] = vmath::gelu(row[j] + bias[j]);
  } else if (bias) {
#pragma omp simd
    for (std::size_t j = 0; j < n; ++j) row[j] += bias[j];
  } else {
#pragma omp simd
    for (std::size_t j = 0; j < n; ++j) row[j] = vmath::gelu(row[j]);
  }
}
constexpr std::size_t kEpilogueGrain = 1 << 16;  // elements of C below which one thread does the pass
}  // namespace

void gemmEpilogue(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc, const float* bias, bool gelu) {
  if (onednn::gemmEpilogue(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, bias, gelu)) return;
  gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (!bias && !gelu) return;
  // Row by row (C's rows are ldc apart), whole rows to each thread.
  const auto rows = static_cast<std::size_t>(m), cols = static_cast<std::size_t>(n);
  parallelChunks(rows, std::max<std::size_t>(1, kEpilogueGrain / std::max<std::size_t>(1, cols)),
                 [&](std::size_t a, std::size_t z) {
                   for (std::size_t i = a; i < z; ++i) epilogueRow(C + i * static_cast<std::size_t>(ldc), bias, gelu, cols);
                 });
}

std::string gemmStridedBatchedImplementation(int m, int n, int ldc, std::int64_t strideC, int batch) {
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  std::string one = "OpenBLAS sgemm";
#else
  std::string one = "blocked loop";
#endif
  const int whole = wholeMatricesToThreads(m, n, ldc, strideC, batch);
  if (whole == 0) return one;
  std::string how = one + ", " + std::to_string(whole) + " matrices whole to " + std::to_string(computeThreads()) + " threads";
  if (whole < batch) how += ", then " + std::to_string(batch - whole) + " on all threads";
  return how;
}

std::string gemmEpilogueImplementation(bool ta, bool tb, int m, int n, int k, bool bias, bool gelu) {
  std::string fused = onednn::gemmEpilogueImplementation(ta, tb, m, n, k, bias, gelu);
  if (!fused.empty()) return fused;
#ifdef TRAINSCOPE_HAVE_OPENBLAS
  return bias || gelu ? "OpenBLAS sgemm, then a pass over C" : "OpenBLAS sgemm";
#else
  return bias || gelu ? "blocked loop, then a pass over C" : "blocked loop";
#endif
}

}  // namespace ts::cpu
