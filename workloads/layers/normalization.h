#pragma once
// LayerNorm over the last dimension (transformer) and BatchNorm2d per channel (CNN), each with a gain
// and a bias. Both read the input twice (statistics, then the output) and write once.
#include "workloads/layers/layer.h"

namespace ts::wl {

class LayerNorm final : public Layer {
 public:
  LayerNorm(Arena& arena, const std::string& name, std::int64_t rows, std::int64_t channels);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;

 private:
  std::int64_t rows_, channels_;
  Param w_, b_;
  const Tensor* x_ = nullptr;
  Tensor y_, mean_, rstd_, dx_;
};

// Training-mode batch normalisation of x[N, C, H, W] (batch statistics; the running statistics are kept
// for evaluation and checkpoints, as PyTorch's running_mean / running_var buffers).
class BatchNorm2d final : public Layer {
 public:
  // slice: these c channels are this rank's slice of a tensor-parallel layer's (weights 1, biases 0, as
  // the whole layer's are; the running statistics sliced alike).
  // layout: how x (and y, dx) are stored (imageShape).
  BatchNorm2d(Arena& arena, const std::string& name, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
              ConvLayout layout, TensorSlice slice = {});
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  void buffers(std::vector<NamedTensor>& out) override;
  // SyncBatchNorm's asks (cpu::batchnormForward, batchnormBackward): the channels' sums and the value count, then
  // their centred squares; backward, the two gradient sums per channel and the count.
  void groupSums(LayerSums& out) const override;
  // The output is relu(y) from now on, in the same pass. The caller applies the ReLU's backward (relu(y) > 0
  // exactly where y > 0) before this layer's backward, which takes the gradient of y.
  void fuseRelu() { relu_ = true; }
  const Tensor& output() const { return y_; }  // the last forward's

 private:
  bool relu_ = false;
  std::string name_;
  std::int64_t n_, c_, hw_;
  ConvLayout layout_;
  Param w_, b_;
  Tensor runningMean_, runningVar_;
  TensorSlice slice_;
  const Tensor* x_ = nullptr;
  Tensor y_, mean_, rstd_, dx_;
};

}  // namespace ts::wl
