#pragma once
// The CNN's layers over image tensors in one layout (ConvLayout: NCHW, or channels-last NHWC, which the CPU's
// oneDNN convolves without reordering; each layer allocates its tensors in its layout, imageShape): Conv2d
// (no bias: a BatchNorm follows every convolution, as in ResNet), global average pooling, max pooling, a
// residual basic block, and the NCHW-to-NHWC transpose in front of a channels-last network. Conv FLOPs: 2 N K P Q C R S
// forward; the backward is two products of the same size (data and filter).
#include <memory>
#include <utility>

#include "kernels/cpu/cpu_ops.h"
#include "workloads/layers/layer.h"
#include "workloads/layers/normalization.h"

namespace ts::wl {

class Conv2d final : public Layer {
 public:
  // Kaiming-normal weights (fan-out, ReLU gain), as torchvision's ResNet. Tensor parallel: column holds a
  // slice of the output channels (its input gradient is summed over the group), row a slice of the input
  // channels (its output is summed over the group). `shape` is the whole layer's; forwardFlops() too,
  // rankForwardFlops() is this rank's slice's (layer.h says why both).
  // The weights are [K, C, R, S] in either layout (checkpoints do not depend on it).
  Conv2d(Arena& arena, const Init& init, const std::string& name, const cpu::Conv2dShape& shape, ConvLayout layout,
         TensorSplit split = {});
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override { out.push_back(&w_); }
  double forwardFlops() const override { return flopsOf(full_); }
  double rankForwardFlops() const override { return flopsOf(s_); }
  void skipInputGradient() override;
  void groupSums(LayerSums& out) const override { addSplitSums(split_, inputGradient_, y_.numel(), dx_.numel(), out); }
  const cpu::Conv2dShape& shape() const { return s_; }

 private:
  static double flopsOf(const cpu::Conv2dShape& s);  // one forward's: 2 N K P Q C R S
  cpu::Conv2dShape s_, full_;                        // this rank's, the whole layer's
  ConvLayout layout_;
  TensorSplit split_;
  Param w_;
  const Tensor* x_ = nullptr;
  Tensor y_, dx_;
  bool inputGradient_ = true;
};

// x[N, C, H, W] -> y[N, C]: the mean over H*W.
class GlobalAvgPool final : public Layer {
 public:
  GlobalAvgPool(Arena& arena, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, ConvLayout layout);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;

 private:
  std::int64_t n_, c_, hw_;
  ConvLayout layout_;
  Tensor y_, dx_;
};

struct MaxPool2dConfig {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  // the input x[n, c, h, w]
  int k = 2, stride = 2, pad = 0;           // the k x k window's
  ConvLayout layout = ConvLayout::kNchw;
};

class MaxPool2d final : public Layer {
 public:
  MaxPool2d(Arena& arena, const MaxPool2dConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  std::int64_t outH() const { return p_; }
  std::int64_t outW() const { return q_; }

 private:
  std::int64_t n_, c_, h_, w_;
  int k_, stride_, pad_;
  ConvLayout layout_;
  std::int64_t p_, q_;
  int* argmax_;
  Tensor y_, dx_;
};

// ResNet basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the shortcut a 1x1 conv and
// BatchNorm when the stride or the channel count changes, else the identity. Tensor parallel: conv1 split
// by output channels (bn1 and the ReLU work on the slice), conv2 by input channels (its output summed
// over the group); bn2 and the shortcut replicated: one sum forward, one backward, as Megatron's MLP.
struct BasicBlockConfig {
  std::int64_t n = 0, cin = 0, h = 0, w = 0;  // the input x[n, cin, h, w]
  std::int64_t cout = 0;                      // output channels (the whole block's)
  int stride = 1;
  ConvLayout layout = ConvLayout::kNchw;
  int tpRank = 0, tpRanks = 1;
};

class BasicBlock final : public Layer {
 public:
  BasicBlock(Arena& arena, const Init& init, const std::string& name, const BasicBlockConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  void buffers(std::vector<NamedTensor>& out) override;
  double forwardFlops() const override { return sumOver(&Conv2d::forwardFlops); }
  double rankForwardFlops() const override { return sumOver(&Conv2d::rankForwardFlops); }  // the replicated shortcut whole
  void groupSums(LayerSums& out) const override;
  // The output's height and width before the block is built (a recomputed unit's copy is taken first).
  static std::pair<std::int64_t, std::int64_t> outputSize(const BasicBlockConfig& config);
  std::int64_t outH() const { return conv1_.shape().P(); }
  std::int64_t outW() const { return conv1_.shape().Q(); }

 private:
  Conv2d conv1_;
  BatchNorm2d bn1_;
  Conv2d conv2_;
  BatchNorm2d bn2_;
  std::unique_ptr<Conv2d> downConv_;
  std::unique_ptr<BatchNorm2d> downBn_;
  double sumOver(double (Conv2d::*flops)() const) const;  // its convolutions' FLOPs of one kind
  Tensor sum_, drelu1_, dsum_, dx_;
  const Tensor* x_ = nullptr;
};

// x[N, C, H, W] -> y[N, H, W, C]: the data's images into a channels-last network (a transpose, one read and one
// write; the backward transposes the gradient back, unless the input is the data).
class ChannelsLast final : public Layer {
 public:
  ChannelsLast(Arena& arena, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void skipInputGradient() override;

 private:
  std::int64_t n_, c_, hw_;
  Tensor y_, dx_;
  bool inputGradient_ = true;
};

}  // namespace ts::wl
