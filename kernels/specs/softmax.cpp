// softmax (causal) over attention scores: B*NH*S rows of S columns (NH = H/64 heads); reads and writes
// every score once, 8 bytes and about 5 FLOPs (max, subtract, exp, sum, scale) per element.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

std::vector<double> reference(const std::vector<float>& x, std::size_t rows, std::size_t t) {
  std::vector<double> want(rows * t, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t valid = r % t + 1;
    double sum = 0;
    for (std::size_t c = 0; c < valid; ++c) sum += std::exp(static_cast<double>(x[r * t + c]));
    for (std::size_t c = 0; c < valid; ++c) want[r * t + c] = std::exp(static_cast<double>(x[r * t + c])) / sum;
  }
  return want;
}

constexpr double kSoftmaxTolerance = 1e-6;

class SoftmaxCase final : public KernelCase {
 public:
  SoftmaxCase(std::size_t rows, std::size_t t) : rows_(rows), t_(t), x_(randomInputs(rows * t, 1, -4, 4)), y_(rows * t) {}
  void run() override { cpu::softmaxForward(y_.data(), x_.data(), rows_, t_, t_); }
  double flops() const override { return 5.0 * rows_ * t_; }
  double bytes() const override { return 8.0 * rows_ * t_; }
  KernelCheck check() override {
    x_ = randomInputs(x_.size(), 31, -6, 6);
    poison(y_);
    run();
    const auto want = reference(x_, rows_, t_);
    return compareWith(y_.data(), want.data(), want.size(), kSoftmaxTolerance);
  }

 private:
  std::size_t rows_, t_;
  std::vector<float> x_, y_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaSoftmaxCase final : public KernelCase {
 public:
  CudaSoftmaxCase(std::size_t rows, std::size_t t) : rows_(rows), t_(t), x_(rows * t), y_(rows * t) {
    x_.upload(randomInputs(rows * t, 1, -4, 4), stream_.get());
  }
  void run() override { cuda::softmaxForward(y_.get(), x_.get(), rows_, t_, t_, stream_.get()); }
  double flops() const override { return 5.0 * rows_ * t_; }
  double bytes() const override { return 8.0 * rows_ * t_; }
  KernelCheck check() override {
    const auto x = randomInputs(rows_ * t_, 31, -6, 6);
    x_.upload(x, stream_.get());
    y_.poison(stream_.get());
    run();
    const auto got = y_.download(stream_.get());
    const auto want = reference(x, rows_, t_);
    return compareWith(got.data(), want.data(), want.size(), kSoftmaxTolerance);
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  std::size_t rows_, t_;
  cuda::Stream stream_;
  cuda::DeviceArray<float> x_, y_;
};
#else
using CudaSoftmaxCase = void;  // built without CUDA
#endif

class SoftmaxOp final : public KernelOp {
 public:
  std::string_view name() const override { return "softmax"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"attn.softmax", {{"rows", B * (H / 64) * S}, {"T", S}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<SoftmaxCase>(s["rows"], s["T"]);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return makeCase<CudaSoftmaxCase>(s["rows"], s["T"]);
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(softmax, SoftmaxOp)
}  // namespace ts
