// gemm: C[M,N] = A[M,K] @ B[K,N]. 2MNK FLOPs; moves at least A, B and C once: 4(MK + KN + MN) bytes.
// Shapes: the four GEMMs of a transformer block's forward over B*S tokens (QKV, attention output, MLP
// up and down) and the LM head, plus large squares (the compute ceiling).
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class GemmCase final : public KernelCase {
 public:
  GemmCase(std::int64_t m, std::int64_t n, std::int64_t k)
      : m_(m), n_(n), k_(k), a_(randomInputs(m * k, 1)), b_(randomInputs(k * n, 2)), c_(static_cast<std::size_t>(m * n)) {}
  void run() override { cpu::gemm(false, false, m_, n_, k_, 1.0f, a_.data(), k_, b_.data(), n_, 0.0f, c_.data(), n_); }
  double flops() const override { return 2.0 * m_ * n_ * k_; }
  double bytes() const override { return 4.0 * (m_ * k_ + k_ * n_ + m_ * n_); }
  KernelCheck check() override {
    a_ = randomInputs(a_.size(), 11);
    b_ = randomInputs(b_.size(), 12);
    poison(c_);
    run();
    std::vector<double> ad(a_.begin(), a_.end()), bd(b_.begin(), b_.end()), want(c_.size());
    cpu::gemm(false, false, m_, n_, k_, 1.0, ad.data(), k_, bd.data(), n_, 0.0, want.data(), n_);
    return compareWith(c_.data(), want.data(), want.size(), 4e-6 * std::sqrt(static_cast<double>(k_)));  // float32 sums of K terms
  }

 private:
  int m_, n_, k_;
  std::vector<float> a_, b_, c_;
};

class GemmOp final : public KernelOp {
 public:
  std::string_view name() const override { return "gemm"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t V) const override {
    const std::int64_t T = B * S;
    auto s = [](std::string n, std::int64_t m, std::int64_t nn, std::int64_t k) { return KernelShape{std::move(n), {{"M", m}, {"N", nn}, {"K", k}}}; };
    return {s("attn.qkv", T, 3 * H, H), s("attn.proj", T, H, H), s("mlp.up", T, 4 * H, H), s("mlp.down", T, H, 4 * H),
            s("lm_head", T, V, H), s("square 1024", 1024, 1024, 1024), s("square 2048", 2048, 2048, 2048)};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& shape, DType dtype) const override {
    requireFloat32(name(), dtype);
    return std::make_unique<GemmCase>(shape["M"], shape["N"], shape["K"]);
  }
};

}  // namespace
const KernelOp& gemmKernelOp() { static const GemmOp op; return op; }
}  // namespace ts
