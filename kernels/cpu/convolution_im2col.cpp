// Convolution as im2col + GEMM, NCHW: each image's receptive fields are unrolled into col[C*R*S, P*Q] and the
// convolution becomes W[K, C*R*S] @ col. Memory for col is the price; simple and exactly testable. The
// fallback of a build without oneDNN (kernels/cpu/convolution.h).
//
// Cheap care over the naive form: col lives in one grow-only workspace per thread (no allocation and no
// zero-fill per call: im2col writes every element); the forward starts y from its bias and lets the GEMM
// add with beta = 1, so OpenBLAS does not zero y first (beta = 0 costs a full pass over y per image); a 1x1,
// stride-1, unpadded convolution's col is x itself; the unrolling finds each row's in-bounds columns once
// instead of testing every element.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/cpu/convolution_backends.h"

namespace ts::cpu::im2col {
namespace {

// The columns q of an output row whose input column q * stride - pad + t lies in [0, W): [q0, q1).
struct Span {
  int q0, q1;
};
Span inBounds(int t, const Conv2dShape& s, int Q) {
  const int lo = s.pad - t;            // q * stride >= lo
  const int hi = s.W - 1 + s.pad - t;  // q * stride <= hi
  const int q0 = lo <= 0 ? 0 : (lo + s.stride - 1) / s.stride;
  const int q1 = hi < 0 ? 0 : std::min(Q, hi / s.stride + 1);
  return {std::min(q0, q1), q1};
}

// x's own layout is its col when the filter is 1x1 with stride 1 and no padding.
bool colIsInput(const Conv2dShape& s) { return s.R == 1 && s.S == 1 && s.stride == 1 && s.pad == 0; }

void unroll(float* col, const float* x, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q();
  for (int c = 0; c < s.C; ++c)
    for (int r = 0; r < s.R; ++r)
      for (int t = 0; t < s.S; ++t) {
        float* row = col + static_cast<std::size_t>((c * s.R + r) * s.S + t) * P * Q;
        const Span span = inBounds(t, s, Q);
        for (int p = 0; p < P; ++p) {
          float* out = row + static_cast<std::size_t>(p) * Q;
          const int h = p * s.stride - s.pad + r;
          if (h < 0 || h >= s.H) {
            std::fill(out, out + Q, 0.0f);
            continue;
          }
          const float* in = x + (static_cast<std::size_t>(c) * s.H + h) * s.W;  // input row h
          std::fill(out, out + span.q0, 0.0f);
          for (int q = span.q0; q < span.q1; ++q) out[q] = in[q * s.stride - s.pad + t];
          std::fill(out + span.q1, out + Q, 0.0f);
        }
      }
}

void foldAdd(float* dx, const float* col, const Conv2dShape& s) {
  const int P = s.P(), Q = s.Q();
  for (int c = 0; c < s.C; ++c)
    for (int r = 0; r < s.R; ++r)
      for (int t = 0; t < s.S; ++t) {
        const float* row = col + static_cast<std::size_t>((c * s.R + r) * s.S + t) * P * Q;
        const Span span = inBounds(t, s, Q);
        for (int p = 0; p < P; ++p) {
          const int h = p * s.stride - s.pad + r;
          if (h < 0 || h >= s.H) continue;
          float* out = dx + (static_cast<std::size_t>(c) * s.H + h) * s.W;  // input row h
          const float* in = row + static_cast<std::size_t>(p) * Q;
          for (int q = span.q0; q < span.q1; ++q) out[q * s.stride - s.pad + t] += in[q];
        }
      }
}

// The calling thread's column buffer, at least n floats; grown, never shrunk, never cleared.
float* workspace(std::size_t n) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

std::size_t colCount(const Conv2dShape& s) { return static_cast<std::size_t>(s.C) * s.R * s.S * s.P() * s.Q(); }

}  // namespace

void forward(float* y, const float* x, const float* w, const float* bias, const Conv2dShape& s) {
  const int PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
  float* col = colIsInput(s) ? nullptr : workspace(colCount(s));
  for (int n = 0; n < s.N; ++n) {
    const float* xn = x + static_cast<std::size_t>(n) * s.C * s.H * s.W;
    float* yn = y + static_cast<std::size_t>(n) * s.K * PQ;
    for (int k = 0; k < s.K; ++k)
      std::fill(yn + static_cast<std::size_t>(k) * PQ, yn + static_cast<std::size_t>(k + 1) * PQ, bias ? bias[k] : 0.0f);
    if (col) unroll(col, xn, s);
    gemm(false, false, s.K, PQ, CRS, 1.0f, w, CRS, col ? col : xn, PQ, 1.0f, yn, PQ);
  }
}

void backwardData(float* dx, const float* dy, const float* w, const Conv2dShape& s, Write write) {
  const int PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
  const bool direct = colIsInput(s);  // then dcol is dx: the GEMM accumulates into it (or overwrites it)
  const bool overwrite = write == Write::kOverwrite;
  float* dcol = direct ? nullptr : workspace(colCount(s));
  for (int n = 0; n < s.N; ++n) {
    const float* dyn = dy + static_cast<std::size_t>(n) * s.K * PQ;
    float* dxn = dx + static_cast<std::size_t>(n) * s.C * s.H * s.W;
    gemm(true, false, CRS, PQ, s.K, 1.0f, w, CRS, dyn, PQ, direct && !overwrite ? 1.0f : 0.0f, direct ? dxn : dcol, PQ);
    if (direct) continue;
    // The fold adds overlapping windows into dx, so an overwrite starts from zero.
    if (overwrite) std::fill_n(dxn, static_cast<std::size_t>(s.C) * s.H * s.W, 0.0f);
    foldAdd(dxn, dcol, s);
  }
}

void backwardFilter(float* dw, float* dbias, const float* dy, const float* x, const Conv2dShape& s) {
  const int PQ = s.P() * s.Q(), CRS = s.C * s.R * s.S;
  float* col = colIsInput(s) ? nullptr : workspace(colCount(s));
  for (int n = 0; n < s.N; ++n) {
    const float* dyn = dy + static_cast<std::size_t>(n) * s.K * PQ;
    const float* xn = x + static_cast<std::size_t>(n) * s.C * s.H * s.W;
    if (col) unroll(col, xn, s);
    gemm(false, true, s.K, CRS, PQ, 1.0f, dyn, PQ, col ? col : xn, PQ, 1.0f, dw, CRS);
    if (dbias)
      for (int k = 0; k < s.K; ++k)
        for (int i = 0; i < PQ; ++i) dbias[k] += dyn[static_cast<std::size_t>(k) * PQ + i];
  }
}

}  // namespace ts::cpu::im2col
