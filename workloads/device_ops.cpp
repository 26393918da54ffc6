// Each op once: the CPU implementation, or the CUDA one on the device's stream. TS_OP forwards the same
// arguments to both, so the two backends cannot drift apart in what they are given.
#include "workloads/device_ops.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/convolution.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "workloads/device_cuda.h"
#define TS_STREAM(d) static_cast<cudaStream_t>((d).stream())
#define TS_OP(d, fn, ...) ((d).cuda() ? ::ts::cuda::fn(__VA_ARGS__, TS_STREAM(d)) : ::ts::cpu::fn(__VA_ARGS__))
#else
#define TS_OP(d, fn, ...) ((void)(d), ::ts::cpu::fn(__VA_ARGS__))
#endif

namespace ts::wl::ops {

void gemm([[maybe_unused]] Device& d, bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
          int ldb, float beta, float* C, int ldc) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return gemmStridedBatched(d, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
#endif
  cpu::gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemmStridedBatched([[maybe_unused]] Device& d, bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda,
                        std::int64_t sA, const float* B, int ldb, std::int64_t sB, float beta, float* C, int ldc, std::int64_t sC,
                        int batch) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) {
    cuda::GemmSpec g;
    g.transA = ta;
    g.transB = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.batch = batch;
    g.strideA = sA;
    g.strideB = sB;
    g.strideC = sC;
    g.alpha = alpha;
    g.beta = beta;
    auto& cs = d.cudaState();
    g.tf32 = cs.matmul == Precision::kTF32;
    if (cs.matmul == Precision::kBFloat16 || cs.matmul == Precision::kFloat16) {
      // Tensor-core GEMMs: the inputs in the 16-bit format (their whole strided extent), float32 out.
      g.inputs = storageType(cs.matmul);
      const auto extent = [batch](std::int64_t stride, int rows, int ld, int cols) {
        return static_cast<std::size_t>(stride) * static_cast<std::size_t>(batch - 1) + static_cast<std::size_t>(rows - 1) * ld +
               cols;
      };
      const void* a16 = cs.sixteenBit(A, extent(sA, ta ? k : m, lda, ta ? m : k), false);
      const void* b16 = cs.sixteenBit(B, extent(sB, tb ? n : k, ldb, tb ? k : n), true);
      return cs.blas->gemm(g, a16, b16, C, TS_STREAM(d));
    }
    return cs.blas->gemm(g, A, B, C, TS_STREAM(d));
  }
#endif
  cpu::gemmStridedBatched(ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch);
}

void layernormForward([[maybe_unused]] Device& d, float* out, float* mean, float* rstd, const float* inp, const float* w,
                      const float* b, std::size_t N, std::size_t C) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return cuda::layernormForward(out, mean, rstd, inp, w, b, N, C, TS_STREAM(d));
#endif
  cpu::layernormForward(out, mean, rstd, inp, w, b, N, C);
}
void layernormBackward([[maybe_unused]] Device& d, float* dinp, float* dw, float* db, const float* dout, const float* inp,
                       const float* w, const float* mean, const float* rstd, std::size_t N, std::size_t C) {
  TS_OP(d, layernormBackward, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
void softmaxForward([[maybe_unused]] Device& d, float* out, const float* inp, std::size_t rows, std::size_t cols,
                    std::size_t causalT) {
  TS_OP(d, softmaxForward, out, inp, rows, cols, causalT);
}
void softmaxBackward([[maybe_unused]] Device& d, float* dinp, const float* dout, const float* out, std::size_t rows,
                     std::size_t cols) {
  TS_OP(d, softmaxBackward, dinp, dout, out, rows, cols);
}
void geluForward([[maybe_unused]] Device& d, float* out, const float* inp, std::size_t n) { TS_OP(d, geluForward, out, inp, n); }
void geluBackward([[maybe_unused]] Device& d, float* dinp, const float* inp, const float* dout, std::size_t n) {
  TS_OP(d, geluBackward, dinp, inp, dout, n);
}
void reluForward([[maybe_unused]] Device& d, float* out, const float* inp, std::size_t n) { TS_OP(d, reluForward, out, inp, n); }
#ifdef TRAINSCOPE_HAVE_CUDA
namespace {
// CUDA's input-gradient kernels accumulate: an overwrite is a zeroed buffer first (as the layers did).
void zeroForOverwriteOnCuda(Device& d, float* dinp, std::size_t n, Write write) {
  if (d.cuda() && write == Write::kOverwrite) d.zero(dinp, n * sizeof(float));
}
}  // namespace
#endif

void reluBackward([[maybe_unused]] Device& d, float* dinp, const float* inp, const float* dout, std::size_t n, Write write) {
#ifdef TRAINSCOPE_HAVE_CUDA
  zeroForOverwriteOnCuda(d, dinp, n, write);
  if (d.cuda()) return cuda::reluBackward(dinp, inp, dout, n, TS_STREAM(d));
#endif
  cpu::reluBackward(dinp, inp, dout, n, write);
}
void biasAdd([[maybe_unused]] Device& d, float* out, const float* inp, const float* bias, std::size_t N, std::size_t C) {
  TS_OP(d, biasAdd, out, inp, bias, N, C);
}
void biasBackward([[maybe_unused]] Device& d, float* dbias, const float* dout, std::size_t N, std::size_t C) {
  TS_OP(d, biasBackward, dbias, dout, N, C);
}
void residualAdd([[maybe_unused]] Device& d, float* out, const float* a, const float* b, std::size_t n) {
  TS_OP(d, residualAdd, out, a, b, n);
}
void residualAddRelu(Device& d, float* out, const float* a, const float* b, std::size_t n) {
  if (!d.cuda()) return cpu::residualAddRelu(out, a, b, n);
  residualAdd(d, out, a, b, n);
  reluForward(d, out, out, n);
}
void axpy([[maybe_unused]] Device& d, float* y, const float* x, float alpha, std::size_t n) { TS_OP(d, axpy, y, x, alpha, n); }
void scale([[maybe_unused]] Device& d, float* x, float alpha, std::size_t n) { TS_OP(d, scale, x, alpha, n); }
double sumOfSquares([[maybe_unused]] Device& d, const float* x, std::size_t n) { return TS_OP(d, sumOfSquares, x, n); }
namespace {
// SyncBatchNorm's sums are host float64 between the passes of the CPU kernels; the CUDA kernels are fused.
void requireCpuForSyncBatchNorm([[maybe_unused]] Device& d, const cpu::ReplicaSum* replicas) {
  if (replicas && d.cuda()) throw Error("SyncBatchNorm (--sync-bn) runs on the CPU only in this version");
}
// The CUDA image ops take NCHW only (the CNN picks channels-last on the CPU alone: workloads/layers/convolution.h).
void requireNchwOnCuda(Device& d, ConvLayout layout) {
  if (layout != ConvLayout::kNchw && d.cuda())
    throw Error("channels-last (nhwc) activations run on the CPU only in this version");
}
}  // namespace

void batchnormForward([[maybe_unused]] Device& d, float* out, float* mean, float* rstd, const float* inp, const float* w,
                      const float* b, std::size_t N, std::size_t C, std::size_t HW, float* runningMean, float* runningVar,
                      const cpu::ReplicaSum* replicas, bool reluAfter, ConvLayout layout) {
  requireCpuForSyncBatchNorm(d, replicas);
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) {
    cuda::batchnormForward(out, mean, rstd, inp, w, b, N, C, HW, 1e-5f, runningMean, runningVar, 0.1f, TS_STREAM(d));
    if (reluAfter) cuda::reluForward(out, out, N * C * HW, TS_STREAM(d));
    return;
  }
#endif
  cpu::batchnormForward(out, mean, rstd, inp, w, b, N, C, HW, 1e-5f, runningMean, runningVar, 0.1f, replicas, reluAfter, layout);
}
void batchnormInference([[maybe_unused]] Device& d, float* out, const float* inp, const float* w, const float* b,
                        const float* runningMean, const float* runningVar, std::size_t N, std::size_t C, std::size_t HW,
                        ConvLayout layout) {
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return cuda::batchnormInference(out, inp, w, b, runningMean, runningVar, N, C, HW, 1e-5f, TS_STREAM(d));
#endif
  cpu::batchnormInference(out, inp, w, b, runningMean, runningVar, N, C, HW, 1e-5f, layout);
}
void batchnormBackward([[maybe_unused]] Device& d, float* dinp, float* dw, float* db, const float* dout, const float* inp,
                       const float* w, const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW,
                       Write write, const cpu::ReplicaSum* replicas, ConvLayout layout) {
  requireCpuForSyncBatchNorm(d, replicas);
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  zeroForOverwriteOnCuda(d, dinp, N * C * HW, write);
  if (d.cuda()) return cuda::batchnormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, HW, TS_STREAM(d));
#endif
  cpu::batchnormBackward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, HW, write, replicas, layout);
}
void globalAvgPoolForward(Device& d, float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW,
                          ConvLayout layout) {
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return cuda::globalAvgPoolForward(out, inp, N, C, HW, TS_STREAM(d));
#endif
  cpu::globalAvgPoolForward(out, inp, N, C, HW, layout);
}
void globalAvgPoolBackward(Device& d, float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW,
                           ConvLayout layout) {
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return cuda::globalAvgPoolBackward(dinp, dout, N, C, HW, TS_STREAM(d));
#endif
  cpu::globalAvgPoolBackward(dinp, dout, N, C, HW, layout);
}
void maxPool2dForward(Device& d, float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride,
                      int pad, ConvLayout layout) {
  requireNchwOnCuda(d, layout);
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) return cuda::maxPool2dForward(out, argmax, inp, N, C, H, W, k, stride, pad, TS_STREAM(d));
#endif
  cpu::maxPool2dForward(out, argmax, inp, N, C, H, W, k, stride, pad, layout);
}
void dropoutForward(Device& d, float* out, const float* inp, std::size_t rows, std::size_t cols, const cpu::DropoutKeys& keys) {
  if (d.cuda()) throw Error("--dropout runs on the CPU only in this version");
  cpu::dropoutForward(out, inp, rows, cols, keys);
}
void dropoutBackward(Device& d, float* dinp, const float* dout, std::size_t rows, std::size_t cols, const cpu::DropoutKeys& keys,
                     Write write) {
  if (d.cuda()) throw Error("--dropout runs on the CPU only in this version");
  cpu::dropoutBackward(dinp, dout, rows, cols, keys, write);
}
void transposeImages(Device& d, float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, ConvLayout from) {
  requireNchwOnCuda(d, ConvLayout::kNhwc);
  cpu::transposeImages(out, inp, N, C, HW, from);
}
void maxPool2dBackward([[maybe_unused]] Device& d, float* dinp, const float* dout, const int* argmax, std::size_t outCount) {
  TS_OP(d, maxPool2dBackward, dinp, dout, argmax, outCount);
}
void embeddingForward([[maybe_unused]] Device& d, float* out, const int* tokens, const float* wte, const float* wpe,
                      std::size_t B, std::size_t T, std::size_t C) {
  TS_OP(d, embeddingForward, out, tokens, wte, wpe, B, T, C);
}
void embeddingBackward([[maybe_unused]] Device& d, float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B,
                       std::size_t T, std::size_t C) {
  TS_OP(d, embeddingBackward, dwte, dwpe, dout, tokens, B, T, C);
}
void crossEntropyForwardBackward([[maybe_unused]] Device& d, float* losses, float* dlogits, const float* logits,
                                 const int* targets, std::size_t N, std::size_t V, float dloss) {
  TS_OP(d, crossEntropyForwardBackward, losses, dlogits, logits, targets, N, V, dloss);
}

// Convolutions: oneDNN on the CPU (im2col + GEMM in a build without it; kernels/cpu/convolution.h); cuDNN on
// CUDA (its algorithm chosen once per shape by its heuristics, the workspace kept with the device).
#ifdef TRAINSCOPE_HAVE_CUDA
namespace {
#ifdef TRAINSCOPE_HAVE_CUDNN
cuda::Convolution& convolutionFor(Device& d, const cpu::Conv2dShape& s) { return d.cudaState().convolution(s); }
#else
[[noreturn]] void noCudnn() { throw UsageError("the CNN on CUDA needs cuDNN, and this trainscope was built without it"); }
#endif
}  // namespace
#endif

namespace {
// The layers' CPU convolution: the build's default algorithm, activations in `layout`, the filter KCRS.
cpu::ConvMethod layerMethod(ConvLayout layout) { return {cpu::defaultConvAlgorithm(), layout, cpu::FilterLayout::kKcrs}; }

// A convolution through cuDNN on a CUDA device (an error where cuDNN is not built in), else on the CPU.
template <typename OnCuda, typename OnCpu>
void convolution([[maybe_unused]] Device& d, [[maybe_unused]] const cpu::Conv2dShape& s, [[maybe_unused]] OnCuda&& onCuda,
                 OnCpu&& onCpu) {
#ifdef TRAINSCOPE_HAVE_CUDA
  if (d.cuda()) {
#ifdef TRAINSCOPE_HAVE_CUDNN
    return onCuda(convolutionFor(d, s), TS_STREAM(d));
#else
    noCudnn();
#endif
  }
#endif
  onCpu();
}
}  // namespace

void conv2dForward(Device& d, float* y, const float* x, const float* w, const cpu::Conv2dShape& s, ConvLayout layout) {
  requireNchwOnCuda(d, layout);
  convolution(
      d, s, [&](auto& c, auto stream) { c.forward(y, x, w, nullptr, stream, 0.0f); },
      [&] { cpu::conv2dForward(y, x, w, nullptr, s, layerMethod(layout)); });
}
void conv2dBackwardData(Device& d, float* dx, const float* dy, const float* w, const cpu::Conv2dShape& s, Write write,
                        ConvLayout layout) {
  requireNchwOnCuda(d, layout);
  const float beta = write == Write::kOverwrite ? 0.0f : 1.0f;  // cuDNN's: dx = conv^T(dy) + beta dx
  convolution(
      d, s, [&](auto& c, auto stream) { c.backwardData(dx, dy, w, stream, beta); },
      [&] { cpu::conv2dBackwardData(dx, dy, w, s, layerMethod(layout), write); });
}
void conv2dBackwardFilter(Device& d, float* dw, const float* dy, const float* x, const cpu::Conv2dShape& s, ConvLayout layout) {
  requireNchwOnCuda(d, layout);
  convolution(
      d, s, [&](auto& c, auto stream) { c.backwardFilter(dw, nullptr, dy, x, stream, 1.0f); },
      [&] { cpu::conv2dBackwardFilter(dw, nullptr, dy, x, s, layerMethod(layout)); });
}

void sgdMomentumUpdate([[maybe_unused]] Device& d, float* p, const float* g, float* mom, std::size_t n, float lr, float mu,
                       float wd) {
  TS_OP(d, sgdMomentumUpdate, p, g, mom, n, lr, mu, wd);
}
void adamUpdate([[maybe_unused]] Device& d, float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1,
                float b2, float eps, float wd, int t) {
  TS_OP(d, adamUpdate, p, g, m, v, n, lr, b1, b2, eps, wd, t);
}
void adamwUpdate([[maybe_unused]] Device& d, float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1,
                 float b2, float eps, float wd, int t) {
  TS_OP(d, adamwUpdate, p, g, m, v, n, lr, b1, b2, eps, wd, t);
}
void rmspropUpdate([[maybe_unused]] Device& d, float* p, const float* g, float* sq, std::size_t n, float lr, float alpha,
                   float eps, float wd) {
  TS_OP(d, rmspropUpdate, p, g, sq, n, lr, alpha, eps, wd);
}
void updateMany(Device& d, const cpu::UpdateRule& r, const std::vector<cpu::UpdateTensor>& tensors) {
  if (!d.cuda()) return cpu::updateMany(r, tensors.data(), tensors.size());
  for (const cpu::UpdateTensor& x : tensors) {
    switch (r.kind) {
      case cpu::ElementwiseUpdate::kSgd:
        sgdMomentumUpdate(d, x.params, x.grads, x.a, x.n, r.lr, r.momentum, x.weightDecay);
        break;
      case cpu::ElementwiseUpdate::kAdam:
        adamUpdate(d, x.params, x.grads, x.a, x.b, x.n, r.lr, r.beta1, r.beta2, r.eps, x.weightDecay, r.t);
        break;
      case cpu::ElementwiseUpdate::kAdamW:
        adamwUpdate(d, x.params, x.grads, x.a, x.b, x.n, r.lr, r.beta1, r.beta2, r.eps, x.weightDecay, r.t);
        break;
      case cpu::ElementwiseUpdate::kRmsprop:
        rmspropUpdate(d, x.params, x.grads, x.a, x.n, r.lr, r.alpha, r.eps, x.weightDecay);
        break;
    }
  }
}
void lambUpdate([[maybe_unused]] Device& d, float* p, const float* g, float* m, float* v, float* u, std::size_t n, float lr,
                float b1, float b2, float eps, float wd, int t) {
  TS_OP(d, lambUpdate, p, g, m, v, u, n, lr, b1, b2, eps, wd, t);
}
void lambMoments([[maybe_unused]] Device& d, const float* p, const float* g, float* m, float* v, std::size_t n, float b1,
                 float b2, float eps, float wd, int t, double* sums) {
  TS_OP(d, lambMoments, p, g, m, v, n, b1, b2, eps, wd, t, sums);
}
void lambApply([[maybe_unused]] Device& d, float* p, const float* m, const float* v, std::size_t n, float lr, float b1, float b2,
               float eps, float wd, int t, double trust) {
  TS_OP(d, lambApply, p, m, v, n, lr, b1, b2, eps, wd, t, trust);
}
void headsFromRows([[maybe_unused]] Device& d, float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W) {
  TS_OP(d, headsFromRows, heads, rows, B, T, NH, D, col0, W);
}
void rowsFromHeads([[maybe_unused]] Device& d, float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W) {
  TS_OP(d, rowsFromHeads, rows, heads, B, T, NH, D, col0, W);
}
void roundToBFloat16([[maybe_unused]] Device& d, float* x, std::size_t n) { TS_OP(d, roundToBFloat16, x, n); }
void roundToHalf([[maybe_unused]] Device& d, float* x, std::size_t n) { TS_OP(d, roundToHalf, x, n); }

void moeTopK([[maybe_unused]] Device& d, int* expert, float* gate, const float* probs, std::size_t N, std::size_t E,
             std::size_t k) {
  TS_OP(d, moeTopK, expert, gate, probs, N, E, k);
}
void moeAssign([[maybe_unused]] Device& d, int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E,
               std::size_t capacity) {
  TS_OP(d, moeAssign, slot, routed, expert, N, k, E, capacity);
}
void moeDispatch([[maybe_unused]] Device& d, float* buf, const float* x, const int* slot, std::size_t N, std::size_t k,
                 std::size_t C) {
  TS_OP(d, moeDispatch, buf, x, slot, N, k, C);
}
void moeDispatchBackward([[maybe_unused]] Device& d, float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k,
                         std::size_t C) {
  TS_OP(d, moeDispatchBackward, dx, dbuf, slot, N, k, C);
}
void moeCombine([[maybe_unused]] Device& d, float* y, const float* out, const float* gate, const int* slot, std::size_t N,
                std::size_t k, std::size_t C) {
  TS_OP(d, moeCombine, y, out, gate, slot, N, k, C);
}
void moeCombineBackward([[maybe_unused]] Device& d, float* dout, float* dgate, const float* dy, const float* out,
                        const float* gate, const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  TS_OP(d, moeCombineBackward, dout, dgate, dy, out, gate, slot, N, k, C);
}
void moeGateBackward([[maybe_unused]] Device& d, float* dprobs, const float* dgate, const float* probs, const int* expert,
                     const float* auxGrad, std::size_t N, std::size_t E, std::size_t k) {
  TS_OP(d, moeGateBackward, dprobs, dgate, probs, expert, auxGrad, N, E, k);
}

}  // namespace ts::wl::ops
