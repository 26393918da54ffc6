#pragma once
// The ops the layers run, on their Device: the CPU implementations (kernels/cpu/cpu_ops.h) or the CUDA ones
// (kernels/cuda: own kernels, cuBLASLt, cuDNN), with the same arguments and the same accumulate (+=)
// semantics. Pointers are in the device's memory.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/cpu_ops.h"
#include "workloads/device.h"

namespace ts::wl::ops {

void gemm(Device& d, bool transA, bool transB, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc);
void gemmStridedBatched(Device& d, bool transA, bool transB, int m, int n, int k, float alpha, const float* A, int lda,
                        std::int64_t strideA, const float* B, int ldb, std::int64_t strideB, float beta, float* C, int ldc,
                        std::int64_t strideC, int batch);
void layernormForward(Device& d, float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C);
void layernormBackward(Device& d, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, const float* mean, const float* rstd, std::size_t N, std::size_t C);
void softmaxForward(Device& d, float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT);
void softmaxBackward(Device& d, float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols);
void geluForward(Device& d, float* out, const float* inp, std::size_t n);
void geluBackward(Device& d, float* dinp, const float* inp, const float* dout, std::size_t n);
void reluForward(Device& d, float* out, const float* inp, std::size_t n);
// The input-gradient ops that take a cpu::Write: kOverwrite writes dinp without reading it (on CUDA: dinp is
// zeroed on the stream first, then the accumulating kernel runs; the same result).
using cpu::Write;
void reluBackward(Device& d, float* dinp, const float* inp, const float* dout, std::size_t n, Write write = Write::kAccumulate);
void biasAdd(Device& d, float* out, const float* inp, const float* bias, std::size_t N, std::size_t C);
void biasBackward(Device& d, float* dbias, const float* dout, std::size_t N, std::size_t C);
void residualAdd(Device& d, float* out, const float* a, const float* b, std::size_t n);
void residualAddRelu(Device& d, float* out, const float* a, const float* b, std::size_t n);  // CUDA: the two ops
void axpy(Device& d, float* y, const float* x, float alpha, std::size_t n);
void scale(Device& d, float* x, float alpha, std::size_t n);
double sumOfSquares(Device& d, const float* x, std::size_t n);  // synchronous
// replicas: SyncBatchNorm's statistics over the data-parallel group (cpu::ReplicaSum; the CPU only: on CUDA,
// an error).
// reluAfter: relu(y) in the same pass (on CUDA: a ReLU after).
void batchnormForward(Device& d, float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float* runningMean, float* runningVar,
                      const cpu::ReplicaSum* replicas = nullptr, bool reluAfter = false, ConvLayout layout = ConvLayout::kNchw);
void batchnormInference(Device& d, float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t N, std::size_t C, std::size_t HW,
                        ConvLayout layout = ConvLayout::kNchw);
void batchnormBackward(Device& d, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW,
                       Write write = Write::kAccumulate, const cpu::ReplicaSum* replicas = nullptr,
                       ConvLayout layout = ConvLayout::kNchw);
void globalAvgPoolForward(Device& d, float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW,
                          ConvLayout layout = ConvLayout::kNchw);
void globalAvgPoolBackward(Device& d, float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW,
                           ConvLayout layout = ConvLayout::kNchw);
void maxPool2dForward(Device& d, float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride,
                      int pad, ConvLayout layout = ConvLayout::kNchw);
void maxPool2dBackward(Device& d, float* dinp, const float* dout, const int* argmax, std::size_t outCount);
// Dropout (the CPU only in this version: on CUDA, an error).
void dropoutForward(Device& d, float* out, const float* inp, std::size_t rows, std::size_t cols, const cpu::DropoutKeys& keys);
void dropoutBackward(Device& d, float* dinp, const float* dout, std::size_t rows, std::size_t cols, const cpu::DropoutKeys& keys,
                     Write write = Write::kAccumulate);
void transposeImages(Device& d, float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW,
                     ConvLayout from);  // CPU
void embeddingForward(Device& d, float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T,
                      std::size_t C);
void embeddingBackward(Device& d, float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T,
                       std::size_t C);
void crossEntropyForwardBackward(Device& d, float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss);
// No bias (BatchNorm follows); the filter KCRS in either activation layout.
void conv2dForward(Device& d, float* y, const float* x, const float* w, const cpu::Conv2dShape& s,
                   ConvLayout layout = ConvLayout::kNchw);
void conv2dBackwardData(Device& d, float* dx, const float* dy, const float* w, const cpu::Conv2dShape& s,
                        Write write = Write::kAccumulate, ConvLayout layout = ConvLayout::kNchw);
void conv2dBackwardFilter(Device& d, float* dw, const float* dy, const float* x, const cpu::Conv2dShape& s,
                          ConvLayout layout = ConvLayout::kNchw);
void sgdMomentumUpdate(Device& d, float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu,
                       float weightDecay);
void adamUpdate(Device& d, float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                float beta2, float eps, float weightDecay, int t);
void adamwUpdate(Device& d, float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                 float beta2, float eps, float weightDecay, int t);
void rmspropUpdate(Device& d, float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay);
// The element-wise optimizers' step over a model's tensors at once (cpu::updateMany: one parallel region);
// on CUDA one launch per tensor.
void updateMany(Device& d, const cpu::UpdateRule& rule, const std::vector<cpu::UpdateTensor>& tensors);
void lambUpdate(Device& d, float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr,
                float beta1, float beta2, float eps, float weightDecay, int t);
void lambMoments(Device& d, const float* params, const float* grads, float* m, float* v, std::size_t n, float beta1, float beta2,
                 float eps, float weightDecay, int t, double* sums);
void lambApply(Device& d, float* params, const float* m, const float* v, std::size_t n, float lr, float beta1, float beta2,
               float eps, float weightDecay, int t, double trust);
void headsFromRows(Device& d, float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W);
void rowsFromHeads(Device& d, float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W);
// Mixture-of-experts routing (cpu_ops.h says what each computes; kernels/cpu/moe_routing.cpp, kernels/cuda/moe_routing.cu).
void moeTopK(Device& d, int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k);
void moeAssign(Device& d, int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E,
               std::size_t capacity);
void moeDispatch(Device& d, float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C);
void moeDispatchBackward(Device& d, float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k, std::size_t C);
void moeCombine(Device& d, float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k,
                std::size_t C);
void moeCombineBackward(Device& d, float* dout, float* dgate, const float* dy, const float* out, const float* gate,
                        const int* slot, std::size_t N, std::size_t k, std::size_t C);
void moeGateBackward(Device& d, float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                     std::size_t N, std::size_t E, std::size_t k);
void roundToBFloat16(Device& d, float* x, std::size_t n);
void roundToHalf(Device& d, float* x, std::size_t n);

}  // namespace ts::wl::ops
