// softmax (causal) over attention scores: B*NH*S rows of S columns (NH = H/64 heads); reads and writes
// every score once, 8 bytes and about 5 FLOPs (max, subtract, exp, sum, scale) per element.
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class SoftmaxCase final : public KernelCase {
 public:
  SoftmaxCase(std::int64_t rows, std::int64_t t) : rows_(rows), t_(t), x_(randomInputs(rows * t, 1, -4, 4)), y_(rows * t) {}
  void run() override { cpu::softmaxForward(y_.data(), x_.data(), rows_, t_, t_); }
  double flops() const override { return 5.0 * rows_ * t_; }
  double bytes() const override { return 8.0 * rows_ * t_; }
  KernelCheck check() override {
    x_ = randomInputs(x_.size(), 31, -6, 6);
    poison(y_);
    run();
    std::vector<double> want(y_.size(), 0.0);
    for (std::size_t r = 0; r < rows_; ++r) {
      const std::size_t valid = r % t_ + 1;
      double sum = 0;
      for (std::size_t c = 0; c < valid; ++c) sum += std::exp(static_cast<double>(x_[r * t_ + c]));
      for (std::size_t c = 0; c < valid; ++c) want[r * t_ + c] = std::exp(static_cast<double>(x_[r * t_ + c])) / sum;
    }
    return compareWith(y_.data(), want.data(), want.size(), 1e-6);
  }

 private:
  std::size_t rows_, t_;
  std::vector<float> x_, y_;
};

class SoftmaxOp final : public KernelOp {
 public:
  std::string_view name() const override { return "softmax"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"attn.softmax", {{"rows", B * (H / 64) * S}, {"T", S}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<SoftmaxCase>(s["rows"], s["T"]);
  }
};

}  // namespace
const KernelOp& softmaxKernelOp() { static const SoftmaxOp op; return op; }
}  // namespace ts
