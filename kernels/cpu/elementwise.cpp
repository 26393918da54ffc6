// Elementwise ops: GELU, bias and residual adds, casts. Each reads its inputs once and writes once: memory-
// bound, so the large ones are split over the compute threads (threads.h) and every loop is SIMD (vector_math.h).
#include <algorithm>
#include <cmath>

#include "base/dtype.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/vector_math.h"

namespace ts::cpu {
namespace {
// Below this many elements one thread streams the data faster than waking the others (about 50 us of work).
constexpr std::size_t kElementwiseGrain = 1 << 16;

TS_SIMD_CLONES void geluForwardRange(float* out, const float* inp, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) out[i] = vmath::gelu(inp[i]);
}

TS_SIMD_CLONES void geluBackwardRange(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) dinp[i] += vmath::geluGrad(inp[i]) * dout[i];
}
}  // namespace

void geluForward(float* out, const float* inp, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t a, std::size_t z) { geluForwardRange(out + a, inp + a, z - a); });
}

void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  parallelChunks(n, kElementwiseGrain,
                 [&](std::size_t a, std::size_t z) { geluBackwardRange(dinp + a, inp + a, dout + a, z - a); });
}

namespace {
// The element loops, each compiled for every SIMD width (TS_SIMD_CLONES); the public ops split them over threads.
TS_SIMD_CLONES void biasAddRows(float* out, const float* inp, const float* bias, std::size_t rows, std::size_t C) {
  for (std::size_t i = 0; i < rows; ++i) {
#pragma omp simd
    for (std::size_t c = 0; c < C; ++c) out[i * C + c] = inp[i * C + c] + bias[c];
  }
}
TS_SIMD_CLONES void residualAddRange(float* out, const float* a, const float* b, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
TS_SIMD_CLONES void residualAddReluRange(float* out, const float* a, const float* b, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    out[i] = v > 0.0f ? v : 0.0f;
  }
}
TS_SIMD_CLONES void reluForwardRange(float* out, const float* inp, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}
// A select, not a branch: the signs are random, so a branch mispredicts half the time (it was 14% of a CNN step).
TS_SIMD_CLONES void reluBackwardRange(float* dinp, const float* inp, const float* dout, std::size_t n, Write write) {
  if (write == Write::kOverwrite) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) dinp[i] = inp[i] > 0.0f ? dout[i] : 0.0f;
  } else {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
  }
}
TS_SIMD_CLONES void axpyRange(float* y, const float* x, float alpha, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
TS_SIMD_CLONES void scaleRange(float* x, float alpha, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) x[i] *= alpha;
}
}  // namespace

void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C) {
  parallelChunks(N, std::max<std::size_t>(1, kElementwiseGrain / std::max<std::size_t>(1, C)),
                 [&](std::size_t a, std::size_t z) { biasAddRows(out + a * C, inp + a * C, bias, z - a, C); });
}

void residualAdd(float* out, const float* a, const float* b, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t f, std::size_t z) { residualAddRange(out + f, a + f, b + f, z - f); });
}
void residualAddRelu(float* out, const float* a, const float* b, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t f, std::size_t z) { residualAddReluRange(out + f, a + f, b + f, z - f); });
}

void reluForward(float* out, const float* inp, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t a, std::size_t z) { reluForwardRange(out + a, inp + a, z - a); });
}
void reluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, Write write) {
  parallelChunks(n, kElementwiseGrain,
                 [&](std::size_t a, std::size_t z) { reluBackwardRange(dinp + a, inp + a, dout + a, z - a, write); });
}

void biasBackward(float* dbias, const float* dout, std::size_t N, std::size_t C) {
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t c = 0; c < C; ++c) dbias[c] += dout[i * C + c];
}

void axpy(float* y, const float* x, float alpha, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t a, std::size_t z) { axpyRange(y + a, x + a, alpha, z - a); });
}
void scale(float* x, float alpha, std::size_t n) {
  parallelChunks(n, kElementwiseGrain, [&](std::size_t a, std::size_t z) { scaleRange(x + a, alpha, z - a); });
}
double sumOfSquares(const float* x, std::size_t n) {
  return vmath::blockedSum(n, [x](std::size_t i) { return double(x[i]) * x[i]; });
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
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = floatToHalf(inp[i]);
}

}  // namespace ts::cpu
