// layernorm (forward) over N = B*S rows of C = H: reads the input (and weight, bias) once and writes the
// output and the saved mean/rstd: 4(2NC + 2C + 2N) bytes; about 8 FLOPs per element.
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class LayerNormCase final : public KernelCase {
 public:
  LayerNormCase(std::int64_t n, std::int64_t c)
      : n_(n), c_(c), x_(randomInputs(n * c, 1)), w_(randomInputs(c, 2)), b_(randomInputs(c, 3)), y_(n * c), mean_(n), rstd_(n) {}
  void run() override { cpu::layernormForward(y_.data(), mean_.data(), rstd_.data(), x_.data(), w_.data(), b_.data(), n_, c_); }
  double flops() const override { return 8.0 * n_ * c_; }
  double bytes() const override { return 4.0 * (2.0 * n_ * c_ + 2.0 * c_ + 2.0 * n_); }
  KernelCheck check() override {
    x_ = randomInputs(x_.size(), 21, -3, 3);
    poison(y_);
    run();
    std::vector<double> want(y_.size());
    for (std::size_t i = 0; i < n_; ++i) {
      double m = 0, v = 0;
      for (std::size_t c = 0; c < c_; ++c) m += x_[i * c_ + c];
      m /= static_cast<double>(c_);
      for (std::size_t c = 0; c < c_; ++c) v += (x_[i * c_ + c] - m) * (x_[i * c_ + c] - m);
      v /= static_cast<double>(c_);
      for (std::size_t c = 0; c < c_; ++c) want[i * c_ + c] = (x_[i * c_ + c] - m) / std::sqrt(v + 1e-5) * w_[c] + b_[c];
    }
    return compareWith(y_.data(), want.data(), want.size(), 1e-5);
  }

 private:
  std::size_t n_, c_;
  std::vector<float> x_, w_, b_, y_, mean_, rstd_;
};

class LayerNormOp final : public KernelOp {
 public:
  std::string_view name() const override { return "layernorm"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"block.ln", {{"N", B * S}, {"C", H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<LayerNormCase>(s["N"], s["C"]);
  }
};

}  // namespace
const KernelOp& layernormKernelOp() { static const LayerNormOp op; return op; }
}  // namespace ts
