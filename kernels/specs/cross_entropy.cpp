// cross_entropy: the fused softmax cross-entropy over N = B*S rows of V logits, loss and logit gradients
// in one op: reads the logits, writes the gradients (8 bytes per logit); about 6 FLOPs per logit.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

std::vector<int> targetsFor(std::size_t n, std::size_t v) {
  std::vector<int> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<int>((i * 7919) % v);
  return t;
}

// Per-row losses and the logit gradients (scaled by 1/N), in float64.
void reference(const std::vector<float>& z, const std::vector<int>& targets, std::size_t n, std::size_t V,
               std::vector<double>& loss, std::vector<double>& grad) {
  loss.assign(n, 0.0);
  grad.assign(n * V, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[i * V + v]));
    loss[i] = std::log(sum) - z[i * V + targets[i]];
    for (std::size_t v = 0; v < V; ++v)
      grad[i * V + v] = (std::exp(static_cast<double>(z[i * V + v])) / sum - (static_cast<int>(v) == targets[i] ? 1.0 : 0.0)) / n;
  }
}

KernelCheck worstOf(const KernelCheck& a, const KernelCheck& b) { return a.maxRelErr >= b.maxRelErr ? a : b; }

class CrossEntropyCase final : public KernelCase {
 public:
  CrossEntropyCase(std::int64_t n, std::int64_t v)
      : n_(n), v_(v), z_(randomInputs(n * v, 1, -4, 4)), dz_(n * v), losses_(n), targets_(targetsFor(n, v)) {}
  void run() override {
    cpu::crossEntropyForwardBackward(losses_.data(), dz_.data(), z_.data(), targets_.data(), n_, v_, 1.0f / n_);
  }
  double flops() const override { return 6.0 * n_ * v_; }
  double bytes() const override { return 8.0 * n_ * v_ + 8.0 * n_; }
  KernelCheck check() override {
    z_ = randomInputs(z_.size(), 51, -8, 8);
    poison(dz_);
    poison(losses_);
    run();
    std::vector<double> wantLoss, want;
    reference(z_, targets_, n_, v_, wantLoss, want);
    return worstOf(compareWith(dz_.data(), want.data(), want.size(), 1e-5),
                   compareWith(losses_.data(), wantLoss.data(), n_, 1e-5));
  }

 private:
  std::size_t n_, v_;
  std::vector<float> z_, dz_, losses_;
  std::vector<int> targets_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaCrossEntropyCase final : public KernelCase {
 public:
  CudaCrossEntropyCase(std::size_t n, std::size_t v) : n_(n), v_(v), z_(n * v), dz_(n * v), losses_(n), targets_(n) {
    z_.upload(randomInputs(n * v, 1, -4, 4), stream_.get());
    targets_.upload(targetsFor(n, v), stream_.get());
  }
  void run() override {
    cuda::crossEntropyForwardBackward(losses_.get(), dz_.get(), z_.get(), targets_.get(), n_, v_, 1.0f / n_, stream_.get());
  }
  double flops() const override { return 6.0 * n_ * v_; }
  double bytes() const override { return 8.0 * n_ * v_ + 8.0 * n_; }
  KernelCheck check() override {
    const auto z = randomInputs(n_ * v_, 51, -8, 8);
    z_.upload(z, stream_.get());
    dz_.poison(stream_.get());
    losses_.poison(stream_.get());
    run();
    std::vector<double> wantLoss, want;
    reference(z, targetsFor(n_, v_), n_, v_, wantLoss, want);
    const auto grads = dz_.download(stream_.get()), losses = losses_.download(stream_.get());
    return worstOf(compareWith(grads.data(), want.data(), want.size(), 1e-5),
                   compareWith(losses.data(), wantLoss.data(), n_, 1e-5));
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  std::size_t n_, v_;
  cuda::Stream stream_;
  cuda::DeviceArray<float> z_, dz_, losses_;
  cuda::DeviceArray<int> targets_;
};
#else
using CudaCrossEntropyCase = void;  // built without CUDA
#endif

class CrossEntropyOp final : public KernelOp {
 public:
  std::string_view name() const override { return "cross_entropy"; }
  std::vector<KernelShape> shapes(std::int64_t, std::int64_t S, std::int64_t B, std::int64_t V) const override {
    return {{"loss", {{"N", B * S}, {"V", V}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<CrossEntropyCase>(s["N"], s["V"]);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return makeCase<CudaCrossEntropyCase>(s["N"], s["V"]);
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(cross_entropy, CrossEntropyOp)
}  // namespace ts
