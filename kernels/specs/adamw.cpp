// adamw: one fused AdamW step over the parameters of a transformer block (12 H^2): reads params, grads,
// m, v and writes params, m, v: 28 bytes and about 12 FLOPs per parameter.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

struct State {
  std::vector<float> p, g, m, v;
};
State state(std::size_t n, unsigned seed) {
  return {randomInputs(n, seed), randomInputs(n, seed + 1), randomInputs(n, seed + 2, 0.01f, 0.1f),
          randomInputs(n, seed + 3, 0.01f, 0.1f)};
}
constexpr float kLr = 1e-3f, kB1 = 0.9f, kB2 = 0.999f, kEps = 1e-8f, kWd = 0.1f;
constexpr int kStep = 10;

// The parameters after one step, in float64.
std::vector<double> reference(const State& s) {
  std::vector<double> want(s.p.begin(), s.p.end());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double m = kB1 * double(s.m[i]) + (1 - double(kB1)) * s.g[i],
                 v = kB2 * double(s.v[i]) + (1 - double(kB2)) * double(s.g[i]) * s.g[i];
    const double mh = m / (1 - std::pow(double(kB1), kStep)), vh = v / (1 - std::pow(double(kB2), kStep));
    want[i] -= kLr * (mh / (std::sqrt(vh) + kEps) + kWd * want[i]);
  }
  return want;
}

class AdamWCase final : public KernelCase {
 public:
  explicit AdamWCase(std::int64_t n)
      : n_(n),
        p_(randomInputs(n, 1)),
        g_(randomInputs(n, 2)),
        m_(randomInputs(n, 3, 0.01f, 0.1f)),
        v_(randomInputs(n, 4, 0.01f, 0.1f)) {}
  void run() override { cpu::adamwUpdate(p_.data(), g_.data(), m_.data(), v_.data(), n_, kLr, kB1, kB2, kEps, kWd, kStep); }
  double flops() const override { return 12.0 * n_; }
  double bytes() const override { return 28.0 * n_; }
  KernelCheck check() override {
    const State s = state(n_, 61);
    p_ = s.p;
    g_ = s.g;
    m_ = s.m;
    v_ = s.v;
    const auto want = reference(s);
    run();  // in place: the parameters are the output
    return compareWith(p_.data(), want.data(), n_, 1e-6);
  }

 private:
  std::size_t n_;
  std::vector<float> p_, g_, m_, v_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaAdamWCase final : public KernelCase {
 public:
  explicit CudaAdamWCase(std::size_t n) : n_(n), p_(n), g_(n), m_(n), v_(n) { upload(state(n, 1)); }
  void run() override {
    cuda::adamwUpdate(p_.get(), g_.get(), m_.get(), v_.get(), n_, kLr, kB1, kB2, kEps, kWd, kStep, stream_.get());
  }
  double flops() const override { return 12.0 * n_; }
  double bytes() const override { return 28.0 * n_; }
  KernelCheck check() override {
    const State s = state(n_, 61);
    upload(s);
    run();
    const auto got = p_.download(stream_.get());
    const auto want = reference(s);
    return compareWith(got.data(), want.data(), n_, 1e-6);
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  void upload(const State& s) {
    p_.upload(s.p, stream_.get());
    g_.upload(s.g, stream_.get());
    m_.upload(s.m, stream_.get());
    v_.upload(s.v, stream_.get());
  }
  std::size_t n_;
  cuda::Stream stream_;
  cuda::DeviceArray<float> p_, g_, m_, v_;
};
#else
using CudaAdamWCase = void;  // built without CUDA
#endif

class AdamWOp final : public KernelOp {
 public:
  std::string_view name() const override { return "adamw"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t, std::int64_t, std::int64_t) const override {
    return {{"block.params", {{"n", 12 * H * H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<AdamWCase>(s["n"]);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return makeCase<CudaAdamWCase>(s["n"]);
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(adamw, AdamWOp)
}  // namespace ts
