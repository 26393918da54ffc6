#pragma once
// GEMM through cuBLASLt, row-major like kernels/cpu/cpu_ops.h: float32 (optionally TF32), bfloat16 and float16
// inputs with float32 accumulation; float32 output (or the 16-bit input type); strided batches; the bias,
// GELU and bias+GELU epilogues. Every call is checked (CUBLAS_CHECK).
#include <cstddef>
#include <cstdint>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/cuda/device_resources.h"

namespace ts::cuda {

// One (batched) GEMM, row-major, all in elements:
//   for b in [0, batch):  C_b[m,n] = act(alpha op(A_b)[m,k] op(B_b)[k,n] + beta C_b + bias[n])
// with X_b = X + b * strideX, op = transpose where the flag is set, bias (when set) added to every row of
// C_b (one value per output column, the same for every b), and act = GELU (tanh approximation, as
// cpu::geluForward) when gelu is set. 2*batch*m*n*k FLOPs.
struct GemmSpec {
  bool transA = false, transB = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;  // leading dimensions as stored (row-major: the row length)
  int batch = 1;
  std::int64_t strideA = 0, strideB = 0, strideC = 0;  // elements from one matrix of the batch to the next
  float alpha = 1.0f, beta = 0.0f;
  const void* bias = nullptr;      // [n] in the output type, or null for none (CUBLASLT_EPILOGUE_BIAS)
  bool gelu = false;               // CUBLASLT_EPILOGUE_GELU (after the bias, when both)
  DType inputs = DType::kFloat32;  // A and B: float32, bfloat16 or float16
  DType output = DType::kFloat32;  // C: float32, or the 16-bit type of the inputs
  bool tf32 = false;               // float32 inputs through TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
};

// cuBLASLt with its workspace, for the current device.
class Blas {
 public:
  explicit Blas(std::size_t workspaceBytes = 32u << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // The GEMM of `s` on the stream: UsageError for arguments cuBLASLt cannot take (a bad dtype pairing,
  // a leading dimension smaller than a row), ts::Error naming the call when cuBLASLt fails or has no
  // algorithm for it.
  void gemm(const GemmSpec& s, const void* A, const void* B, void* C, cudaStream_t stream);
  // Row-major C[m,n] = alpha op(A) op(B) + beta C with A, B in `inputs` (float32, bfloat16 or float16) and C
  // in float32 (float16/bfloat16 inputs accumulate in float32). tf32: let float32 inputs use TF32 tensor cores.
  void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const void* A, int lda, const void* B, int ldb,
            float beta, float* C, int ldc, DType inputs, bool tf32, cudaStream_t stream);

 private:
  DeviceBuffer workspace_;  // first: freed if creating the handle throws
  cublasLtHandle_t handle_ = nullptr;
};

}  // namespace ts::cuda
