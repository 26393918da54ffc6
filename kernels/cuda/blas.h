#pragma once
// GEMM through cuBLASLt, row-major like kernels/cpu/ops.h: float32 (optionally TF32), bfloat16 and float16
// inputs with float32 accumulation and output. Every call is checked (CUBLAS_CHECK).
#include <cstddef>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace ts::cuda {

// cuBLASLt with its workspace, for one device.
class Blas {
 public:
  explicit Blas(std::size_t workspaceBytes = 32u << 20);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // Row-major C[m,n] = alpha op(A) op(B) + beta C with A, B in `inputs` (float32, bfloat16 or float16) and C
  // in float32 (float16/bfloat16 inputs accumulate in float32). tf32: let float32 inputs use TF32 tensor cores.
  void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const void* A, int lda, const void* B, int ldb, float beta,
            float* C, int ldc, DType inputs, bool tf32, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspaceBytes_ = 0;
};

}  // namespace ts::cuda
