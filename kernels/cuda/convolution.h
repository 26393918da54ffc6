#pragma once
// 2-D convolution through cuDNN (its convolution API): forward, backward-data and backward-filter of one
// shape, the same arithmetic as kernels/cpu/cpu_ops.h (cross-correlation, stride, zero padding, bias[K]), in
// NCHW or NHWC, float32 (optionally TF32), bfloat16 or float16 tensors with float32 accumulation.
// 2*N*K*P*Q*C*R*S FLOPs each direction.
//
// The algorithm of each direction is chosen once, when the object is built: by cuDNN's heuristics (its
// ranked guess, no device work) or by search (cuDNN runs every algorithm on scratch buffers and ranks
// them by time). Each chosen algorithm's workspace is queried and allocated once, shared by the
// directions (they run one after another on the stream they are given).
//
// Element types: x, w, y (and dx, dw, dy, bias, dbias) all in the precision's storage type (float32 for
// float32 and TF32; bfloat16 / float16 otherwise): cuDNN's convolution API takes one type for all three
// tensors, so 16-bit convolutions also write 16-bit outputs.
//
// Layouts: NCHW means x[N,C,H,W], y[N,K,P,Q], w[K,C,R,S]; NHWC means x[N,H,W,C], y[N,P,Q,K] and the filter
// in the matching w[K,R,S,C].
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include "base/precision.h"
#include "kernels/cpu/cpu_ops.h"

namespace ts::cuda {

enum class ConvLayout { kNchw, kNhwc };
enum class ConvAlgoChoice { kHeuristic, kSearch };
enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

std::string_view convLayoutName(ConvLayout l);  // "nchw", "nhwc"

struct ConvolutionOptions {
  Precision precision = Precision::kFloat32;
  ConvLayout layout = ConvLayout::kNchw;
  ConvAlgoChoice choice = ConvAlgoChoice::kHeuristic;
  // The directions to prepare (an algorithm chosen, its workspace sized); calling another one throws.
  bool forward = true, backwardData = true, backwardFilter = true;
  // The most workspace an algorithm may use: faster algorithms that want more are passed over. A search
  // allocates this much (at most half the free device memory) while it runs.
  std::size_t maxWorkspaceBytes = std::size_t{1} << 30;
};

// cuDNN handle, descriptors, chosen algorithms and workspace for one convolution shape, on the current
// device. Not thread-safe (one handle); every cuDNN call is checked and a failure throws ts::Error naming it.
class Convolution {
 public:
  Convolution(const cpu::Conv2dShape& shape, const ConvolutionOptions& options);
  ~Convolution();
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;

  // y = conv(x, w) + bias + beta * y; bias[K] may be null. beta = 0 (the default) overwrites y without
  // reading it, as cpu::conv2dForward does.
  void forward(void* y, const void* x, const void* w, const void* bias, cudaStream_t stream, float beta = 0.0f);
  // dx = conv_backward_data(dy, w) + beta * dx. beta = 1 (the default) accumulates into dx, as
  // cpu::conv2dBackwardData does; pass 0 to overwrite (then dx is not read).
  void backwardData(void* dx, const void* dy, const void* w, cudaStream_t stream, float beta = 1.0f);
  // dw = conv_backward_filter(dy, x) + beta * dw and, when dbias is not null, dbias = sum of dy over
  // N, P, Q + beta * dbias. beta = 1 (the default) accumulates, as cpu::conv2dBackwardFilter does.
  void backwardFilter(void* dw, void* dbias, const void* dy, const void* x, cudaStream_t stream, float beta = 1.0f);

  // The algorithm chosen for a prepared direction, as cuDNN names it without its prefix
  // ("IMPLICIT_PRECOMP_GEMM", "ALGO_1", "WINOGRAD_NONFUSED", ...), and its math ("fma", "tensor_op", ...).
  std::string algoName(ConvDirection d) const;
  std::string mathName(ConvDirection d) const;
  // The workspace that direction's algorithm needs; the buffer allocated is the largest of them.
  std::size_t workspaceBytes(ConvDirection d) const;
  std::size_t workspaceAllocatedBytes() const;

  const cpu::Conv2dShape& shape() const { return shape_; }
  const ConvolutionOptions& options() const { return options_; }

 private:
  struct State;  // the cuDNN objects (cudnn.h stays out of this header)
  cpu::Conv2dShape shape_;
  ConvolutionOptions options_;
  std::unique_ptr<State> s_;
};

}  // namespace ts::cuda
