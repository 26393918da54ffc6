// adamw: one fused AdamW step over the parameters of a transformer block (12 H^2): reads params, grads,
// m, v and writes params, m, v: 28 bytes and about 12 FLOPs per parameter.
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class AdamWCase final : public KernelCase {
 public:
  explicit AdamWCase(std::int64_t n)
      : n_(n), p_(randomInputs(n, 1)), g_(randomInputs(n, 2)), m_(randomInputs(n, 3, 0.01f, 0.1f)), v_(randomInputs(n, 4, 0.01f, 0.1f)) {}
  void run() override { cpu::adamwUpdate(p_.data(), g_.data(), m_.data(), v_.data(), n_, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 10); }
  double flops() const override { return 12.0 * n_; }
  double bytes() const override { return 28.0 * n_; }
  KernelCheck check() override {
    p_ = randomInputs(n_, 61);
    g_ = randomInputs(n_, 62);
    m_ = randomInputs(n_, 63, 0.01f, 0.1f);
    v_ = randomInputs(n_, 64, 0.01f, 0.1f);
    std::vector<double> want(p_.begin(), p_.end());
    for (std::size_t i = 0; i < n_; ++i) {
      const double m = 0.9 * m_[i] + 0.1 * g_[i], v = 0.999 * v_[i] + 0.001 * double(g_[i]) * g_[i];
      const double mh = m / (1 - std::pow(0.9, 10)), vh = v / (1 - std::pow(0.999, 10));
      want[i] -= 1e-3 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * want[i]);
    }
    run();  // in place: the parameters are the output
    return compareWith(p_.data(), want.data(), n_, 1e-6);
  }

 private:
  std::size_t n_;
  std::vector<float> p_, g_, m_, v_;
};

class AdamWOp final : public KernelOp {
 public:
  std::string_view name() const override { return "adamw"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t, std::int64_t, std::int64_t) const override {
    return {{"block.params", {{"n", 12 * H * H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<AdamWCase>(s["n"]);
  }
};

}  // namespace
const KernelOp& adamwKernelOp() { static const AdamWOp op; return op; }
}  // namespace ts
