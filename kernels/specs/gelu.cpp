// gelu (forward, tanh approximation) over the MLP activations, B*S*4H elements: reads and writes each
// once (8 bytes), about 10 FLOPs each (tanh counted as one).
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

std::vector<double> reference(const std::vector<float>& x) {
  std::vector<double> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    want[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return want;
}

constexpr double kGeluTolerance = 1e-5;

class GeluCase final : public KernelCase {
 public:
  explicit GeluCase(std::size_t n) : x_(randomInputs(n, 1, -5, 5)), y_(n) {}
  void run() override { cpu::geluForward(y_.data(), x_.data(), x_.size()); }
  double flops() const override { return 10.0 * x_.size(); }
  double bytes() const override { return 8.0 * x_.size(); }
  KernelCheck check() override {
    x_ = randomInputs(x_.size(), 41, -6, 6);
    poison(y_);
    run();
    const auto want = reference(x_);
    return compareWith(y_.data(), want.data(), want.size(), kGeluTolerance);
  }

 private:
  std::vector<float> x_, y_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaGeluCase final : public KernelCase {
 public:
  explicit CudaGeluCase(std::size_t n) : x_(n), y_(n) { x_.upload(randomInputs(n, 1, -5, 5), stream_.get()); }
  void run() override { cuda::geluForward(y_.get(), x_.get(), x_.size(), stream_.get()); }
  double flops() const override { return 10.0 * x_.size(); }
  double bytes() const override { return 8.0 * x_.size(); }
  KernelCheck check() override {
    const auto x = randomInputs(x_.size(), 41, -6, 6);
    x_.upload(x, stream_.get());
    y_.poison(stream_.get());
    run();
    const auto got = y_.download(stream_.get());
    const auto want = reference(x);
    return compareWith(got.data(), want.data(), want.size(), kGeluTolerance);
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  cuda::Stream stream_;
  cuda::DeviceArray<float> x_, y_;
};
#else
using CudaGeluCase = void;  // built without CUDA
#endif

class GeluOp final : public KernelOp {
 public:
  std::string_view name() const override { return "gelu"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"mlp.gelu", {{"n", B * S * 4 * H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<GeluCase>(s["n"]);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return makeCase<CudaGeluCase>(s["n"]);
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(gelu, GeluOp)
}  // namespace ts
