// Elementwise ops: GELU, bias and residual adds, casts. Each reads its inputs once and writes once.
#include <cmath>

#include "base/dtype.h"
#include "kernels/cpu/ops.h"

namespace ts::cpu {
namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)
}

void geluForward(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float u = kGeluScale * (x + 0.044715f * x * x * x);
    const float t = std::tanh(u);
    const float sech2 = 1.0f - t * t;
    const float grad = 0.5f * (1.0f + t) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t c = 0; c < C; ++c) out[i * C + c] = inp[i * C + c] + bias[c];
}

void residualAdd(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void reluForward(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (inp[i] > 0.0f) dinp[i] += dout[i];
}

void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t c = 0; c < C; ++c) dbias[c] += dout[i * C + c];
}

void axpy(float* y, const float* x, float alpha, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
void scale(float* x, float alpha, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= alpha;
}
double sumOfSquares(const float* x, std::size_t n) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

void roundToBFloat16(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = bfloat16ToFloat(floatToBFloat16(x[i]));
}
void roundToHalf(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = halfToFloat(floatToHalf(x[i]));
}

void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = floatToBFloat16(inp[i]);
}
void castFromBFloat16(float* out, const std::uint16_t* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bfloat16ToFloat(inp[i]);
}
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = floatToHalf(inp[i]);
}
void castFromHalf(float* out, const std::uint16_t* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = halfToFloat(inp[i]);
}

}  // namespace ts::cpu
