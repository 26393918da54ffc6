// cross_entropy: the fused softmax cross-entropy over N = B*S rows of V logits, loss and logit gradients
// in one op: reads the logits, writes the gradients (8 bytes per logit); about 6 FLOPs per logit.
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class CrossEntropyCase final : public KernelCase {
 public:
  CrossEntropyCase(std::int64_t n, std::int64_t v)
      : n_(n), v_(v), z_(randomInputs(n * v, 1, -4, 4)), dz_(n * v), losses_(n), targets_(n) {
    for (std::size_t i = 0; i < n_; ++i) targets_[i] = static_cast<int>((i * 7919) % v_);
  }
  void run() override { cpu::crossEntropyForwardBackward(losses_.data(), dz_.data(), z_.data(), targets_.data(), n_, v_, 1.0f / n_); }
  double flops() const override { return 6.0 * n_ * v_; }
  double bytes() const override { return 8.0 * n_ * v_ + 8.0 * n_; }
  KernelCheck check() override {
    z_ = randomInputs(z_.size(), 51, -8, 8);
    poison(dz_);
    poison(losses_);
    run();
    std::vector<double> want(dz_.size()), wantLoss(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      double sum = 0;
      for (std::size_t v = 0; v < v_; ++v) sum += std::exp(static_cast<double>(z_[i * v_ + v]));
      wantLoss[i] = std::log(sum) - z_[i * v_ + targets_[i]];
      for (std::size_t v = 0; v < v_; ++v)
        want[i * v_ + v] = (std::exp(static_cast<double>(z_[i * v_ + v])) / sum - (static_cast<int>(v) == targets_[i] ? 1.0 : 0.0)) / n_;
    }
    const KernelCheck grads = compareWith(dz_.data(), want.data(), want.size(), 1e-5);
    const KernelCheck loss = compareWith(losses_.data(), wantLoss.data(), n_, 1e-5);
    return grads.maxRelErr >= loss.maxRelErr ? grads : loss;
  }

 private:
  std::size_t n_, v_;
  std::vector<float> z_, dz_, losses_;
  std::vector<int> targets_;
};

class CrossEntropyOp final : public KernelOp {
 public:
  std::string_view name() const override { return "cross_entropy"; }
  std::vector<KernelShape> shapes(std::int64_t, std::int64_t S, std::int64_t B, std::int64_t V) const override {
    return {{"loss", {{"N", B * S}, {"V", V}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<CrossEntropyCase>(s["N"], s["V"]);
  }
};

}  // namespace
const KernelOp& crossEntropyKernelOp() { static const CrossEntropyOp op; return op; }
}  // namespace ts
