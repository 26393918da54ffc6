#pragma once
// The CUDA implementations of the compute ops: the same arguments as kernels/cpu/ops.h (device pointers),
// plus the stream they are queued on. float32 data. GEMM (cuBLASLt) is in blas.h. Every launch is checked (CUDA_CHECK).
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/cpu/ops.h"  // the shared argument types (AdamwTensor)

namespace ts::cuda {

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, std::size_t N,
                      std::size_t C, cudaStream_t stream, float eps = 1e-5f);
// dinp += ..., dweight += ..., dbias += ... (accumulating, as on the CPU).
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean,
                       const float* rstd, std::size_t N, std::size_t C, cudaStream_t stream);
void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT, cudaStream_t stream);
void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols, cudaStream_t stream);
void geluForward(float* out, const float* inp, std::size_t n, cudaStream_t stream);
void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t stream);
void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C, cudaStream_t stream);
void residualAdd(float* out, const float* a, const float* b, std::size_t n, cudaStream_t stream);
void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N, std::size_t V,
                                 float dloss, cudaStream_t stream);
void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
                 float weightDecay, int t, cudaStream_t stream);
// `tensors` is a host array; the descriptors travel in the kernel's parameters, kMultiTensorGroup at a time.
void adamwUpdateMulti(const cpu::AdamwTensor* tensors, std::size_t count, float lr, float beta1, float beta2, float eps, float weightDecay, int t,
                      cudaStream_t stream);
void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay,
                       cudaStream_t stream);
void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t stream);
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t stream);
void castFromBFloat16(float* out, const std::uint16_t* inp, std::size_t n, cudaStream_t stream);
void castFromHalf(float* out, const std::uint16_t* inp, std::size_t n, cudaStream_t stream);

}  // namespace ts::cuda
