// LayerNorm and softmax: memory-bound row reductions (read the row, reduce, write the row).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/normalization_backends.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/vector_math.h"

namespace ts::cpu {

namespace {
// Rows of a row op go to the compute threads by whole rows (a row's sums stay one thread's, in one order);
// below this many elements in all, one thread.
constexpr std::size_t kRowsGrain = 1 << 15;

template <class Row>
void forEachRow(std::size_t rows, std::size_t cols, Row&& row) {
  parallelChunks(rows, std::max<std::size_t>(1, kRowsGrain / std::max<std::size_t>(1, cols)), [&](std::size_t a, std::size_t z) {
    for (std::size_t r = a; r < z; ++r) row(r);
  });
}

TS_SIMD_CLONES void layernormRow(float* y, float* mean, float* rstd, const float* x, const float* weight, const float* bias,
                                 std::size_t C, float eps) {
  // float64 sums: the mean and variance of a wide row lose digits in float.
  const double m = vmath::blockedSum(C, [x](std::size_t c) { return double(x[c]); }) / static_cast<double>(C);
  const double var = vmath::blockedSum(C, [x, m](std::size_t c) { return (x[c] - m) * (x[c] - m); }) / static_cast<double>(C);
  const double s = 1.0 / std::sqrt(var + eps);
#pragma omp simd
  for (std::size_t c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - m) * s) * weight[c] + bias[c];
  if (mean) *mean = static_cast<float>(m);
  if (rstd) *rstd = static_cast<float>(s);
}

// dxhat = dy * w; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)); dweight and dbias are summed over
// rows, so the backward's rows stay on one thread (they all add into them).
TS_SIMD_CLONES void layernormBackwardRow(float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                                         const float* weight, double m, double s, std::size_t C) {
  auto xhat = [&](std::size_t c) { return (x[c] - m) * s; };
  auto dnorm = [&](std::size_t c) { return static_cast<double>(dy[c]) * weight[c]; };
  const double dnormMean = vmath::blockedSum(C, dnorm) / static_cast<double>(C);
  const double dnormNormMean = vmath::blockedSum(C, [&](std::size_t c) { return dnorm(c) * xhat(c); }) / static_cast<double>(C);
  if (dbias) {
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) dbias[c] += dy[c];
  }
  if (dweight) {
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) dweight[c] += static_cast<float>(xhat(c) * dy[c]);
  }
  if (dx) {
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) dx[c] += static_cast<float>(s * (dnorm(c) - dnormMean - xhat(c) * dnormNormMean));
  }
}

// exp(x - max) in float (vector_math.h), summed in float64; y = e / sum. Masked columns (causal) are 0.
TS_SIMD_CLONES void softmaxRow(float* y, const float* x, std::size_t cols, std::size_t valid) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (std::size_t c = 0; c < valid; ++c) mx = std::max(mx, x[c]);
#pragma omp simd
  for (std::size_t c = 0; c < valid; ++c) y[c] = vmath::exp(x[c] - mx);
  const float inv = static_cast<float>(1.0 / vmath::blockedSum(valid, [y](std::size_t c) { return double(y[c]); }));
#pragma omp simd
  for (std::size_t c = 0; c < valid; ++c) y[c] *= inv;
  for (std::size_t c = valid; c < cols; ++c) y[c] = 0.0f;
}

TS_SIMD_CLONES void softmaxBackwardRow(float* dx, const float* dy, const float* y, std::size_t cols) {
  const double dot = vmath::blockedSum(cols, [dy, y](std::size_t c) { return static_cast<double>(dy[c]) * y[c]; });
  const auto d = static_cast<float>(dot);
#pragma omp simd
  for (std::size_t c = 0; c < cols; ++c) dx[c] += y[c] * (dy[c] - d);
}
}  // namespace

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, float eps) {
  forEachRow(N, C, [&](std::size_t i) {
    layernormRow(out + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, inp + i * C, weight, bias, C, eps);
  });
}

void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i)
    layernormBackwardRow(dinp ? dinp + i * C : nullptr, dweight, dbias, dout + i * C, inp + i * C, weight, mean[i], rstd[i], C);
}

void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT) {
  forEachRow(rows, cols, [&](std::size_t r) {
    softmaxRow(out + r * cols, inp + r * cols, cols, causalT ? std::min(cols, r % causalT + 1) : cols);
  });
}

void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols) {
  forEachRow(rows, cols, [&](std::size_t r) { softmaxBackwardRow(dinp + r * cols, dout + r * cols, out + r * cols, cols); });
}

// Per channel over N*HW values: the same algebra as layernorm, with the roles of rows and columns swapped. A
// channel's values are N runs of HW; its sums (float64) add the runs' blocked sums in order. Channels go to
// the compute threads whole.
namespace {
template <class F>
double channelSum(std::size_t N, std::size_t C, std::size_t HW, std::size_t c, F&& f) {
  double s = 0;
  for (std::size_t n = 0; n < N; ++n) {
    const std::size_t base = (n * C + c) * HW;
    s += vmath::blockedSum(HW, [&](std::size_t i) { return f(base + i); });
  }
  return s;
}

template <class Channel>
void forEachChannel(std::size_t N, std::size_t C, std::size_t HW, Channel&& channel) {
  parallelChunks(C, std::max<std::size_t>(1, kRowsGrain / std::max<std::size_t>(1, N * HW)), [&](std::size_t a, std::size_t z) {
    for (std::size_t c = a; c < z; ++c) channel(c);
  });
}

// y = (x - m) (w r) + b over channel c, r = 1 / sqrt(v + eps), and the saved and running statistics
// (`count` values made m and v: the running variance is unbiased).
TS_SIMD_CLONES void normalizeChannel(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                     const float* bias, std::size_t N, std::size_t C, std::size_t HW, float eps,
                                     float* runningMean, float* runningVar, float momentum, std::size_t c, double m, double v,
                                     double count, bool relu) {
  const double r = 1.0 / std::sqrt(v + eps);
  // The per-element pass in float, as PyTorch's: the statistics are float64 sums, the transform of each element
  // is y = (x - mean) (w rstd) + b, a subtraction and one multiply-add (twice the lanes of the float64 pass).
  const auto mf = static_cast<float>(m), scale = static_cast<float>(r * weight[c]), shift = bias[c];
  for (std::size_t n = 0; n < N; ++n) {
    const std::size_t base = (n * C + c) * HW;
    if (relu) {
#pragma omp simd
      for (std::size_t i = 0; i < HW; ++i) {
        const float y = std::fma(inp[base + i] - mf, scale, shift);
        out[base + i] = y > 0.0f ? y : 0.0f;
      }
    } else {
#pragma omp simd
      for (std::size_t i = 0; i < HW; ++i) out[base + i] = std::fma(inp[base + i] - mf, scale, shift);
    }
  }
  if (mean) mean[c] = static_cast<float>(m);
  if (rstd) rstd[c] = static_cast<float>(r);
  if (runningMean) runningMean[c] = static_cast<float>((1 - momentum) * runningMean[c] + momentum * m);
  if (runningVar)
    runningVar[c] = static_cast<float>((1 - momentum) * runningVar[c] + momentum * v * count / std::max(1.0, count - 1));
}

// The channel's sums, each compiled for every SIMD width like the passes (from a function without the
// clones they would run at the baseline's: batch norm was 7% slower so).
TS_SIMD_CLONES double valueSum(const float* inp, std::size_t N, std::size_t C, std::size_t HW, std::size_t c) {
  return channelSum(N, C, HW, c, [inp](std::size_t j) { return double(inp[j]); });
}

TS_SIMD_CLONES double centredSquares(const float* inp, std::size_t N, std::size_t C, std::size_t HW, std::size_t c, double m) {
  return channelSum(N, C, HW, c, [inp, m](std::size_t j) { return (inp[j] - m) * (inp[j] - m); });
}

// The backward's two sums over channel c: sum dy and sum dy xhat, added in float64. Each term dy (x - mean)
// is a float product (x - mean: the float mean the input gradient subtracts too), so the float64 work per
// element is one conversion and one add; rstd scales the sum once.
TS_SIMD_CLONES std::pair<double, double> gradientSums(const float* dout, const float* inp, const float* mean, const float* rstd,
                                                      std::size_t N, std::size_t C, std::size_t HW, std::size_t c) {
  const float m = mean[c];
  return {channelSum(N, C, HW, c, [dout](std::size_t j) { return double(dout[j]); }),
          double(rstd[c]) * channelSum(N, C, HW, c, [&](std::size_t j) { return double(dout[j] * (inp[j] - m)); })};
}

// dx = w r (dy - mean(dy) - xhat mean(dy xhat)) = a dy + b (x - mean) + k over channel c, per element in float
// (the coefficients from the float64 means).
TS_SIMD_CLONES void inputGradientChannel(float* dinp, const float* dout, const float* inp, const float* weight, const float* mean,
                                         const float* rstd, std::size_t N, std::size_t C, std::size_t HW, std::size_t c,
                                         double meanDy, double meanDyXhat, Write write) {
  const double r = rstd[c], wr = weight[c] * r;
  const auto a = static_cast<float>(wr), b = static_cast<float>(-wr * r * meanDyXhat), k = static_cast<float>(-wr * meanDy);
  const float mf = mean[c];
  for (std::size_t n = 0; n < N; ++n) {
    const std::size_t base = (n * C + c) * HW;
    float* dx = dinp + base;
    const float *dy = dout + base, *x = inp + base;
    if (write == Write::kOverwrite) {
#pragma omp simd
      for (std::size_t i = 0; i < HW; ++i) dx[i] = std::fma(a, dy[i], std::fma(b, x[i] - mf, k));
    } else {
#pragma omp simd
      for (std::size_t i = 0; i < HW; ++i) dx[i] += std::fma(a, dy[i], std::fma(b, x[i] - mf, k));
    }
  }
}
}  // namespace

void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t N, std::size_t C, std::size_t HW, float eps, ConvLayout layout) {
  if (layout == ConvLayout::kNhwc)
    return channels_last::batchnormInference(out, inp, weight, bias, runningMean, runningVar, N * HW, C, eps);
  forEachChannel(N, C, HW, [&](std::size_t c) {
    const float scale = weight[c] / std::sqrt(runningVar[c] + eps), shift = bias[c], m = runningMean[c];
    for (std::size_t n = 0; n < N; ++n) {
      const std::size_t base = (n * C + c) * HW;
      for (std::size_t i = 0; i < HW; ++i) out[base + i] = (inp[base + i] - m) * scale + shift;
    }
  });
}

// Without replicas each channel's passes run back to back on one thread (its values stay in cache); with
// them, each statistic is summed over the replicas between passes over all channels.
void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar,
                      float momentum, const ReplicaSum* replicas, bool reluAfter, ConvLayout layout) {
  if (layout == ConvLayout::kNhwc)
    return channels_last::batchnormForward(out, mean, rstd, inp, weight, bias, N * HW, C, eps, runningMean, runningVar, momentum,
                                           replicas, reluAfter);
  const auto local = static_cast<double>(N * HW);
  if (!replicas) {
    forEachChannel(N, C, HW, [&](std::size_t c) {
      const double m = valueSum(inp, N, C, HW, c) / local;
      const double v = centredSquares(inp, N, C, HW, c, m) / local;
      normalizeChannel(out, mean, rstd, inp, weight, bias, N, C, HW, eps, runningMean, runningVar, momentum, c, m, v, local,
                       reluAfter);
    });
    return;
  }
  std::vector<double> sums(C + 1), squares(C);
  forEachChannel(N, C, HW, [&](std::size_t c) { sums[c] = valueSum(inp, N, C, HW, c); });
  sums[C] = local;
  (*replicas)(sums.data(), sums.size());
  const double count = sums[C];
  forEachChannel(N, C, HW, [&](std::size_t c) { squares[c] = centredSquares(inp, N, C, HW, c, sums[c] / count); });
  (*replicas)(squares.data(), squares.size());
  forEachChannel(N, C, HW, [&](std::size_t c) {
    normalizeChannel(out, mean, rstd, inp, weight, bias, N, C, HW, eps, runningMean, runningVar, momentum, c, sums[c] / count,
                     squares[c] / count, count, reluAfter);
  });
}

void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW, Write write,
                       const ReplicaSum* replicas, ConvLayout layout) {
  if (layout == ConvLayout::kNhwc)
    return channels_last::batchnormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N * HW, C, write, replicas);
  const auto local = static_cast<double>(N * HW);
  // dweight and dbias take this process's sums (the data-parallel gradient average adds them over the
  // replicas); dx the sums over all of them.
  const auto own = [&](std::size_t c, double sumDy, double sumDyXhat) {
    if (dbias) dbias[c] += static_cast<float>(sumDy);
    if (dweight) dweight[c] += static_cast<float>(sumDyXhat);
  };
  if (!replicas) {
    forEachChannel(N, C, HW, [&](std::size_t c) {
      const auto [sumDy, sumDyXhat] = gradientSums(dout, inp, mean, rstd, N, C, HW, c);
      own(c, sumDy, sumDyXhat);
      if (dinp) inputGradientChannel(dinp, dout, inp, weight, mean, rstd, N, C, HW, c, sumDy / local, sumDyXhat / local, write);
    });
    return;
  }
  std::vector<double> sums(2 * C + 1);
  forEachChannel(N, C, HW, [&](std::size_t c) {
    std::tie(sums[2 * c], sums[2 * c + 1]) = gradientSums(dout, inp, mean, rstd, N, C, HW, c);
    own(c, sums[2 * c], sums[2 * c + 1]);
  });
  sums[2 * C] = local;
  (*replicas)(sums.data(), sums.size());
  const double count = sums[2 * C];
  if (dinp)
    forEachChannel(N, C, HW, [&](std::size_t c) {
      inputGradientChannel(dinp, dout, inp, weight, mean, rstd, N, C, HW, c, sums[2 * c] / count, sums[2 * c + 1] / count, write);
    });
}

}  // namespace ts::cpu
