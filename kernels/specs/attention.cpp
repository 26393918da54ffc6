// attention: causal scaled dot-product attention of a transformer block, q, k, v [B, NH, T, D] (D = 64 in
// the built-in shapes). 4*B*NH*T*T*D FLOPs (the full score matrix, as the reference computes it, also for
// the fused kernel that skips the masked half: one count for every implementation, so that their rates
// compare as their times do); moves at least q, k, v and out once: 16*B*NH*T*D bytes.
// Dimension `impl` (optional in a shapes file, default 0) picks the CUDA implementation: 0 the fused
// one-pass kernel, 1 two-pass (cuBLASLt batched GEMMs around the causal softmax kernel). The CPU has one
// implementation, the two-pass reference, which runs for either. float32 only.
#include <algorithm>
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

struct Dims {
  int b = 0, nh = 0, t = 0, d = 0;
  bool twoPass = false;
  std::size_t n() const { return std::size_t(b) * nh * t * d; }
  double flops() const { return 4.0 * b * nh * double(t) * t * d; }
  double bytes() const { return 16.0 * double(n()); }
};

// float64: per (batch, head) and query i, softmax over keys j <= i of q_i . k_j / sqrt(D), times v.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const Dims& dm) {
  const int T = dm.t, D = dm.d;
  std::vector<double> want(dm.n(), 0.0);
  for (int bh = 0; bh < dm.b * dm.nh; ++bh)
    for (int i = 0; i < T; ++i) {
      std::vector<double> s(static_cast<std::size_t>(i) + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(q[(std::size_t(bh) * T + i) * D + d]) * k[(std::size_t(bh) * T + j) * D + d];
        s[j] = dot / std::sqrt(double(D));
        mx = std::max(mx, s[j]);
      }
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int j = 0; j <= i; ++j)
        for (int d = 0; d < D; ++d) want[(std::size_t(bh) * T + i) * D + d] += s[j] / sum * v[(std::size_t(bh) * T + j) * D + d];
    }
  return want;
}

// Outputs are convex combinations of values in [-1, 1]; float32 exponentials and sums err by ~1e-6.
constexpr double kAttentionTolerance = 2e-5;

class AttentionCase final : public KernelCase {
 public:
  explicit AttentionCase(Dims d)
      : d_(d), q_(randomInputs(d.n(), 1)), k_(randomInputs(d.n(), 2)), v_(randomInputs(d.n(), 3)), out_(d.n()) {}
  void run() override { cpu::attentionForward(out_.data(), q_.data(), k_.data(), v_.data(), d_.b, d_.nh, d_.t, d_.d); }
  double flops() const override { return d_.flops(); }
  double bytes() const override { return d_.bytes(); }
  KernelCheck check() override {
    q_ = randomInputs(d_.n(), 81);
    k_ = randomInputs(d_.n(), 82);
    v_ = randomInputs(d_.n(), 83);
    poison(out_);
    run();
    const auto want = reference(q_, k_, v_, d_);
    return compareWith(out_.data(), want.data(), want.size(), kAttentionTolerance);
  }
  nlohmann::json details() const override { return {{"impl", "two-pass"}}; }

 private:
  Dims d_;
  std::vector<float> q_, k_, v_, out_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaAttentionCase final : public KernelCase {
 public:
  explicit CudaAttentionCase(Dims d)
      : d_(d),
        q_(d.n()),
        k_(d.n()),
        v_(d.n()),
        out_(d.n()),
        workspace_(d.twoPass ? cuda::attentionTwoPassWorkspaceBytes(d.b, d.nh, d.t) : 0) {
    if (!d.twoPass && d.d > cuda::kAttentionMaxHeadDim)
      throw UsageError(fmt::format("attention: the fused kernel takes D up to {} (got {}; impl = 1 is the two-pass one)",
                                   cuda::kAttentionMaxHeadDim, d.d));
    if (d.twoPass) blas_ = std::make_unique<cuda::Blas>();
    upload(randomInputs(d.n(), 1), randomInputs(d.n(), 2), randomInputs(d.n(), 3));
  }
  void run() override {
    if (d_.twoPass)
      cuda::attentionForwardTwoPass(out_.get(), q_.get(), k_.get(), v_.get(), d_.b, d_.nh, d_.t, d_.d, *blas_, workspace_.get(),
                                    stream_.get());
    else
      cuda::attentionForward(out_.get(), q_.get(), k_.get(), v_.get(), d_.b, d_.nh, d_.t, d_.d, stream_.get());
  }
  double flops() const override { return d_.flops(); }
  double bytes() const override { return d_.bytes(); }
  KernelCheck check() override {
    const auto q = randomInputs(d_.n(), 81), k = randomInputs(d_.n(), 82), v = randomInputs(d_.n(), 83);
    upload(q, k, v);
    out_.poison(stream_.get());
    run();
    const auto got = out_.download(stream_.get());
    const auto want = reference(q, k, v, d_);
    return compareWith(got.data(), want.data(), want.size(), kAttentionTolerance);
  }
  void* deviceStream() const override { return stream_.get(); }
  nlohmann::json details() const override {
    if (d_.twoPass) return {{"impl", "two-pass"}, {"workspace_bytes", workspace_.size()}};
    return {{"impl", "fused"}};
  }

 private:
  void upload(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v) {
    q_.upload(q, stream_.get());
    k_.upload(k, stream_.get());
    v_.upload(v, stream_.get());
  }
  Dims d_;
  cuda::Stream stream_;
  cuda::DeviceArray<float> q_, k_, v_, out_;
  cuda::DeviceArray<unsigned char> workspace_;
  std::unique_ptr<cuda::Blas> blas_;  // two-pass only
};
#else
using CudaAttentionCase = void;  // built without CUDA
#endif

class AttentionOp final : public KernelOp {
 public:
  std::string_view name() const override { return "attention"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"attn.sdpa", {{"B", B}, {"NH", H / 64}, {"T", S}, {"D", 64}}},
            {"attn.sdpa.2pass", {{"B", B}, {"NH", H / 64}, {"T", S}, {"D", 64}, {"impl", 1}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<AttentionCase>(dims(s));
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    if (settings.precision != Precision::kFloat32)
      throw UsageError(
          fmt::format("attention: the CUDA implementations run in float32 only (got {})", precisionName(settings.precision)));
    return makeCase<CudaAttentionCase>(dims(s));
  }

 private:
  static Dims dims(const KernelShape& s) {
    auto dim = [&](std::string_view d, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
      std::int64_t v = fallback;
      for (const auto& [k, x] : s.dims)
        if (k == d) v = x;
      if (v < lo || v > hi)
        throw UsageError(fmt::format("attention shape '{}': {} = {} is outside [{}, {}]", s.name, d, v, lo, hi));
      return static_cast<int>(v);
    };
    Dims d;
    d.b = dim("B", 0, 1, INT_MAX);
    d.nh = dim("NH", 0, 1, INT_MAX);
    d.t = dim("T", 0, 1, INT_MAX);
    d.d = dim("D", 0, 1, INT_MAX);
    d.twoPass = dim("impl", 0, 0, 1) == 1;
    return d;
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(attention, AttentionOp)
}  // namespace ts
