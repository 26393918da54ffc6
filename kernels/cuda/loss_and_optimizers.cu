// The fused softmax cross-entropy and the optimizer updates on the GPU (kernels/cpu/loss_and_optimizers.cpp).
// Memory-bound: each optimizer reads and writes its state once per step. See cuda_ops.h for the arguments.
//
// Numerics. Cross-entropy, AdamW and SGD let nvcc contract into FMAs: they match the CPU to rounding.
// Adam, RMSprop and LAMB repeat the CPU's arithmetic step by step (the same float or double type at each
// step, explicit round-to-nearest intrinsics where nvcc would contract): bit-equal elementwise; LAMB's
// norms are float64 sums in a fixed order (deterministic). AdamW and Adam are PyTorch's float form:
// p -= (lr / c1) m / (sqrt(v) / sqrt(c2) + eps), the two factors computed once on the host.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"  // adamFactors: the CPU's step factors, bit for bit
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_resources.h"

namespace ts::cuda {
namespace {

// One warp per row of V logits: max and sum of exponentials, the loss, and the gradient written in the
// same pass over the row. Reads N*V, writes N*V (+N losses).
__global__ void crossEntropyKernel(float* losses, float* dlogits, const float* logits, const int* targets, int N, int V,
                                   float dloss) {
  const int row = static_cast<int>(firstRow());
  const int lane = static_cast<int>(laneId());
  if (row >= N) return;
  const float* z = logits + static_cast<std::size_t>(row) * V;
  float mx = -FLT_MAX;
  for (int v = lane; v < V; v += kWarp) mx = fmaxf(mx, z[v]);
  mx = warpMax(mx);
  float s = 0;
  for (int v = lane; v < V; v += kWarp) s += expf(z[v] - mx);
  s = warpSum(s);
  const int t = targets[row];
  if (losses && lane == 0) losses[row] = logf(s) - (z[t] - mx);
  if (dlogits) {
    const float inv = 1.0f / s;
    for (int v = lane; v < V; v += kWarp)
      dlogits[static_cast<std::size_t>(row) * V + v] = (expf(z[v] - mx) * inv - (v == t ? 1.0f : 0.0f)) * dloss;
  }
}

// AdamW: p - lr wd p - stepSize m / (sqrt(v) invSqrtC2 + eps); reads params, grads, m, v and writes params, m, v
// (28 bytes per parameter).
__device__ inline float adamwElement(float& p, float g, float& m, float& v, float lr, float b1, float b2, float eps, float wd,
                                     float stepSize, float invSqrtC2) {
  const float mi = b1 * m + (1 - b1) * g;
  const float vi = b2 * v + (1 - b2) * g * g;
  m = mi;
  v = vi;
  return p - lr * wd * p - stepSize * mi / (sqrtf(vi) * invSqrtC2 + eps);
}
__global__ void adamwKernel(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2, float eps,
                            float wd, float stepSize, float invSqrtC2) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride())
    p[i] = adamwElement(p[i], g[i], m[i], v[i], lr, b1, b2, eps, wd, stepSize, invSqrtC2);
}

// SGD with momentum: buf = mu buf + (g + wd p); p -= lr buf. Reads p, g, buf; writes p, buf (20 bytes per parameter).
__global__ void sgdKernel(float* p, const float* g, float* buf, std::size_t n, float lr, float mu, float wd) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float gi = g[i] + wd * p[i];
    buf[i] = mu * buf[i] + gi;
    p[i] -= lr * buf[i];
  }
}

// Adam with L2 decay in the gradient, all float as the CPU: g = grad + wd p; m = b1 m + (1-b1) g;
// v = b2 v + (1-b2) g g; p -= stepSize m / (sqrt(v) invSqrtC2 + eps). Reads p, g, m, v; writes p, m, v.
__global__ void adamKernel(float* p, const float* grads, float* m, float* v, std::size_t n, float b1, float oneMinusB1, float b2,
                           float oneMinusB2, float eps, float wd, float stepSize, float invSqrtC2) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float pi = p[i];
    const float g = __fadd_rn(grads[i], __fmul_rn(wd, pi));
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(oneMinusB1, g));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(oneMinusB2, g), g));
    m[i] = mi;
    v[i] = vi;
    p[i] = __fsub_rn(pi, __fdiv_rn(__fmul_rn(stepSize, mi), __fadd_rn(__fmul_rn(__fsqrt_rn(vi), invSqrtC2), eps)));
  }
}

// RMSprop, all float: g = grad + wd p; sq = alpha sq + (1-alpha) g g; p -= lr g / (sqrt(sq) + eps).
// Reads p, g, sq; writes p, sq.
__global__ void rmspropKernel(float* p, const float* grads, float* sq, std::size_t n, float lr, float alpha, float oneMinusAlpha,
                              float eps, float wd) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float pi = p[i];
    const float g = __fadd_rn(grads[i], __fmul_rn(wd, pi));
    const float s = __fadd_rn(__fmul_rn(alpha, sq[i]), __fmul_rn(__fmul_rn(oneMinusAlpha, g), g));
    sq[i] = s;
    p[i] = __fsub_rn(pi, __fdiv_rn(__fmul_rn(lr, g), __fadd_rn(__fsqrt_rn(s), eps)));
  }
}

// LAMB's direction as the CPU computes it: u = (float)((m / c1) / (sqrt(v / c2) + eps) + wd p), float64 inside.
__device__ inline float lambDirection(float mi, float vi, float pi, double c1, double c2, float eps, float wd) {
  return static_cast<float>((mi / c1) / (sqrt(vi / c2) + static_cast<double>(eps)) + static_cast<double>(__fmul_rn(wd, pi)));
}

// LAMB, part 1: m, v (float) and the AdamW direction u; block b writes partial[b] = sum of p^2 and
// partial[gridDim.x + b] = sum of u^2 (float64, p before the step); u is stored in `update` unless it is
// null (lambMoments recomputes it). Reads p, g, m, v; writes m, v (and update).
__global__ void lambDirectionKernel(double* partial, float* update, const float* p, const float* grads, float* m, float* v,
                                    std::size_t n, float b1, float oneMinusB1, float b2, float oneMinusB2, float eps, float wd,
                                    double c1, double c2) {
  double sp = 0, su = 0;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float g = grads[i], pi = p[i];
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(oneMinusB1, g));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(oneMinusB2, g), g));
    m[i] = mi;
    v[i] = vi;
    const float u = lambDirection(mi, vi, pi, c1, c2, eps, wd);
    if (update) update[i] = u;
    sp += static_cast<double>(pi) * pi;
    su += static_cast<double>(u) * u;
  }
  sp = blockSum(sp);
  su = blockSum(su);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sp;
    partial[gridDim.x + blockIdx.x] = su;
  }
}
// Part 2, one block: sums[0] = sum of p^2, sums[1] = sum of u^2 from the 2*blocks partial sums. Reads 2*blocks doubles.
__global__ void lambSumsKernel(double* sums, const double* partial, std::size_t blocks) {
  const double pNorm = sumPartials(partial, blocks);
  const double uNorm = sumPartials(partial + blocks, blocks);
  if (threadIdx.x == 0) {
    sums[0] = pNorm;
    sums[1] = uNorm;
  }
}
// Part 3: p -= (float)(lr trust update), trust = ||p|| / ||update|| from the two sums (1 when either is 0).
// Reads p, update (and the sums); writes p.
__global__ void lambApplyKernel(float* p, const float* update, const double* sums, std::size_t n, float lr) {
  const double trust = (sums[0] > 0 && sums[1] > 0) ? sqrt(sums[0]) / sqrt(sums[1]) : 1.0;
  const double lt = static_cast<double>(lr) * trust;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) p[i] = __fsub_rn(p[i], static_cast<float>(lt * update[i]));
}
// Part 3 of the two-pass LAMB: u recomputed from m, v, p; p -= (float)(lr trust u). Reads p, m, v; writes p.
__global__ void lambRecomputeApplyKernel(float* p, const float* m, const float* v, std::size_t n, double lrTrust, float eps,
                                         float wd, double c1, double c2) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride())
    p[i] = __fsub_rn(p[i], static_cast<float>(lrTrust * lambDirection(m[i], v[i], p[i], c1, c2, eps, wd)));
}

}  // namespace

void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N,
                                 std::size_t V, float dloss, cudaStream_t s) {
  crossEntropyKernel<<<everyRowGrid(N), kBlock, 0, s>>>(losses, dlogits, logits, targets, intExtent("cross-entropy rows", N),
                                                        intExtent("cross-entropy classes", V), dloss);
  CUDA_CHECK(cudaGetLastError());
}
void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                 float eps, float weightDecay, int t, cudaStream_t s) {
  const cpu::AdamFactors f = cpu::adamFactors(lr, beta1, beta2, t);
  adamwKernel<<<elementGrid(n), kBlock, 0, s>>>(params, grads, m, v, n, lr, beta1, beta2, eps, weightDecay, f.stepSize,
                                                f.invSqrtC2);
  CUDA_CHECK(cudaGetLastError());
}
void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay,
                       cudaStream_t s) {
  sgdKernel<<<elementGrid(n), kBlock, 0, s>>>(params, grads, momentum, n, lr, mu, weightDecay);
  CUDA_CHECK(cudaGetLastError());
}

void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t, cudaStream_t stream) {
  if (n == 0) return;
  const cpu::AdamFactors f = cpu::adamFactors(lr, beta1, beta2, t);
  adamKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, grads, m, v, n, beta1, 1 - beta1, beta2, 1 - beta2, eps, weightDecay,
                                                    f.stepSize, f.invSqrtC2);
  CUDA_CHECK(cudaGetLastError());
}
void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps,
                   float weightDecay, cudaStream_t stream) {
  if (n == 0) return;
  rmspropKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, grads, sq, n, lr, alpha, 1 - alpha, eps, weightDecay);
  CUDA_CHECK(cudaGetLastError());
}
namespace {
// LAMB's parts 1 and 2 on the stream: m and v advanced, `update` written unless null, and sums[0..1] (device)
// the sums of p^2 and update^2. `partial` holds 2 * reduceGrid(n) doubles.
void lambDirectionAndSums(double* sums, double* partial, float* update, const float* params, const float* grads, float* m,
                          float* v, std::size_t n, float beta1, float beta2, float eps, float weightDecay, int t,
                          cudaStream_t stream) {
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t), c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  const unsigned blocks = reduceGrid(n);
  lambDirectionKernel<<<blocks, kBlock, 0, stream>>>(partial, update, params, grads, m, v, n, beta1, 1 - beta1, beta2, 1 - beta2,
                                                     eps, weightDecay, c1, c2);
  CUDA_CHECK(cudaGetLastError());
  lambSumsKernel<<<1, kBlock, 0, stream>>>(sums, partial, blocks);
  CUDA_CHECK(cudaGetLastError());
}
// Stream-ordered scratch for lambDirectionAndSums: the partial sums, then the two.
std::size_t lambScratchBytes(std::size_t n) { return (2 * std::size_t{reduceGrid(n)} + 2) * sizeof(double); }
}  // namespace

void lambUpdate(float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr, float beta1,
                float beta2, float eps, float weightDecay, int t, cudaStream_t stream) {
  if (n == 0) return;
  StreamOrderedBuffer scratch(lambScratchBytes(n), stream);
  double* sums = scratch.doubles();
  lambDirectionAndSums(sums, sums + 2, update, params, grads, m, v, n, beta1, beta2, eps, weightDecay, t, stream);
  lambApplyKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, update, sums, n, lr);
  CUDA_CHECK(cudaGetLastError());
  scratch.freeAsync();
}

void lambMoments(const float* params, const float* grads, float* m, float* v, std::size_t n, float beta1, float beta2, float eps,
                 float weightDecay, int t, double* sums, cudaStream_t stream) {
  if (n == 0) return;
  StreamOrderedBuffer scratch(lambScratchBytes(n), stream);
  double* two = scratch.doubles();
  lambDirectionAndSums(two, two + 2, nullptr, params, grads, m, v, n, beta1, beta2, eps, weightDecay, t, stream);
  double host[2] = {0, 0};
  // The sums go to the other ranks through the host: this waits for the stream.
  CUDA_CHECK(cudaMemcpyAsync(host, two, sizeof host, cudaMemcpyDeviceToHost, stream));
  scratch.freeAsync();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  sums[0] += host[0];
  sums[1] += host[1];
}
void lambApply(float* params, const float* m, const float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
               float weightDecay, int t, double trust, cudaStream_t stream) {
  if (n == 0) return;
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t), c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  lambRecomputeApplyKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, m, v, n, static_cast<double>(lr) * trust, eps,
                                                                  weightDecay, c1, c2);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
