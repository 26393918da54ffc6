// gelu (forward, tanh approximation) over the MLP activations, B*S*4H elements: reads and writes each
// once (8 bytes), about 10 FLOPs each (tanh counted as one).
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class GeluCase final : public KernelCase {
 public:
  explicit GeluCase(std::int64_t n) : n_(n), x_(randomInputs(n, 1, -5, 5)), y_(n) {}
  void run() override { cpu::geluForward(y_.data(), x_.data(), n_); }
  double flops() const override { return 10.0 * n_; }
  double bytes() const override { return 8.0 * n_; }
  KernelCheck check() override {
    x_ = randomInputs(x_.size(), 41, -6, 6);
    poison(y_);
    run();
    std::vector<double> want(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      const double x = x_[i];
      want[i] = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return compareWith(y_.data(), want.data(), want.size(), 1e-5);
  }

 private:
  std::size_t n_;
  std::vector<float> x_, y_;
};

class GeluOp final : public KernelOp {
 public:
  std::string_view name() const override { return "gelu"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"mlp.gelu", {{"n", B * S * 4 * H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<GeluCase>(s["n"]);
  }
};

}  // namespace
const KernelOp& geluKernelOp() { static const GeluOp op; return op; }
}  // namespace ts
