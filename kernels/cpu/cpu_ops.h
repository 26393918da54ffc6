#pragma once
// The CPU implementations of the compute ops: the reference the CUDA ops are tested against, and the CPU
// backend the workloads train with. Row-major float32 throughout (GEMM through OpenBLAS); each op says what
// it computes and what it moves, as llm.c does. The CUDA ops (kernels/cuda/) take the same arguments.
//
// Gradients accumulate (+=) into dweight/dbias, so that one backward can sum over micro-batches; dinp is
// accumulated as well, matching how a layer's input gradient sums contributions from several consumers.
// The input-gradient ops of the CNN (ReLU, batch norm, convolution backward-data) can instead overwrite
// dinp (Write::kOverwrite): a layer that owns its gradient buffer then neither zero-fills it first nor reads
// it back (those passes were 6% of a ResNet step, issue #20).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace ts {
// The layout of image activations [N, C, H, W]: NCHW, or channels-last NHWC (each pixel's C values
// adjacent), which oneDNN convolves without reordering (kernels/cpu/convolution.h; the CNN's layout on the
// CPU). The ops that take one default to NCHW, the CUDA ops' only layout.
enum class ConvLayout { kNchw, kNhwc };
}  // namespace ts

namespace ts::cpu {

// How a backward op stores an input gradient: added into dinp, or written over it.
enum class Write { kAccumulate, kOverwrite };

// C[m,n] = alpha * op(A)[m,k] @ op(B)[k,n] + beta * C, op = transpose when the flag is set. Row-major,
// leading dimensions as stored. 2*m*n*k FLOPs; reads A, B (and C when beta != 0), writes C.
void gemm(bool transA, bool transB, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc);
// The same in float64 (the reference for the others and for GEMM itself).
void gemm(bool transA, bool transB, int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
          double beta, double* C, int ldc);
// `batch` independent GEMMs, matrix b of each operand `stride` elements after matrix b-1 (as
// cublasGemmStridedBatched): C_b = alpha op(A_b) op(B_b) + beta C_b. 2*batch*m*n*k FLOPs.
void gemmStridedBatched(bool transA, bool transB, int m, int n, int k, float alpha, const float* A, int lda, std::int64_t strideA,
                        const float* B, int ldb, std::int64_t strideB, float beta, float* C, int ldc, std::int64_t strideC,
                        int batch);
void gemmStridedBatched(bool transA, bool transB, int m, int n, int k, double alpha, const double* A, int lda,
                        std::int64_t strideA, const double* B, int ldb, std::int64_t strideB, double beta, double* C, int ldc,
                        std::int64_t strideC, int batch);
// How gemmStridedBatched runs such a batch on the compute threads as now set (for the kernels benchmark's
// record): "OpenBLAS sgemm, 48 matrices whole to 2 threads" (each matrix one single-threaded call, on
// whichever thread is free), "..., then 1 on all threads" (the rest of a batch that is no multiple of the
// threads), or "OpenBLAS sgemm" (one matrix after another, each split over the threads by OpenBLAS).
std::string gemmStridedBatchedImplementation(int m, int n, int ldc, std::int64_t strideC, int batch);
// GEMM with an epilogue, as cuBLASLt's CUBLASLT_EPILOGUE_BIAS / GELU / GELU_BIAS:
// C = act(alpha op(A) op(B) + beta C + bias[n]), bias (one value per column of C; null: none) added to
// every row, act = GELU (tanh form) when gelu is set (else the identity). Fused into oneDNN's GEMM where
// built with it (dense operands, alpha 1, beta 0), else a pass over C after the GEMM (reads C once more).
void gemmEpilogue(bool transA, bool transB, int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb,
                  float beta, float* C, int ldc, const float* bias, bool gelu);
// What gemmEpilogue runs for a dense call of that shape: "oneDNN inner product x64:gemm:jit", "OpenBLAS
// sgemm, then a pass over C", ... (for the kernels benchmark's record).
std::string gemmEpilogueImplementation(bool transA, bool transB, int m, int n, int k, bool bias, bool gelu);

// LayerNorm over the last dimension of inp[N,C]: out = (x - mean) * rstd * weight + bias; saves mean[N]
// and rstd[N] for the backward. Reads N*C, writes N*C (+2N).
void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, float eps = 1e-5f);
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C);

// Row-wise softmax of inp[rows, cols] (max-subtracted). With causalT > 0 the rows are attention scores
// [..., T, T] and row r may only attend to columns <= r % T (the rest become 0).
void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT = 0);
// dinp += softmax backward: dinp_j = y_j * (dout_j - sum_k dout_k y_k).
void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols);

// GELU, tanh approximation (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
void geluForward(float* out, const float* inp, std::size_t n);
void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n);  // dinp += gelu'(x) * dout

// ReLU: out = max(x, 0); dinp += dout where x > 0 (kOverwrite: dinp = dout there, 0 elsewhere).
void reluForward(float* out, const float* inp, std::size_t n);
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, Write write = Write::kAccumulate);

// Dropout over x[rows, cols] (training: out = x m / (1 - p), m = 0 with probability p). The mask is a pure
// function of `keys` and each element's global row and column (kernels/cpu/dropout.cpp), so the same element
// gets the same draw in every layout, and the backward recomputes it: dinp = dout m / (1 - p).
struct DropoutKeys {
  std::uint64_t seed = 0, layer = 0;  // the run's seed; the layer (a hash of its name)
  std::int64_t step = 0;              // the training step
  // Row r is position r % rowsPerSample (a token) of sample firstSample + r / rowsPerSample (the sample's place
  // in the run's order: the same in every layout); its global row is sample * rowsPerSample + position.
  std::int64_t firstSample = 0;
  std::int64_t rowsPerSample = 1;
  std::int64_t colOffset = 0;  // the global column of column 0 (a tensor-parallel slice's first feature)
  float p = 0;                 // the drop probability, in [0, 1)
};
void dropoutForward(float* out, const float* inp, std::size_t rows, std::size_t cols, const DropoutKeys& keys);
void dropoutBackward(float* dinp, const float* dout, std::size_t rows, std::size_t cols, const DropoutKeys& keys,
                     Write write = Write::kAccumulate);

// out[N,C] = inp[N,C] + bias[C].   out[n] = a[n] + b[n].
void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C);
void residualAdd(float* out, const float* a, const float* b, std::size_t n);
// out[n] = max(a[n] + b[n], 0): a residual block's sum and its ReLU in one pass.
void residualAddRelu(float* out, const float* a, const float* b, std::size_t n);
// dbias[C] += column sums of dout[N,C] (the bias gradient of a linear layer).
void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C);
// y += alpha * x;  x *= alpha;  sum of x^2 in float64 (gradient norms).
void axpy(float* y, const float* x, float alpha, std::size_t n);
void scale(float* x, float alpha, std::size_t n);
double sumOfSquares(const float* x, std::size_t n);

// Batch normalisation of x[N,C,HW] per channel over N*HW (training: batch statistics, saved as mean[C] and
// rstd[C] for the backward; runningMean/runningVar updated with `momentum` when not null); x[N,HW,C] with
// layout NHWC (normalization_channels_last.cpp).
//
// SyncBatchNorm: with `replicas`, the batch is split over processes (data parallel) and the statistics are
// the whole batch's: *replicas adds a vector of float64 over the processes in place (an all-reduce). The
// forward sums the channels' sums and value counts, then their centred squares; the backward its two
// gradient sums. dweight/dbias still take this process's own sums (the data-parallel gradient average adds
// them), and dinp the sums over all, so N processes of batch B train as one of batch N*B.
using ReplicaSum = std::function<void(double* values, std::size_t n)>;
// Evaluation (PyTorch's model.eval()): y = (x - runningMean) weight / sqrt(runningVar + eps) + bias.
void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t N, std::size_t C, std::size_t HW, float eps = 1e-5f,
                        ConvLayout layout = ConvLayout::kNchw);
// reluAfter: out = max(y, 0) in the same pass (a ResNet block's first batch norm and its ReLU).
void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float eps = 1e-5f, float* runningMean = nullptr,
                      float* runningVar = nullptr, float momentum = 0.1f, const ReplicaSum* replicas = nullptr,
                      bool reluAfter = false, ConvLayout layout = ConvLayout::kNchw);
void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW,
                       Write write = Write::kAccumulate, const ReplicaSum* replicas = nullptr,
                       ConvLayout layout = ConvLayout::kNchw);

// Global average pooling x[N,C,HW] (or [N,HW,C]) -> y[N,C]; the backward spreads dy / HW back (accumulating).
void globalAvgPoolForward(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW,
                          ConvLayout layout = ConvLayout::kNchw);
void globalAvgPoolBackward(float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW,
                           ConvLayout layout = ConvLayout::kNchw);
// Max pooling, window k, stride, padding (padded cells never win), y in x's layout; argmax[N*C*P*Q] keeps
// each output's winner (its index into x) for the backward. P = (H + 2 pad - k) / stride + 1.
void maxPool2dForward(float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride, int pad,
                      ConvLayout layout = ConvLayout::kNchw);
void maxPool2dBackward(float* dinp, const float* dout, const int* argmax, std::size_t outCount);
// An image tensor into the other layout: out[N, HW, C] from inp[N, C, HW] (from NCHW), or back (from NHWC).
void transposeImages(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, ConvLayout from);

// Token and position embeddings: out[B*T, C] = wte[tokens[b,t]] + wpe[t]; the backward accumulates into the
// rows of dwte and dwpe that were used.
void embeddingForward(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T,
                      std::size_t C);
void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T,
                       std::size_t C);

// Fused softmax cross-entropy over logits[N,V] with integer targets[N]: losses[n] = -log softmax(logits)[target];
// dlogits = (softmax - onehot(target)) * dloss (per row); either output may be null. Reads N*V, writes N*V.
void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss);

// Mixture-of-experts routing (moe_routing.cpp), over N tokens of C features, E experts, k = 1 or 2 choices a token.
// An assignment is (token n, choice j), index n k + j. The experts' buffer is [E * capacity, C]: expert e's rows
// from e * capacity, filled in assignment priority order; slot[a] is assignment a's row there, or -1 (dropped).
// expert[N k] and gate[N k] from probs[N, E] (a softmax's rows): each token's k most probable experts in
// descending order (ties: the lower index), gate = the probability (k = 1, Switch) or renormalised over the k
// (k = 2, Mixtral). Reads N E, writes 2 N k.
void moeTopK(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k);
// slot[N k] and routed[E] (the assignments each expert was chosen for, before dropping): every first choice in
// token order, then every second choice (GShard's priority), each taking its expert's next row while it has fewer
// than `capacity`, dropped after.
void moeAssign(int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E, std::size_t capacity);
// buf[slot[a]] = x[n] for each kept assignment (the other rows are left as they are). Reads and writes kept C each.
void moeDispatch(float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C);
// dx[n] = sum over n's kept assignments of dbuf[slot[a]] (written over; 0 when all were dropped).
void moeDispatchBackward(float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k, std::size_t C);
// y[n] = sum over n's kept assignments of gate[a] * out[slot[a]] (written over; 0 when all were dropped).
void moeCombine(float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k, std::size_t C);
// dout[slot[a]] = gate[a] dy[n] for each kept assignment (the other rows left as they are), dgate[a] = dy[n] . out[slot[a]]
// (0 when dropped). The dot products in float64.
void moeCombineBackward(float* dout, float* dgate, const float* dy, const float* out, const float* gate, const int* slot,
                        std::size_t N, std::size_t k, std::size_t C);
// dprobs[N, E] (written over) = the gates' gradient taken back through moeTopK's gates (the choice itself is not
// differentiated) + auxGrad[e] on every row (the auxiliary loss's d/dprobs, E values; null: none).
void moeGateBackward(float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                     std::size_t N, std::size_t E, std::size_t k);

// Adam's and AdamW's step factors, lr / c1 and 1 / sqrt(c2) with c = 1 - beta^t: float64, rounded to float once
// (the CPU and CUDA updates take the same ones).
struct AdamFactors {
  float stepSize, invSqrtC2;
};
inline AdamFactors adamFactors(float lr, float beta1, float beta2, int t) {
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t), c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  return {static_cast<float>(lr / c1), static_cast<float>(1.0 / std::sqrt(c2))};
}
// AdamW (decoupled weight decay), step t >= 1: m, v updated in place; params -= lr * (mhat / (sqrt(vhat) + eps) + wd * params),
// in float as PyTorch computes it: p - lr wd p - (lr / c1) m / (sqrt(v) / sqrt(c2) + eps), c = 1 - beta^t.
void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int t);
// Adam with L2 weight decay added to the gradient (the original Adam): g' = g + wd p, then the Adam step
// (in float, as AdamW's).
void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t);
// RMSprop (PyTorch's form): g' = g + wd p; sq = alpha sq + (1 - alpha) g'^2; p -= lr g' / (sqrt(sq) + eps).
void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay);
// LAMB for one tensor: the AdamW direction u = mhat / (sqrt(vhat) + eps) + wd p, scaled by the trust ratio
// ||p|| / ||u|| (1 when either norm is 0): p -= lr * trust * u. `update` is scratch of n floats.
void lambUpdate(float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr, float beta1,
                float beta2, float eps, float weightDecay, int t);
// LAMB in two passes, for a tensor whose parts several ranks hold (ZeRO or parameter-server pieces, tensor-
// parallel slices): its trust ratio needs the whole tensor's norms. lambMoments advances m and v and adds this
// part's sums of p^2 and u^2 (float64) to sums[0] and sums[1]; the callers add the sums over the ranks; lambApply
// recomputes u from m, v and p (the same float expression as lambUpdate's) and steps p -= lr * trust * u, with
// trust = lambTrust(whole sums). No scratch: u is recomputed rather than kept for every part until the sums
// arrive. Reads p, g, m, v and writes m, v (moments); reads p, m, v and writes p (apply).
void lambMoments(const float* params, const float* grads, float* m, float* v, std::size_t n, float beta1, float beta2, float eps,
                 float weightDecay, int t, double* sums);
void lambApply(float* params, const float* m, const float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
               float weightDecay, int t, double trust);
// ||p|| / ||u|| from their squares; 1 when either is 0.
double lambTrust(double pSquared, double uSquared);
// SGD with momentum and (coupled) weight decay: g' = g + wd*p; buf = mu*buf + g'; p -= lr * buf.
void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay);

// A whole model's element-wise optimizer step in one parallel region (multi-tensor, as PyTorch's foreach and
// apex's multi_tensor_apply): the elements of all tensors, in order, split into one contiguous range per
// compute thread, each tensor with its own weight decay (biases and gains have none). The same bits as one
// call per tensor (the updates are element-wise); many small tensors (a ResNet's batch-norm gains) no longer
// wake the threads once each. LAMB is not element-wise (its trust ratio is per tensor) and has no Many.
enum class ElementwiseUpdate { kSgd, kAdam, kAdamW, kRmsprop };
struct UpdateRule {
  ElementwiseUpdate kind;
  float lr, beta1, beta2, eps;  // beta1/beta2/eps: Adam, AdamW; eps: RMSprop
  float momentum, alpha;        // SGD's momentum, RMSprop's alpha
  int t;                        // Adam's and AdamW's step, from 1
};
struct UpdateTensor {
  float* params;
  const float* grads;
  float* a;  // SGD's momentum buffer, Adam's m, RMSprop's square average
  float* b;  // Adam's v (else unused)
  std::size_t n;
  float weightDecay;
};
void updateMany(const UpdateRule& rule, const UpdateTensor* tensors, std::size_t count);

// 2-D convolution, NCHW: x[N,C,H,W] * w[K,C,R,S] (+ bias[K]) -> y[N,K,P,Q], with stride and zero padding;
// 2*N*K*P*Q*C*R*S FLOPs, through oneDNN where built with it, else im2col and GEMM (kernels/cpu/convolution.h,
// which also runs NHWC and names the method). The backward ops accumulate into dx, dw, dbias (dx: or
// overwrite it).
struct Conv2dShape {
  int N, C, H, W, K, R, S, stride, pad;
  int P() const { return (H + 2 * pad - R) / stride + 1; }
  int Q() const { return (W + 2 * pad - S) / stride + 1; }
};
void conv2dForward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s);
void conv2dBackwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, Write write = Write::kAccumulate);
void conv2dBackwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s);

// Causal scaled dot-product attention, q/k/v/out [B, NH, T, D]: out = softmax(q k^T / sqrt(D), causal) v.
// Two GEMMs and a softmax per (batch, head): 4*B*NH*T*T*D FLOPs (half of them masked away in a fused
// kernel); this reference computes the full score matrix.
void attentionForward(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D);
// The head permutes of multi-head attention: rows[B*T, W] (columns col0 .. col0 + NH*D of each row) <->
// heads[B, NH, T, D]. headsFromRows gathers q, k or v out of the fused QKV projection (col0 = 0, C, 2C;
// W = 3C); rowsFromHeads writes a head-major result back into row-major columns. Pure copies.
void headsFromRows(float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W);
void rowsFromHeads(float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W);

// Rounds x in place to the nearest bfloat16 / float16 value (float16: beyond 65504 becomes inf), the
// storage rounding of 16-bit mixed precision.
void roundToBFloat16(float* x, std::size_t n);
void roundToHalf(float* x, std::size_t n);

// float32 -> bfloat16 / float16 (round to nearest even): the reference the GPU tests hold cuda::castTo* to,
// which the mixed-precision weights take (workloads/device_cuda.cpp).
void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n);
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n);

}  // namespace ts::cpu
