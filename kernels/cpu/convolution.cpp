// Convolution as im2col + GEMM: each image's receptive fields are unrolled into col[C*R*S, P*Q] and the
// convolution becomes W[K, C*R*S] @ col. Memory for col is the price; simple and exactly testable.
#include <vector>

#include "kernels/cpu/ops.h"

namespace ts::cpu {
namespace {

void im2col(float* col, const float* x, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q();
  for (int c = 0; c < s.C; ++c)
    for (int r = 0; r < s.R; ++r)
      for (int t = 0; t < s.S; ++t) {
        float* row = col + ((c * s.R + r) * s.S + t) * P * Q;
        for (int p = 0; p < P; ++p) {
          const int h = p * s.stride - s.pad + r;
          for (int q = 0; q < Q; ++q) {
            const int w = q * s.stride - s.pad + t;
            row[p * Q + q] = (h >= 0 && h < s.H && w >= 0 && w < s.W) ? x[(c * s.H + h) * s.W + w] : 0.0f;
          }
        }
      }
}

void col2imAdd(float* dx, const float* col, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q();
  for (int c = 0; c < s.C; ++c)
    for (int r = 0; r < s.R; ++r)
      for (int t = 0; t < s.S; ++t) {
        const float* row = col + ((c * s.R + r) * s.S + t) * P * Q;
        for (int p = 0; p < P; ++p) {
          const int h = p * s.stride - s.pad + r;
          if (h < 0 || h >= s.H) continue;
          for (int q = 0; q < Q; ++q) {
            const int w = q * s.stride - s.pad + t;
            if (w >= 0 && w < s.W) dx[(c * s.H + h) * s.W + w] += row[p * Q + q];
          }
        }
      }
}

}  // namespace

void conv2dForward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q(), CRS = s.C * s.R * s.S;
  std::vector<float> col(static_cast<std::size_t>(CRS) * P * Q);
  for (int n = 0; n < s.N; ++n) {
    im2col(col.data(), x + static_cast<std::size_t>(n) * s.C * s.H * s.W, s);
    float* yn = y + static_cast<std::size_t>(n) * s.K * P * Q;
    gemm(false, false, s.K, P * Q, CRS, 1.0f, w, CRS, col.data(), P * Q, 0.0f, yn, P * Q);
    if (bias)
      for (int k = 0; k < s.K; ++k)
        for (int i = 0; i < P * Q; ++i) yn[k * P * Q + i] += bias[k];
  }
}

void conv2dBackwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q(), CRS = s.C * s.R * s.S;
  std::vector<float> dcol(static_cast<std::size_t>(CRS) * P * Q);
  for (int n = 0; n < s.N; ++n) {
    gemm(true, false, CRS, P * Q, s.K, 1.0f, w, CRS, dy + static_cast<std::size_t>(n) * s.K * P * Q, P * Q, 0.0f, dcol.data(),
         P * Q);
    col2imAdd(dx + static_cast<std::size_t>(n) * s.C * s.H * s.W, dcol.data(), s);
  }
}

void conv2dBackwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q(), CRS = s.C * s.R * s.S;
  std::vector<float> col(static_cast<std::size_t>(CRS) * P * Q);
  for (int n = 0; n < s.N; ++n) {
    const float* dyn = dy + static_cast<std::size_t>(n) * s.K * P * Q;
    im2col(col.data(), x + static_cast<std::size_t>(n) * s.C * s.H * s.W, s);
    gemm(false, true, s.K, CRS, P * Q, 1.0f, dyn, P * Q, col.data(), P * Q, 1.0f, dw, CRS);
    if (dbias)
      for (int k = 0; k < s.K; ++k)
        for (int i = 0; i < P * Q; ++i) dbias[k] += dyn[k * P * Q + i];
  }
}

}  // namespace ts::cpu
