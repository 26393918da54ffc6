#pragma once
// Linear: y[N, out] = x[N, in] W^T + b, W stored [out, in] as in PyTorch (so checkpoints load into
// torch.nn.Linear). 2 N in out FLOPs forward; the backward is two GEMMs of the same size (dx = dy W,
// dW += dy^T x) and a column sum (db).
#include "workloads/layers/layer.h"

namespace ts::wl {

class Linear final : public Layer {
 public:
  Linear(Arena& arena, const Init& init, const std::string& name, std::int64_t rows, std::int64_t in, std::int64_t out, bool bias = true,
         double initStd = -1);  // initStd < 0: PyTorch's default U(-1/sqrt(in), 1/sqrt(in))
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  double forwardFlops() const override { return 2.0 * rows_ * in_ * out_; }
  Param& weight() { return w_; }

 private:
  std::int64_t rows_, in_, out_;
  bool hasBias_;
  Param w_, b_;
  const Tensor* x_ = nullptr;
  Tensor y_, dx_;
};

}  // namespace ts::wl
