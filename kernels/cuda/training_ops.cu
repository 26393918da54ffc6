// The CUDA versions of the CPU training ops that ops.cu does not cover: ReLU, the bias gradient, axpy /
// scale / sum of squares, batch norm, pooling, embeddings, Adam / RMSprop / LAMB, the attention head
// permutes and the 16-bit storage rounding. Same arguments as kernels/cpu/ops.h plus the stream.
//
// Numerics. Each kernel repeats the CPU function's arithmetic step by step: the same float or double type
// at every step, and the explicit round-to-nearest intrinsics (__fmul_rn, __fadd_rn, __dmul_rn, ...) where
// nvcc would otherwise contract a multiply and an add into one FMA (the CPU reference, built for plain
// x86-64, does not). Elementwise results are therefore bit-equal to the CPU's; sums differ only in their
// order. Reductions (sum of squares, LAMB's norms, batch-norm statistics) are float64 and deterministic:
// partial sums per block in a fixed order, then one block adds the partials in a fixed order. The atomics
// (biasBackward, maxPool2dBackward, the dwte rows of embeddingBackward) make the order of the float
// additions, and so the last bits, vary from run to run.
//
// Every launch has at least one block and is checked; grids are capped and the kernels stride over the rest.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace ts::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kBlock = 256;                  // threads per block of the elementwise and row kernels
constexpr int kWarpsPerBlock = kBlock / kWarp;
constexpr int kChannelBlock = 512;           // threads per block of the batch-norm kernels (one block per channel)
constexpr std::size_t kMaxGrid = 65535u * 4; // blocks of a grid-stride launch
constexpr std::size_t kReduceBlocks = 1024;  // partial sums of a reduction (256K threads: fills an H100)
constexpr std::size_t kRowsPerSlice = 256;   // rows one thread of biasBackward sums before its atomicAdd
constexpr std::size_t kMaxGridY = 65535;

unsigned cappedGrid(std::size_t work, std::size_t perBlock, std::size_t cap) {
  return static_cast<unsigned>(std::clamp<std::size_t>((work + perBlock - 1) / perBlock, 1, cap));  // never an empty grid
}
unsigned elementGrid(std::size_t n) { return cappedGrid(n, kBlock, kMaxGrid); }
unsigned rowGrid(std::size_t rows) { return cappedGrid(rows, kWarpsPerBlock, kMaxGrid); }  // one warp per row
unsigned reduceGrid(std::size_t n) { return cappedGrid(n, kBlock, kReduceBlocks); }
// 32-bit index arithmetic (cheaper divisions) where every index, and index + grid stride, stays below 2^32.
bool fits32(std::size_t n) { return n <= std::size_t{0x7fffffff}; }

__device__ std::size_t firstIndex() { return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; }
__device__ std::size_t gridStride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }
// The warp-per-row kernels: this warp's first row and the row stride, and the lane.
__device__ std::size_t firstRow() { return blockIdx.x * static_cast<std::size_t>(blockDim.x / kWarp) + threadIdx.x / kWarp; }
__device__ std::size_t rowStride() { return static_cast<std::size_t>(gridDim.x) * (blockDim.x / kWarp); }
__device__ unsigned laneId() { return threadIdx.x % kWarp; }

__device__ double warpSum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;  // the butterfly gives every lane the same bits (each step adds a commutative pair)
}
// The sum of v over the block, returned to every thread; blockDim.x a multiple of 32, every thread of the
// block must call it. A fixed order: the same inputs give the same bits on every run.
__device__ double blockSum(double v) {
  __shared__ double warpSums[kWarp];
  v = warpSum(v);
  __syncthreads();  // a previous call's readers are done with warpSums
  if (laneId() == 0) warpSums[threadIdx.x / kWarp] = v;
  __syncthreads();
  return warpSum(laneId() < blockDim.x / kWarp ? warpSums[laneId()] : 0.0);
}
// The sum of partial[0 .. count), strided over the block then blockSum: for one-block kernels.
__device__ double sumPartials(const double* partial, std::size_t count) {
  double s = 0;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  return blockSum(s);
}

// ---- elementwise ---------------------------------------------------------------------------------------

// out = x > 0 ? x : 0 (NaN and -0 give +0, as on the CPU). Reads n, writes n floats.
__global__ void reluForwardKernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}
// dinp += dout where x > 0. Reads x, dout, dinp; writes dinp where x > 0.
__global__ void reluBackwardKernel(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride())
    if (inp[i] > 0.0f) dinp[i] = __fadd_rn(dinp[i], dout[i]);
}
// y += alpha x (a rounded product, then a rounded sum, as the CPU). Reads x, y; writes y.
__global__ void axpyKernel(float* y, const float* x, float alpha, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) y[i] = __fadd_rn(y[i], __fmul_rn(alpha, x[i]));
}
// x *= alpha. Reads and writes x.
__global__ void scaleKernel(float* x, float alpha, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = __fmul_rn(x[i], alpha);
}

// dbias[c] += sum of dout[r, c] over the rows: each thread owns one column (consecutive threads,
// consecutive columns: coalesced) over slices of kRowsPerSlice rows (blockIdx.y, striding by gridDim.y),
// adding each slice's float sum with one atomicAdd. Reads N*C floats, N/256 atomics per column.
__global__ void biasBackwardKernel(float* dbias, const float* dout, std::size_t N, std::size_t C) {
  const std::size_t c = firstIndex();
  if (c >= C) return;
  for (std::size_t first = blockIdx.y * kRowsPerSlice; first < N; first += gridDim.y * kRowsPerSlice) {
    const std::size_t last = N - first < kRowsPerSlice ? N : first + kRowsPerSlice;
    float s = 0;
    for (std::size_t r = first; r < last; ++r) s += dout[r * C + c];
    atomicAdd(dbias + c, s);
  }
}

// Sum of squares, part 1: block b writes partial[b], the float64 sum of x^2 over its grid-stride share.
// Reads n floats.
__global__ void sumSquaresPartialKernel(double* partial, const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) s += static_cast<double>(x[i]) * x[i];
  s = blockSum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
// Part 2, one block: *total = the sum of partial[0 .. count).
__global__ void sumPartialsKernel(double* total, const double* partial, std::size_t count) {
  const double s = sumPartials(partial, count);
  if (threadIdx.x == 0) *total = s;
}

// ---- batch norm: one block per channel c of x[N, C, HW] --------------------------------------------------

// Visits the N*HW elements of channel c, thread t taking elements t, t + blockDim.x, ... in (n, i) order
// (consecutive threads, consecutive addresses within a plane), calling f with the element's offset
// (n*C + c)*HW + i. Two divisions per thread, none per element.
template <typename F>
__device__ void forChannel(std::size_t N, std::size_t C, std::size_t HW, std::size_t c, F f) {
  const std::size_t count = N * HW;
  if (count == 0) return;
  const std::size_t step = blockDim.x, dn = step / HW, di = step % HW;
  std::size_t n = threadIdx.x / HW, i = threadIdx.x % HW;
  for (std::size_t e = threadIdx.x; e < count; e += step) {
    f((n * C + c) * HW + i);
    n += dn;
    i += di;
    if (i >= HW) {
      i -= HW;
      ++n;
    }
  }
}

// Forward: the channel's mean, then its (biased) variance, in float64, then out = (x - mean) rstd w + b
// in float64 rounded once, as the CPU; mean / rstd / running statistics written by thread 0 (each may be
// null). Reads the channel twice (the second time mostly from L2) and writes it once.
__global__ void batchnormForwardKernel(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                                       std::size_t N, std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar,
                                       float momentum) {
  const std::size_t c = blockIdx.x;
  const double count = static_cast<double>(N * HW);
  double s = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) { s += inp[j]; });
  const double m = blockSum(s) / count;
  double v = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    const double d = inp[j] - m;
    v += d * d;
  });
  v = blockSum(v) / count;
  const double r = 1.0 / sqrt(v + static_cast<double>(eps));
  const double w = weight[c], b = bias[c];
  forChannel(N, C, HW, c, [&](std::size_t j) { out[j] = static_cast<float>(__dadd_rn(__dmul_rn(__dmul_rn(inp[j] - m, r), w), b)); });
  if (threadIdx.x != 0) return;
  if (mean) mean[c] = static_cast<float>(m);
  if (rstd) rstd[c] = static_cast<float>(r);
  // The CPU's expressions: (1 - momentum) * running is a float product, the rest float64 (not fused).
  const double mom = momentum;
  if (runningMean) runningMean[c] = static_cast<float>(__dadd_rn(__fmul_rn(1 - momentum, runningMean[c]), __dmul_rn(mom, m)));
  if (runningVar)
    runningVar[c] = static_cast<float>(__dadd_rn(__fmul_rn(1 - momentum, runningVar[c]), __dmul_rn(__dmul_rn(mom, v), count) / fmax(1.0, count - 1)));
}

// Backward: sum(dy) and sum(dy xhat) over the channel in float64 (dbias, dweight += them, thread 0), then
// dinp += w rstd (dy - mean(dy) - xhat mean(dy xhat)). Reads x and dy twice and dinp once, writes dinp.
__global__ void batchnormBackwardKernel(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                                        const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW) {
  const std::size_t c = blockIdx.x;
  const double count = static_cast<double>(N * HW);
  const double m = mean[c], r = rstd[c];
  double sumDy = 0, sumDyXhat = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    sumDy += dout[j];
    sumDyXhat += static_cast<double>(dout[j]) * (inp[j] - m) * r;
  });
  sumDy = blockSum(sumDy);
  sumDyXhat = blockSum(sumDyXhat);
  if (threadIdx.x == 0) {
    if (dbias) dbias[c] += static_cast<float>(sumDy);
    if (dweight) dweight[c] += static_cast<float>(sumDyXhat);
  }
  if (!dinp) return;
  const double meanDy = sumDy / count, meanDyXhat = sumDyXhat / count;
  const double wr = static_cast<double>(weight[c]) * r;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    const double xhat = __dmul_rn(inp[j] - m, r);
    const double g = __dmul_rn(wr, __dsub_rn(dout[j] - meanDy, __dmul_rn(xhat, meanDyXhat)));
    dinp[j] = __fadd_rn(dinp[j], static_cast<float>(g));
  });
}

// ---- pooling and embeddings ------------------------------------------------------------------------------

// out[nc] = mean of the HW values of plane nc (float64 sum), one warp per plane. Reads N*C*HW, writes N*C.
__global__ void globalAvgPoolForwardKernel(float* out, const float* inp, std::size_t planes, std::size_t HW) {
  for (std::size_t nc = firstRow(); nc < planes; nc += rowStride()) {
    const float* x = inp + nc * HW;
    double s = 0;
    for (std::size_t i = laneId(); i < HW; i += kWarp) s += x[i];
    s = warpSum(s);
    if (laneId() == 0) out[nc] = static_cast<float>(s / static_cast<double>(HW));
  }
}
// dinp[nc, i] += dout[nc] / HW (a float division, as the CPU), one warp per plane. Reads N*C + 2 N*C*HW, writes N*C*HW.
__global__ void globalAvgPoolBackwardKernel(float* dinp, const float* dout, std::size_t planes, std::size_t HW) {
  for (std::size_t nc = firstRow(); nc < planes; nc += rowStride()) {
    const float g = __fdiv_rn(dout[nc], static_cast<float>(HW));
    float* d = dinp + nc * HW;
    for (std::size_t i = laneId(); i < HW; i += kWarp) d[i] = __fadd_rn(d[i], g);
  }
}

// One thread per output (nc, p, q) of the k x k window: the first valid cell, then strictly larger ones win
// (the CPU's scan order and tie rule); padded cells never win; -FLT_MAX and -1 when no cell is valid.
// Reads k*k input values per output (cached), writes the output and its argmax (an int offset into inp).
template <typename I>
__global__ void maxPool2dForwardKernel(float* out, int* argmax, const float* inp, I count, int H, int W, int P, int Q, int k, int stride, int pad) {
  for (I o = static_cast<I>(firstIndex()); o < count; o += static_cast<I>(gridStride())) {
    const int q = static_cast<int>(o % static_cast<I>(Q));
    const int p = static_cast<int>((o / static_cast<I>(Q)) % static_cast<I>(P));
    const int nc = static_cast<int>(o / (static_cast<I>(Q) * static_cast<I>(P)));
    float best = -FLT_MAX;
    int at = -1;
    for (int r = 0; r < k; ++r)
      for (int s = 0; s < k; ++s) {
        const int h = p * stride - pad + r, w = q * stride - pad + s;
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        const int j = (nc * H + h) * W + w;  // < N*C*H*W <= INT_MAX (checked by the caller)
        if (at < 0 || inp[j] > best) {
          best = inp[j];
          at = j;
        }
      }
    out[o] = best;
    argmax[o] = at;
  }
}
// dinp[argmax[o]] += dout[o] where argmax[o] >= 0; windows overlap when stride < k, hence atomicAdd.
__global__ void maxPool2dBackwardKernel(float* dinp, const float* dout, const int* argmax, std::size_t count) {
  for (std::size_t o = firstIndex(); o < count; o += gridStride()) {
    const int a = argmax[o];
    if (a >= 0) atomicAdd(dinp + a, dout[o]);
  }
}

// out[row] = wte[tokens[row]] + wpe[row % T], one warp per row of C. Reads 2 rows (+1 token), writes one.
__global__ void embeddingForwardKernel(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t rows, std::size_t T,
                                       std::size_t C) {
  for (std::size_t row = firstRow(); row < rows; row += rowStride()) {
    const float* e = wte + static_cast<std::size_t>(tokens[row]) * C;
    const float* p = wpe + (row % T) * C;
    float* o = out + row * C;
    for (std::size_t c = laneId(); c < C; c += kWarp) o[c] = __fadd_rn(e[c], p[c]);
  }
}
// dwte[tokens[row]] += dout[row], one warp per row, atomicAdd (rows may share a token).
__global__ void embeddingBackwardWteKernel(float* dwte, const float* dout, const int* tokens, std::size_t rows, std::size_t C) {
  for (std::size_t row = firstRow(); row < rows; row += rowStride()) {
    float* e = dwte + static_cast<std::size_t>(tokens[row]) * C;
    const float* g = dout + row * C;
    for (std::size_t c = laneId(); c < C; c += kWarp) atomicAdd(e + c, g[c]);
  }
}
// dwpe[t, c] += dout[b, t, c] for b = 0 .. B-1 in that order, one thread per (t, c): the CPU's order of
// additions, so bit-equal and deterministic, without atomics. Reads B*T*C + T*C, writes T*C.
__global__ void embeddingBackwardWpeKernel(float* dwpe, const float* dout, std::size_t B, std::size_t TC) {
  for (std::size_t k = firstIndex(); k < TC; k += gridStride()) {
    float acc = dwpe[k];
    for (std::size_t b = 0; b < B; ++b) acc = __fadd_rn(acc, dout[b * TC + k]);
    dwpe[k] = acc;
  }
}

// ---- optimizers ------------------------------------------------------------------------------------------

// Adam with L2 decay in the gradient. float: g = grad + wd p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g g;
// float64: step = lr (m / c1) / (sqrt(v / c2) + eps); p -= (float)step. Reads p, g, m, v; writes p, m, v.
__global__ void adamKernel(float* p, const float* grads, float* m, float* v, std::size_t n, float lr, float b1, float oneMinusB1, float b2,
                           float oneMinusB2, float eps, float wd, double c1, double c2) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float pi = p[i];
    const float g = __fadd_rn(grads[i], __fmul_rn(wd, pi));
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(oneMinusB1, g));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(oneMinusB2, g), g));
    m[i] = mi;
    v[i] = vi;
    const double step = static_cast<double>(lr) * ((mi / c1) / (sqrt(vi / c2) + static_cast<double>(eps)));
    p[i] = __fsub_rn(pi, static_cast<float>(step));
  }
}

// RMSprop, all float: g = grad + wd p; sq = alpha sq + (1-alpha) g g; p -= lr g / (sqrt(sq) + eps).
// Reads p, g, sq; writes p, sq.
__global__ void rmspropKernel(float* p, const float* grads, float* sq, std::size_t n, float lr, float alpha, float oneMinusAlpha, float eps,
                              float wd) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float pi = p[i];
    const float g = __fadd_rn(grads[i], __fmul_rn(wd, pi));
    const float s = __fadd_rn(__fmul_rn(alpha, sq[i]), __fmul_rn(__fmul_rn(oneMinusAlpha, g), g));
    sq[i] = s;
    p[i] = __fsub_rn(pi, __fdiv_rn(__fmul_rn(lr, g), __fadd_rn(__fsqrt_rn(s), eps)));
  }
}

// LAMB, part 1: m, v (float) and the AdamW direction update = (float)((m / c1) / (sqrt(v / c2) + eps) + wd p)
// as the CPU; block b writes partial[b] = sum of p^2 and partial[gridDim.x + b] = sum of update^2 (float64,
// p before the step). Reads p, g, m, v; writes m, v, update.
__global__ void lambDirectionKernel(double* partial, float* update, const float* p, const float* grads, float* m, float* v, std::size_t n,
                                    float b1, float oneMinusB1, float b2, float oneMinusB2, float eps, float wd, double c1, double c2) {
  double sp = 0, su = 0;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) {
    const float g = grads[i], pi = p[i];
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(oneMinusB1, g));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(oneMinusB2, g), g));
    m[i] = mi;
    v[i] = vi;
    const float u = static_cast<float>((mi / c1) / (sqrt(vi / c2) + static_cast<double>(eps)) + static_cast<double>(__fmul_rn(wd, pi)));
    update[i] = u;
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
// Part 2, one block: *trust = ||p|| / ||update|| from the 2*blocks partial sums, 1 when either is 0.
__global__ void lambTrustKernel(double* trust, const double* partial, std::size_t blocks) {
  const double pNorm = sumPartials(partial, blocks);
  const double uNorm = sumPartials(partial + blocks, blocks);
  if (threadIdx.x == 0) *trust = (pNorm > 0 && uNorm > 0) ? sqrt(pNorm) / sqrt(uNorm) : 1.0;
}
// Part 3: p -= (float)(lr trust update). Reads p, update (and the trust); writes p.
__global__ void lambApplyKernel(float* p, const float* update, const double* trust, std::size_t n, float lr) {
  const double lt = static_cast<double>(lr) * *trust;
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) p[i] = __fsub_rn(p[i], static_cast<float>(lt * update[i]));
}

// ---- attention permutes, rounding ------------------------------------------------------------------------

// heads[b, h, t, d] <-> rows[b*T + t, col0 + h*D + d] (row width W), one thread per head element i (runs of
// D consecutive addresses on both sides): kToHeads copies rows -> heads (dst indexed by i, src by the row
// offset), else heads -> rows (dst by the row offset, src by i). Reads and writes B*T*NH*D floats.
template <typename I, bool kToHeads>
__global__ void permuteHeadsKernel(float* dst, const float* src, I count, I T, I NH, I D, I col0, I W) {
  for (I i = static_cast<I>(firstIndex()); i < count; i += static_cast<I>(gridStride())) {
    const I d = i % D;
    I rest = i / D;
    const I t = rest % T;
    rest /= T;
    const I h = rest % NH;
    const I b = rest / NH;
    const I j = (b * T + t) * W + col0 + h * D + d;
    if constexpr (kToHeads)
      dst[i] = src[j];
    else
      dst[j] = src[i];
  }
}

// The CPU's float <-> bfloat16 / float16 conversions (base/dtype.cpp), on the device, bit for bit.
__device__ std::uint32_t toBFloat16Bits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;  // NaN: quieted, sign and payload kept
  return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;                            // round to nearest even (inf when too large)
}
__device__ float fromBFloat16Bits(std::uint32_t b) { return __uint_as_float(b << 16); }
__device__ std::uint32_t toHalfBits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
  if (absx >= 0x47800000u) return sign | 0x7c00u;                                   // >= 65536: inf
  if (absx < 0x38800000u) {  // below the smallest normal half: adding 0.5 rounds onto the 2^-24 grid (RNE)
    const std::uint32_t r = __float_as_uint(__fadd_rn(__uint_as_float(absx), 0.5f)) - 0x3f000000u;
    return sign | r;
  }
  return sign | ((absx + 0xc8000fffu + ((absx >> 13) & 1u)) >> 13);  // rebias, round to nearest even (65520 and up: inf)
}
__device__ float fromHalfBits(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = __fmul_rn(static_cast<float>(mant), 5.9604644775390625e-8f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
// x = bfloat16(x) or float16(x) as float, in place. Reads and writes n floats.
__global__ void roundToBFloat16Kernel(float* x, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = fromBFloat16Bits(toBFloat16Bits(x[i]));
}
__global__ void roundToHalfKernel(float* x, std::size_t n) {
  for (std::size_t i = firstIndex(); i < n; i += gridStride()) x[i] = fromHalfBits(toHalfBits(x[i]));
}

// Device scratch from the stream-ordered allocator: cudaMallocAsync on `stream` (from the device's default
// memory pool, which keeps freed blocks: no device synchronisation, cheap after the first call, capturable
// in a CUDA graph), cudaFreeAsync on the same stream after the kernels that use it. No state between calls.
class StreamScratch {
 public:
  StreamScratch(std::size_t bytes, cudaStream_t stream) : stream_(stream) { CUDA_CHECK(cudaMallocAsync(&p_, bytes, stream)); }
  ~StreamScratch() {
    if (p_) cudaFreeAsync(p_, stream_);  // only on an error path (a failed launch already threw)
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  double* doubles() const { return static_cast<double*>(p_); }
  void release() {
    void* p = p_;
    p_ = nullptr;
    CUDA_CHECK(cudaFreeAsync(p, stream_));
  }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

void reluForward(float* out, const float* inp, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  reluForwardKernel<<<elementGrid(n), kBlock, 0, stream>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  reluBackwardKernel<<<elementGrid(n), kBlock, 0, stream>>>(dinp, inp, dout, n);
  CUDA_CHECK(cudaGetLastError());
}
void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C, cudaStream_t stream) {
  if (N == 0 || C == 0) return;
  const dim3 grid(cappedGrid(C, kBlock, std::size_t{0x7fffffff}), cappedGrid(N, kRowsPerSlice, kMaxGridY));
  biasBackwardKernel<<<grid, kBlock, 0, stream>>>(dbias, dout, N, C);
  CUDA_CHECK(cudaGetLastError());
}
void axpy(float* y, const float* x, float alpha, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  axpyKernel<<<elementGrid(n), kBlock, 0, stream>>>(y, x, alpha, n);
  CUDA_CHECK(cudaGetLastError());
}
void scale(float* x, float alpha, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  scaleKernel<<<elementGrid(n), kBlock, 0, stream>>>(x, alpha, n);
  CUDA_CHECK(cudaGetLastError());
}
double sumOfSquares(const float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) {
    CUDA_CHECK(cudaStreamSynchronize(stream));  // synchronous in every case
    return 0.0;
  }
  const unsigned blocks = reduceGrid(n);
  StreamScratch scratch((blocks + 1) * sizeof(double), stream);  // blocks partial sums, then the total
  double* partial = scratch.doubles();
  sumSquaresPartialKernel<<<blocks, kBlock, 0, stream>>>(partial, x, n);
  CUDA_CHECK(cudaGetLastError());
  sumPartialsKernel<<<1, kBlock, 0, stream>>>(partial + blocks, partial, blocks);
  CUDA_CHECK(cudaGetLastError());
  double total = 0;
  CUDA_CHECK(cudaMemcpyAsync(&total, partial + blocks, sizeof(double), cudaMemcpyDeviceToHost, stream));
  scratch.release();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return total;
}

void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, std::size_t N,
                      std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar, float momentum, cudaStream_t stream) {
  if (C == 0) return;
  if (C > std::size_t{0x7fffffff}) throw UsageError("batchnormForward: " + std::to_string(C) + " channels is too many for one block each");
  batchnormForwardKernel<<<static_cast<unsigned>(C), kChannelBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C, HW, eps, runningMean,
                                                                                  runningVar, momentum);
  CUDA_CHECK(cudaGetLastError());
}
void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (C == 0) return;
  if (C > std::size_t{0x7fffffff}) throw UsageError("batchnormBackward: " + std::to_string(C) + " channels is too many for one block each");
  batchnormBackwardKernel<<<static_cast<unsigned>(C), kChannelBlock, 0, stream>>>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, HW);
  CUDA_CHECK(cudaGetLastError());
}

void globalAvgPoolForward(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (N * C == 0) return;
  globalAvgPoolForwardKernel<<<rowGrid(N * C), kBlock, 0, stream>>>(out, inp, N * C, HW);
  CUDA_CHECK(cudaGetLastError());
}
void globalAvgPoolBackward(float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (N * C == 0 || HW == 0) return;
  globalAvgPoolBackwardKernel<<<rowGrid(N * C), kBlock, 0, stream>>>(dinp, dout, N * C, HW);
  CUDA_CHECK(cudaGetLastError());
}

void maxPool2dForward(float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride, int pad, cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  if (stride <= 0) throw UsageError("maxPool2dForward: stride must be positive (got " + std::to_string(stride) + ")");
  const int P = (H + 2 * pad - k) / stride + 1, Q = (W + 2 * pad - k) / stride + 1;  // the CPU's formula
  if (P <= 0 || Q <= 0) return;
  if (std::size_t(N) * std::size_t(C) * std::size_t(std::max(H, 0)) * std::size_t(std::max(W, 0)) > std::size_t{INT_MAX})
    throw UsageError("maxPool2dForward: the input has more than INT_MAX elements; argmax is an int offset");
  const std::size_t count = std::size_t(N) * C * P * Q;
  if (fits32(count))
    maxPool2dForwardKernel<std::uint32_t><<<elementGrid(count), kBlock, 0, stream>>>(out, argmax, inp, static_cast<std::uint32_t>(count), H, W, P,
                                                                                     Q, k, stride, pad);
  else
    maxPool2dForwardKernel<std::size_t><<<elementGrid(count), kBlock, 0, stream>>>(out, argmax, inp, count, H, W, P, Q, k, stride, pad);
  CUDA_CHECK(cudaGetLastError());
}
void maxPool2dBackward(float* dinp, const float* dout, const int* argmax, std::size_t outCount, cudaStream_t stream) {
  if (outCount == 0) return;
  maxPool2dBackwardKernel<<<elementGrid(outCount), kBlock, 0, stream>>>(dinp, dout, argmax, outCount);
  CUDA_CHECK(cudaGetLastError());
}

void embeddingForward(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T, std::size_t C,
                      cudaStream_t stream) {
  if (B * T == 0 || C == 0) return;
  embeddingForwardKernel<<<rowGrid(B * T), kBlock, 0, stream>>>(out, tokens, wte, wpe, B * T, T, C);
  CUDA_CHECK(cudaGetLastError());
}
void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T, std::size_t C,
                       cudaStream_t stream) {
  if (B * T == 0 || C == 0) return;
  if (dwte) {
    embeddingBackwardWteKernel<<<rowGrid(B * T), kBlock, 0, stream>>>(dwte, dout, tokens, B * T, C);
    CUDA_CHECK(cudaGetLastError());
  }
  if (dwpe) {
    embeddingBackwardWpeKernel<<<elementGrid(T * C), kBlock, 0, stream>>>(dwpe, dout, B, T * C);
    CUDA_CHECK(cudaGetLastError());
  }
}

void adamUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2, float eps,
                float weightDecay, int t, cudaStream_t stream) {
  if (n == 0) return;
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t), c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  adamKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, grads, m, v, n, lr, beta1, 1 - beta1, beta2, 1 - beta2, eps, weightDecay, c1, c2);
  CUDA_CHECK(cudaGetLastError());
}
void rmspropUpdate(float* params, const float* grads, float* sq, std::size_t n, float lr, float alpha, float eps, float weightDecay,
                   cudaStream_t stream) {
  if (n == 0) return;
  rmspropKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, grads, sq, n, lr, alpha, 1 - alpha, eps, weightDecay);
  CUDA_CHECK(cudaGetLastError());
}
void lambUpdate(float* params, const float* grads, float* m, float* v, float* update, std::size_t n, float lr, float beta1, float beta2,
                float eps, float weightDecay, int t, cudaStream_t stream) {
  if (n == 0) return;
  const double c1 = 1.0 - std::pow(static_cast<double>(beta1), t), c2 = 1.0 - std::pow(static_cast<double>(beta2), t);
  const unsigned blocks = reduceGrid(n);
  StreamScratch scratch((2 * std::size_t{blocks} + 1) * sizeof(double), stream);  // 2 x blocks partial sums, then the trust ratio
  double* partial = scratch.doubles();
  double* trust = partial + 2 * std::size_t{blocks};
  lambDirectionKernel<<<blocks, kBlock, 0, stream>>>(partial, update, params, grads, m, v, n, beta1, 1 - beta1, beta2, 1 - beta2, eps, weightDecay,
                                                     c1, c2);
  CUDA_CHECK(cudaGetLastError());
  lambTrustKernel<<<1, kBlock, 0, stream>>>(trust, partial, blocks);
  CUDA_CHECK(cudaGetLastError());
  lambApplyKernel<<<elementGrid(n), kBlock, 0, stream>>>(params, update, trust, n, lr);
  CUDA_CHECK(cudaGetLastError());
  scratch.release();
}

namespace {
template <bool kToHeads>
void permuteHeads(float* dst, const float* src, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  if (B <= 0 || T <= 0 || NH <= 0 || D <= 0) return;
  const std::size_t count = std::size_t(B) * T * NH * D;
  const std::size_t rowsExtent = std::size_t(B) * T * std::size_t(std::max(W, 0)) + std::size_t(std::max(col0, 0)) + std::size_t(NH) * D;
  if (fits32(count) && fits32(rowsExtent) && col0 >= 0 && W >= 0)
    permuteHeadsKernel<std::uint32_t, kToHeads><<<elementGrid(count), kBlock, 0, stream>>>(dst, src, static_cast<std::uint32_t>(count), T, NH, D, col0,
                                                                                           W);
  else
    permuteHeadsKernel<std::size_t, kToHeads><<<elementGrid(count), kBlock, 0, stream>>>(dst, src, count, std::size_t(T), std::size_t(NH), std::size_t(D),
                                                                                         static_cast<std::size_t>(col0), static_cast<std::size_t>(W));
  CUDA_CHECK(cudaGetLastError());
}
}  // namespace

void headsFromRows(float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  permuteHeads<true>(heads, rows, B, T, NH, D, col0, W, stream);
}
void rowsFromHeads(float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W, cudaStream_t stream) {
  permuteHeads<false>(rows, heads, B, T, NH, D, col0, W, stream);
}

void roundToBFloat16(float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  roundToBFloat16Kernel<<<elementGrid(n), kBlock, 0, stream>>>(x, n);
  CUDA_CHECK(cudaGetLastError());
}
void roundToHalf(float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  roundToHalfKernel<<<elementGrid(n), kBlock, 0, stream>>>(x, n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
