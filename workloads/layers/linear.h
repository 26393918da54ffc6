#pragma once
// Linear: y[N, out] = x[N, in] W^T + b, W stored [out, in] as in PyTorch (so checkpoints load into
// torch.nn.Linear). 2 N in out FLOPs forward; the backward is two GEMMs of the same size (dx = dy W,
// dW += dy^T x) and a column sum (db).
//
// Tensor parallel (TensorSplit): column-parallel holds the rows of W (and b) for some output features
// and produces that slice of y; its dx is a partial sum, summed over the group. Row-parallel holds the
// columns of W for a slice of the input features, takes that slice of x, and sums its partial y over the
// group before adding the (whole, replicated) bias. forwardFlops() is the whole layer's (the model's FLOPs),
// rankForwardFlops() this rank's slice's (layer.h says why both).
#include "workloads/layers/layer.h"

namespace ts::wl {

// x[rows, in] -> y[rows, out]: the whole layer's sizes (a split holds its share).
struct LinearConfig {
  std::int64_t rows = 0, in = 0, out = 0;
  bool bias = true;
  double initStd = -1;  // < 0: PyTorch's default U(-1/sqrt(in), 1/sqrt(in)); else N(0, initStd), the bias zeros
  TensorSplit split = {};
};

class Linear final : public Layer {
 public:
  Linear(Arena& arena, const Init& init, const std::string& name, const LinearConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  double forwardFlops() const override { return gemmFlops(rows_, fullIn_, fullOut_); }
  double rankForwardFlops() const override { return gemmFlops(rows_, in_, out_); }
  void skipInputGradient() override {
    inputGradient_ = false;
    zero(dx_);
  }
  void groupSums(LayerSums& out) const override;
  Param& weight() { return w_; }

 private:
  // One forward's: 2 rows in out.
  static double gemmFlops(std::int64_t rows, std::int64_t in, std::int64_t out) {
    return 2.0 * double(rows) * double(in) * double(out);
  }
  std::int64_t rows_, in_, out_;   // this rank's
  std::int64_t fullIn_, fullOut_;  // the whole layer's
  bool hasBias_;
  TensorSplit split_;
  Param w_, b_;
  const Tensor* x_ = nullptr;
  Tensor y_, dx_;
  bool inputGradient_ = true;
};

}  // namespace ts::wl
