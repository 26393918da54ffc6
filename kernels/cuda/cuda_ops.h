#pragma once
// The CUDA implementations of the compute ops: exactly the CPU functions' arguments (kernels/cpu/cpu_ops.h,
// which says what each computes and moves) as device pointers, followed by the stream they are queued on.
// float32 data. Asynchronous on `stream`, except sumOfSquares, which returns its value. Backward ops
// accumulate (+=) into dinp / dweight / dbias / dwte / dwpe as on the CPU; forward outputs are overwritten.
// Every launch is checked (CUDA_CHECK). GEMM (cuBLASLt) is in gemm.h, convolution (cuDNN) in
// convolution.h, the fused attention in attention.h.
//
// One .cu per topic, as kernels/cpu/*.cpp: the sections below name theirs. Numerics, two kinds:
//  - written for speed (layernorm, softmax, GELU, bias / residual add, cross-entropy, AdamW, SGD, the casts):
//    nvcc may contract a multiply and an add into one FMA; they match the CPU to rounding.
//  - CPU-exact (the rest): the CPU's arithmetic step by step (the same float or double type at every step,
//    explicit round-to-nearest intrinsics where nvcc would contract; the CPU reference, built for plain
//    x86-64, does not), so elementwise results are bit-equal to the CPU's where the host compiler does not
//    contract either; float64 reductions in a fixed order (deterministic) differ from it only in their order.
//    Those that add with atomicAdd (biasBackward, maxPool2dBackward, embeddingBackward's dwte) vary in the
//    last bits from run to run.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace ts::cuda {

// ---- normalization.cu ----------------------------------------------------------------------------------

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, cudaStream_t stream, float eps = 1e-5f);
// dinp += ..., dweight += ..., dbias += ... (accumulating, as on the CPU).
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, cudaStream_t stream);
void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT, cudaStream_t stream);
void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols, cudaStream_t stream);
// CPU-exact. One block per channel (deterministic float64 block reductions).
void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar,
                      float momentum, cudaStream_t stream);
void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream);
void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t N, std::size_t C, std::size_t HW, float eps, cudaStream_t stream);

// ---- elementwise.cu ------------------------------------------------------------------------------------

void geluForward(float* out, const float* inp, std::size_t n, cudaStream_t stream);
void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t stream);
void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C, cudaStream_t stream);
void residualAdd(float* out, const float* a, const float* b, std::size_t n, cudaStream_t stream);
// CPU-exact from here to the end of the section.
void reluForward(float* out, const float* inp, std::size_t n, cudaStream_t stream);
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t stream);
// dbias[C] += column sums of dout[N,C]: slices of rows added with atomicAdd (order not deterministic).
void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C, cudaStream_t stream);
void axpy(float* y, const float* x, float alpha, std::size_t n, cudaStream_t stream);
void scale(float* x, float alpha, std::size_t n, cudaStream_t stream);
// Synchronous: waits for `stream`. Sums in float64 in a fixed order (deterministic); scratch from the
// stream-ordered allocator (cudaMallocAsync / cudaFreeAsync), so no state is kept between calls.
double sumOfSquares(const float* x, std::size_t n, cudaStream_t stream);
// In place; the CPU's conversions bit for bit (IEEE round to nearest even, float16 overflow to inf, and
// the CPU's NaN encodings).
void roundToBFloat16(float* x, std::size_t n, cudaStream_t stream);
void roundToHalf(float* x, std::size_t n, cudaStream_t stream);
// float32 -> bfloat16 / float16 storage (round to nearest even, CUDA's conversions).
void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t stream);
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t stream);

// ---- loss_and_optimizers.cu ----------------------------------------------------------------------------

void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss, cudaStream_t stream);
void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int t, cudaStream_t stream);
void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay,
                       cudaStream_t stream);
// CPU-exact from here to the end of the section.
void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t, cudaStream_t stream);
void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay, cudaStream_t stream);
// Asynchronous: the two norms are reduced on the device (float64, fixed order) into stream-ordered scratch
// (cudaMallocAsync), and the trust ratio never leaves the device.
void lambUpdate(float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr, float beta1,
                float beta2, float eps, float weightDecay, int t, cudaStream_t stream);
// The two-pass LAMB (kernels/cpu/cpu_ops.h): lambMoments waits for the stream (its sums go to the host, to be added
// over the ranks); lambApply is asynchronous.
void lambMoments(const float* params, const float* grads, float* m, float* v, std::size_t n, float beta1, float beta2, float eps,
                 float weightDecay, int t, double* sums, cudaStream_t stream);
void lambApply(float* params, const float* m, const float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
               float weightDecay, int t, double trust, cudaStream_t stream);

// ---- pooling_and_embedding.cu (CPU-exact) --------------------------------------------------------------

void globalAvgPoolForward(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream);
void globalAvgPoolBackward(float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream);
// argmax indexes the input as an int (inputs of more than INT_MAX elements are refused); the backward adds
// with atomicAdd, windows may overlap.
void maxPool2dForward(float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride, int pad,
                      cudaStream_t stream);
void maxPool2dBackward(float* dinp, const float* dout, const int* argmax, std::size_t outCount, cudaStream_t stream);
// tokens must lie in [0, vocabulary) as on the CPU (not checked). dwte by atomicAdd; dwpe summed over the
// batch in the CPU's order (deterministic, bit-equal). Either gradient may be null.
void embeddingForward(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T,
                      std::size_t C, cudaStream_t stream);
void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T,
                       std::size_t C, cudaStream_t stream);

// ---- attention.cu (the permutes; the fused attention is in attention.h) ---------------------------------

void headsFromRows(float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream);
void rowsFromHeads(float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream);

// ---- moe_routing.cu (CPU-exact: the routing decisions and gates are the CPU's; no atomics) ----------------

void moeTopK(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k, cudaStream_t stream);
void moeAssign(int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E, std::size_t capacity,
               cudaStream_t stream);
void moeDispatch(float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C, cudaStream_t stream);
void moeDispatchBackward(float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k, std::size_t C,
                         cudaStream_t stream);
void moeCombine(float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k, std::size_t C,
                cudaStream_t stream);
void moeCombineBackward(float* dout, float* dgate, const float* dy, const float* out, const float* gate, const int* slot,
                        std::size_t N, std::size_t k, std::size_t C, cudaStream_t stream);
void moeGateBackward(float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                     std::size_t N, std::size_t E, std::size_t k, cudaStream_t stream);

}  // namespace ts::cuda
