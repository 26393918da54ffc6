// attention: causal scaled dot-product attention of a transformer block, q, k, v [B, NH, S, 64]; the
// reference computes the full score matrix: 4*B*NH*S*S*64 FLOPs; moves at least q, k, v and out once.
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class AttentionCase final : public KernelCase {
 public:
  AttentionCase(int b, int nh, int t, int d)
      : b_(b), nh_(nh), t_(t), d_(d), q_(randomInputs(n(), 1)), k_(randomInputs(n(), 2)), v_(randomInputs(n(), 3)), out_(n()) {}
  void run() override { cpu::attentionForward(out_.data(), q_.data(), k_.data(), v_.data(), b_, nh_, t_, d_); }
  double flops() const override { return 4.0 * b_ * nh_ * double(t_) * t_ * d_; }
  double bytes() const override { return 16.0 * n(); }
  KernelCheck check() override {
    q_ = randomInputs(n(), 81);
    k_ = randomInputs(n(), 82);
    v_ = randomInputs(n(), 83);
    poison(out_);
    run();
    std::vector<double> want(n(), 0.0);
    for (int bh = 0; bh < b_ * nh_; ++bh)
      for (int i = 0; i < t_; ++i) {
        std::vector<double> s(static_cast<std::size_t>(i) + 1);
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int d = 0; d < d_; ++d) dot += double(q_[(std::size_t(bh) * t_ + i) * d_ + d]) * k_[(std::size_t(bh) * t_ + j) * d_ + d];
          s[j] = dot / std::sqrt(double(d_));
          mx = std::max(mx, s[j]);
        }
        for (auto& x : s) sum += (x = std::exp(x - mx));
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < d_; ++d) want[(std::size_t(bh) * t_ + i) * d_ + d] += s[j] / sum * v_[(std::size_t(bh) * t_ + j) * d_ + d];
      }
    return compareWith(out_.data(), want.data(), want.size(), 2e-5);
  }

 private:
  std::size_t n() const { return std::size_t(b_) * nh_ * t_ * d_; }
  int b_, nh_, t_, d_;
  std::vector<float> q_, k_, v_, out_;
};

class AttentionOp final : public KernelOp {
 public:
  std::string_view name() const override { return "attention"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"attn.sdpa", {{"B", B}, {"NH", H / 64}, {"T", S}, {"D", 64}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<AttentionCase>(static_cast<int>(s["B"]), static_cast<int>(s["NH"]), static_cast<int>(s["T"]), static_cast<int>(s["D"]));
  }
};

}  // namespace
const KernelOp& attentionKernelOp() { static const AttentionOp op; return op; }
}  // namespace ts
