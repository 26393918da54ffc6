// Batch normalisation over channels-last activations x[R = N*HW, C] (cpu_ops.h's batchnorm* with layout NHWC):
// each row is one pixel's C channels, so a channel's values are a column, and every pass runs along the rows
// with the C channels in the vector lanes.
//
// Statistics in one read of x (two for NCHW's channel-at-a-time passes would stream the whole tensor twice
// here): the rows go in blocks of a fixed size (a function of C only), each block's sum and centred squares
// computed in float64 while the block is in L1, and the blocks merged in order by the parallel-variance
// formula (Chan et al.): M2 = sum_b [M2_b + n_b (mean_b - mean)^2]. The blocks go to the compute threads, the
// merge is in block order, so the bits do not depend on the thread count. The backward's two sums are plain
// float64 sums over the same blocks; its dx pass is per element in float, as the NCHW kernels.
//
// Cost: forward reads x twice (statistics, transform) and writes y; backward reads dy and x twice and writes
// dx; the float64 work per element is a conversion and an add (two for the centred squares).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/normalization_backends.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/vector_math.h"

namespace ts::cpu::channels_last {
namespace {

// Rows per block: about 4096 values (16 KiB of floats: a block and its float64 sums stay in L1).
std::size_t blockRows(std::size_t C) { return std::max<std::size_t>(1, 4096 / std::max<std::size_t>(1, C)); }

// One pass per block of rows; blocks to the compute threads (whole blocks each, as parallelChunks's rows).
template <class Block>
void forEachBlock(std::size_t R, std::size_t C, Block&& block) {
  const std::size_t rows = blockRows(C), blocks = (R + rows - 1) / rows;
  parallelChunks(blocks, std::max<std::size_t>(1, (std::size_t{1} << 15) / (rows * std::max<std::size_t>(1, C))),
                 [&](std::size_t a, std::size_t z) {
                   for (std::size_t b = a; b < z; ++b) block(b, b * rows, std::min(R, (b + 1) * rows));
                 });
}

// Block b's per-channel sum and centred squares (about the block's mean) into sum[b*C..], m2[b*C..].
TS_SIMD_CLONES void blockMoments(double* sum, double* m2, const float* x, std::size_t from, std::size_t to, std::size_t C) {
  std::fill(sum, sum + C, 0.0);
  std::fill(m2, m2 + C, 0.0);
  for (std::size_t r = from; r < to; ++r) {
    const float* row = x + r * C;
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) sum[c] += double(row[c]);
  }
  const double inv = 1.0 / double(to - from);
  for (std::size_t r = from; r < to; ++r) {
    const float* row = x + r * C;
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) {
      const double d = double(row[c]) - sum[c] * inv;
      m2[c] += d * d;
    }
  }
}

// The backward's sums over block b: sum dy, and sum dy (x - mean) with float products (as the NCHW kernel).
TS_SIMD_CLONES void blockGradientSums(double* sumDy, double* sumDyXc, const float* dy, const float* x, const float* mean,
                                      std::size_t from, std::size_t to, std::size_t C) {
  std::fill(sumDy, sumDy + C, 0.0);
  std::fill(sumDyXc, sumDyXc + C, 0.0);
  for (std::size_t r = from; r < to; ++r) {
    const float *g = dy + r * C, *row = x + r * C;
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) {
      sumDy[c] += double(g[c]);
      sumDyXc[c] += double(g[c] * (row[c] - mean[c]));
    }
  }
}

// y = (x - centre[c]) scale[c] + shift[c] (scale = w rstd, shift = b), optionally relu(y), over rows [from, to):
// the subtraction first, as the NCHW pass (x scale + (b - mean scale) would cancel where |mean| >> std).
TS_SIMD_CLONES void transformRows(float* y, const float* x, const float* centre, const float* scale, const float* shift,
                                  std::size_t from, std::size_t to, std::size_t C, bool relu) {
  for (std::size_t r = from; r < to; ++r) {
    const float* row = x + r * C;
    float* out = y + r * C;
    if (relu) {
#pragma omp simd
      for (std::size_t c = 0; c < C; ++c) {
        const float v = std::fma(row[c] - centre[c], scale[c], shift[c]);
        out[c] = v > 0.0f ? v : 0.0f;
      }
    } else {
#pragma omp simd
      for (std::size_t c = 0; c < C; ++c) out[c] = std::fma(row[c] - centre[c], scale[c], shift[c]);
    }
  }
}

// dx = a[c] dy + b[c] (x - mean[c]) + k[c] over rows [from, to), written or added.
TS_SIMD_CLONES void inputGradientRows(float* dx, const float* dy, const float* x, const float* mean, const float* a,
                                      const float* b, const float* k, std::size_t from, std::size_t to, std::size_t C,
                                      Write write) {
  for (std::size_t r = from; r < to; ++r) {
    const float *g = dy + r * C, *row = x + r * C;
    float* out = dx + r * C;
    if (write == Write::kOverwrite) {
#pragma omp simd
      for (std::size_t c = 0; c < C; ++c) out[c] = std::fma(a[c], g[c], std::fma(b[c], row[c] - mean[c], k[c]));
    } else {
#pragma omp simd
      for (std::size_t c = 0; c < C; ++c) out[c] += std::fma(a[c], g[c], std::fma(b[c], row[c] - mean[c], k[c]));
    }
  }
}

std::size_t blocksOf(std::size_t R, std::size_t C) { return (R + blockRows(C) - 1) / blockRows(C); }

}  // namespace

void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t R, std::size_t C, float eps) {
  std::vector<float> scale(C);
  for (std::size_t c = 0; c < C; ++c) scale[c] = weight[c] / std::sqrt(runningVar[c] + eps);
  forEachBlock(R, C, [&](std::size_t, std::size_t from, std::size_t to) {
    transformRows(out, inp, runningMean, scale.data(), bias, from, to, C, false);
  });
}

void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t R, std::size_t C, float eps, float* runningMean, float* runningVar, float momentum,
                      const ReplicaSum* replicas, bool reluAfter) {
  const std::size_t blocks = blocksOf(R, C), rows = blockRows(C);
  std::vector<double> sums(blocks * C), m2s(blocks * C);
  forEachBlock(R, C, [&](std::size_t b, std::size_t from, std::size_t to) {
    blockMoments(sums.data() + b * C, m2s.data() + b * C, inp, from, to, C);
  });
  // This process's sum per channel (and the value count), then the mean over every replica.
  std::vector<double> total(C + 1, 0.0), m2(C, 0.0);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t c = 0; c < C; ++c) total[c] += sums[b * C + c];
  total[C] = double(R);
  if (replicas) (*replicas)(total.data(), total.size());
  const double count = total[C];
  // Centred squares about the global mean: each block's, moved from its own mean (Chan's formula).
  for (std::size_t b = 0; b < blocks; ++b) {
    const double n = double(std::min(R, (b + 1) * rows) - b * rows);
    for (std::size_t c = 0; c < C; ++c) {
      const double d = sums[b * C + c] / n - total[c] / count;
      m2[c] += m2s[b * C + c] + n * d * d;
    }
  }
  if (replicas) (*replicas)(m2.data(), m2.size());
  std::vector<float> centre(C), scale(C);
  for (std::size_t c = 0; c < C; ++c) {
    const double m = total[c] / count, v = m2[c] / count, r = 1.0 / std::sqrt(v + eps);
    centre[c] = static_cast<float>(m);
    scale[c] = static_cast<float>(r * weight[c]);
    if (mean) mean[c] = static_cast<float>(m);
    if (rstd) rstd[c] = static_cast<float>(r);
    if (runningMean) runningMean[c] = static_cast<float>((1 - momentum) * runningMean[c] + momentum * m);
    if (runningVar)
      runningVar[c] = static_cast<float>((1 - momentum) * runningVar[c] + momentum * v * count / std::max(1.0, count - 1));
  }
  forEachBlock(R, C, [&](std::size_t, std::size_t from, std::size_t to) {
    transformRows(out, inp, centre.data(), scale.data(), bias, from, to, C, reluAfter);
  });
}

void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t R, std::size_t C, Write write,
                       const ReplicaSum* replicas) {
  const std::size_t blocks = blocksOf(R, C);
  std::vector<double> partial(2 * blocks * C);
  forEachBlock(R, C, [&](std::size_t b, std::size_t from, std::size_t to) {
    blockGradientSums(partial.data() + 2 * b * C, partial.data() + (2 * b + 1) * C, dout, inp, mean, from, to, C);
  });
  // [sum dy | sum dy xhat | count]: this process's, then (dx only) every replica's.
  std::vector<double> sums(2 * C + 1, 0.0);
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t c = 0; c < C; ++c) {
      sums[c] += partial[2 * b * C + c];
      sums[C + c] += partial[(2 * b + 1) * C + c];
    }
  for (std::size_t c = 0; c < C; ++c) {
    sums[C + c] *= double(rstd[c]);
    // dweight and dbias take this process's sums (the data-parallel gradient average adds the replicas').
    if (dbias) dbias[c] += static_cast<float>(sums[c]);
    if (dweight) dweight[c] += static_cast<float>(sums[C + c]);
  }
  if (!dinp) return;
  sums[2 * C] = double(R);
  if (replicas) (*replicas)(sums.data(), sums.size());
  const double count = sums[2 * C];
  std::vector<float> a(C), bcoef(C), k(C);
  for (std::size_t c = 0; c < C; ++c) {
    const double r = rstd[c], wr = weight[c] * r;
    a[c] = static_cast<float>(wr);
    bcoef[c] = static_cast<float>(-wr * r * sums[C + c] / count);
    k[c] = static_cast<float>(-wr * sums[c] / count);
  }
  forEachBlock(R, C, [&](std::size_t, std::size_t from, std::size_t to) {
    inputGradientRows(dinp, dout, inp, mean, a.data(), bcoef.data(), k.data(), from, to, C, write);
  });
}

}  // namespace ts::cpu::channels_last
