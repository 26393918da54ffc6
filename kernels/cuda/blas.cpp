// cuBLASLt GEMM. cuBLASLt is column-major; a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so the operands are passed swapped with the same transpose flags.
#include <string>

#include <fmt/format.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/blas.h"

#define CUBLAS_CHECK(call)                                                                                   \
  do {                                                                                                       \
    const cublasStatus_t ts_blas_rc_ = (call);                                                               \
    if (ts_blas_rc_ != CUBLAS_STATUS_SUCCESS)                                                                \
      throw ::ts::errorInContext(std::string(#call) + " failed: " + cublasLtGetStatusString(ts_blas_rc_));   \
  } while (0)

namespace ts::cuda {
namespace {

cudaDataType_t cudaType(DType t) {
  switch (t) {
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kBFloat16: return CUDA_R_16BF;
    case DType::kFloat16: return CUDA_R_16F;
    default: throw UsageError(fmt::format("gemm: {} inputs are not supported (float32, bfloat16, float16)", dtypeName(t)));
  }
}

// RAII for the descriptors of one call.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

Blas::Blas(std::size_t workspaceBytes) : workspaceBytes_(workspaceBytes) {
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  CUDA_CHECK(cudaMalloc(&workspace_, workspaceBytes_));
}

Blas::~Blas() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

void Blas::gemm(bool transA, bool transB, int m, int n, int k, float alpha, const void* A, int lda, const void* B, int ldb, float beta,
                float* C, int ldc, DType inputs, bool tf32, cudaStream_t stream) {
  const cudaDataType_t in = cudaType(inputs);
  const cublasComputeType_t compute = (inputs == DType::kFloat32 && tf32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Descriptors d;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, compute, CUDA_R_32F));
  // Column-major view: C^T[n,m] = op(B)^T[n,k] op(A)^T[k,m]; B comes first.
  const cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N, opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof(opB)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof(opA)));
  // Column-major shapes of the stored row-major matrices: B is stored [k,n] (or [n,k]) row-major = [n,k]
  // (or [k,n]) column-major with leading dimension ldb.
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.b, in, transB ? k : n, transB ? n : k, ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.a, in, transA ? m : k, transA ? k : m, lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_32F, n, m, ldc));
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes_, sizeof(workspaceBytes_)));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, d.op, d.b, d.a, d.c, d.c, d.pref, 1, &heuristic, &found));
  if (found == 0) throw errorInContext(fmt::format("cuBLASLt has no algorithm for a {}x{}x{} {} GEMM", m, n, k, dtypeName(inputs)));
  CUBLAS_CHECK(cublasLtMatmul(handle_, d.op, &alpha, B, d.b, A, d.a, &beta, C, d.c, C, d.c, &heuristic.algo, workspace_, workspaceBytes_, stream));
}

}  // namespace ts::cuda
