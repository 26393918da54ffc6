// LayerNorm and softmax: memory-bound row reductions (read the row, reduce, write the row).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/ops.h"

namespace ts::cpu {

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, float eps) {
  for (std::size_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    double m = 0;  // double accumulation: the CPU op is also the reference
    for (std::size_t c = 0; c < C; ++c) m += x[c];
    m /= static_cast<double>(C);
    double var = 0;
    for (std::size_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= static_cast<double>(C);
    const double s = 1.0 / std::sqrt(var + eps);
    float* y = out + i * C;
    for (std::size_t c = 0; c < C; ++c) y[c] = static_cast<float>((x[c] - m) * s) * weight[c] + bias[c];
    if (mean) mean[i] = static_cast<float>(m);
    if (rstd) rstd[i] = static_cast<float>(s);
  }
}

void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i) {
    const float* dy = dout + i * C;
    const float* x = inp + i * C;
    const double m = mean[i], s = rstd[i];
    // dxhat = dy * w; dx = s * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    double dnormMean = 0, dnormNormMean = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double dnorm = static_cast<double>(dy[c]) * weight[c];
      dnormMean += dnorm;
      dnormNormMean += dnorm * xhat;
    }
    dnormMean /= static_cast<double>(C);
    dnormNormMean /= static_cast<double>(C);
    for (std::size_t c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double dnorm = static_cast<double>(dy[c]) * weight[c];
      if (dbias) dbias[c] += dy[c];
      if (dweight) dweight[c] += static_cast<float>(xhat * dy[c]);
      if (dinp) dinp[i * C + c] += static_cast<float>(s * (dnorm - dnormMean - xhat * dnormNormMean));
    }
  }
}

void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* x = inp + r * cols;
    float* y = out + r * cols;
    const std::size_t valid = causalT ? std::min(cols, r % causalT + 1) : cols;
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t c = 0; c < valid; ++c) mx = std::max(mx, x[c]);
    double sum = 0;
    for (std::size_t c = 0; c < valid; ++c) sum += std::exp(static_cast<double>(x[c]) - mx);
    for (std::size_t c = 0; c < cols; ++c)
      y[c] = c < valid ? static_cast<float>(std::exp(static_cast<double>(x[c]) - mx) / sum) : 0.0f;
  }
}

void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* dy = dout + r * cols;
    const float* y = out + r * cols;
    double dot = 0;
    for (std::size_t c = 0; c < cols; ++c) dot += static_cast<double>(dy[c]) * y[c];
    for (std::size_t c = 0; c < cols; ++c) dinp[r * cols + c] += static_cast<float>(y[c] * (dy[c] - dot));
  }
}

// Per channel over N*HW values: the same algebra as layernorm, with the roles of rows and columns swapped.
void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar,
                      float momentum) {
  const double count = static_cast<double>(N * HW);
  for (std::size_t c = 0; c < C; ++c) {
    double m = 0, v = 0;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i) m += inp[(n * C + c) * HW + i];
    m /= count;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i) {
        const double d = inp[(n * C + c) * HW + i] - m;
        v += d * d;
      }
    v /= count;
    const double r = 1.0 / std::sqrt(v + eps);
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i) {
        const std::size_t j = (n * C + c) * HW + i;
        out[j] = static_cast<float>((inp[j] - m) * r * weight[c] + bias[c]);
      }
    if (mean) mean[c] = static_cast<float>(m);
    if (rstd) rstd[c] = static_cast<float>(r);
    if (runningMean) runningMean[c] = static_cast<float>((1 - momentum) * runningMean[c] + momentum * m);
    if (runningVar)
      runningVar[c] = static_cast<float>((1 - momentum) * runningVar[c] + momentum * v * count / std::max(1.0, count - 1));
  }
}

void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW) {
  const double count = static_cast<double>(N * HW);
  for (std::size_t c = 0; c < C; ++c) {
    const double m = mean[c], r = rstd[c];
    double sumDy = 0, sumDyXhat = 0;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i) {
        const std::size_t j = (n * C + c) * HW + i;
        sumDy += dout[j];
        sumDyXhat += dout[j] * (inp[j] - m) * r;
      }
    if (dbias) dbias[c] += static_cast<float>(sumDy);
    if (dweight) dweight[c] += static_cast<float>(sumDyXhat);
    if (!dinp) continue;
    // dx = w r (dy - mean(dy) - xhat mean(dy xhat))
    const double meanDy = sumDy / count, meanDyXhat = sumDyXhat / count;
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i) {
        const std::size_t j = (n * C + c) * HW + i;
        const double xhat = (inp[j] - m) * r;
        dinp[j] += static_cast<float>(weight[c] * r * (dout[j] - meanDy - xhat * meanDyXhat));
      }
  }
}

}  // namespace ts::cpu
