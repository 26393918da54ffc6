// Pooling (global average, max) and token/position embeddings: gathers and scatters rather than arithmetic;
// each reads its input once and writes its output once.
#include <cfloat>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"

namespace ts::cpu {

void globalAvgPoolForward(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, ConvLayout layout) {
  if (layout == ConvLayout::kNhwc) {
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t c = 0; c < C; ++c) {
        double s = 0;
        for (std::size_t i = 0; i < HW; ++i) s += inp[(n * HW + i) * C + c];
        out[n * C + c] = static_cast<float>(s / static_cast<double>(HW));
      }
    return;
  }
  for (std::size_t nc = 0; nc < N * C; ++nc) {
    double s = 0;
    for (std::size_t i = 0; i < HW; ++i) s += inp[nc * HW + i];
    out[nc] = static_cast<float>(s / static_cast<double>(HW));
  }
}

void globalAvgPoolBackward(float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW, ConvLayout layout) {
  if (layout == ConvLayout::kNhwc) {
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t i = 0; i < HW; ++i)
        for (std::size_t c = 0; c < C; ++c) dinp[(n * HW + i) * C + c] += dout[n * C + c] / static_cast<float>(HW);
    return;
  }
  for (std::size_t nc = 0; nc < N * C; ++nc) {
    const float g = dout[nc] / static_cast<float>(HW);
    for (std::size_t i = 0; i < HW; ++i) dinp[nc * HW + i] += g;
  }
}

void maxPool2dForward(float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride, int pad,
                      ConvLayout layout) {
  const int P = (H + 2 * pad - k) / stride + 1, Q = (W + 2 * pad - k) / stride + 1;
  const bool nhwc = layout == ConvLayout::kNhwc;
  // Where x[n, c, h, w] and y[n, c, p, q] are in the layout (nc = n C + c).
  const auto in = [&](int nc, int h, int w) { return nhwc ? ((nc / C * H + h) * W + w) * C + nc % C : (nc * H + h) * W + w; };
  const auto outAt = [&](int nc, int p, int q) {
    return nhwc ? ((static_cast<std::size_t>(nc / C) * P + p) * Q + q) * C + nc % C
                : (static_cast<std::size_t>(nc) * P + p) * Q + q;
  };
  for (int nc = 0; nc < N * C; ++nc)
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q) {
        float best = -FLT_MAX;
        int at = -1;
        for (int r = 0; r < k; ++r)
          for (int s = 0; s < k; ++s) {
            const int h = p * stride - pad + r, w = q * stride - pad + s;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const int j = in(nc, h, w);
            if (at < 0 || inp[j] > best) {
              best = inp[j];
              at = j;
            }
          }
        const std::size_t o = outAt(nc, p, q);
        out[o] = best;
        argmax[o] = at;
      }
}

void maxPool2dBackward(float* dinp, const float* dout, const int* argmax, std::size_t outCount) {
  for (std::size_t o = 0; o < outCount; ++o)
    if (argmax[o] >= 0) dinp[argmax[o]] += dout[o];
}

void transposeImages(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, ConvLayout from) {
  const bool toLast = from == ConvLayout::kNchw;
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t i = 0; i < HW; ++i) {
        const std::size_t first = (n * C + c) * HW + i, last = (n * HW + i) * C + c;
        out[toLast ? last : first] = inp[toLast ? first : last];
      }
}

void embeddingForward(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T,
                      std::size_t C) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const float* e = wte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      const float* p = wpe + t * C;
      float* o = out + (b * T + t) * C;
      for (std::size_t c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
}

void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T,
                       std::size_t C) {
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      const float* g = dout + (b * T + t) * C;
      if (dwte) {
        float* e = dwte + static_cast<std::size_t>(tokens[b * T + t]) * C;
        for (std::size_t c = 0; c < C; ++c) e[c] += g[c];
      }
      if (dwpe) {
        float* p = dwpe + t * C;
        for (std::size_t c = 0; c < C; ++c) p[c] += g[c];
      }
    }
}

}  // namespace ts::cpu
