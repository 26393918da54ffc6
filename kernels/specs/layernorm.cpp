// layernorm (forward) over N = B*S rows of C = H: reads the input (and weight, bias) once and writes the
// output and the saved mean/rstd: 4(2NC + 2C + 2N) bytes; about 8 FLOPs per element.
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

struct Inputs {
  std::vector<float> x, w, b;
};
Inputs inputs(std::size_t n, std::size_t c, unsigned seed) {
  return {randomInputs(n * c, seed, -3, 3), randomInputs(c, seed + 1), randomInputs(c, seed + 2)};
}

std::vector<double> reference(const Inputs& in, std::size_t N, std::size_t C) {
  std::vector<double> y(N * C);
  for (std::size_t i = 0; i < N; ++i) {
    double m = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += in.x[i * C + c];
    m /= static_cast<double>(C);
    for (std::size_t c = 0; c < C; ++c) v += (in.x[i * C + c] - m) * (in.x[i * C + c] - m);
    v /= static_cast<double>(C);
    for (std::size_t c = 0; c < C; ++c) y[i * C + c] = (in.x[i * C + c] - m) / std::sqrt(v + 1e-5) * in.w[c] + in.b[c];
  }
  return y;
}

constexpr double kLayernormTolerance = 1e-5;
double flopsOf(std::size_t n, std::size_t c) { return 8.0 * n * c; }
double bytesOf(std::size_t n, std::size_t c) { return 4.0 * (2.0 * n * c + 2.0 * c + 2.0 * n); }

class LayerNormCase final : public KernelCase {
 public:
  LayerNormCase(std::size_t n, std::size_t c) : n_(n), c_(c), in_(inputs(n, c, 1)), y_(n * c), mean_(n), rstd_(n) {}
  void run() override {
    cpu::layernormForward(y_.data(), mean_.data(), rstd_.data(), in_.x.data(), in_.w.data(), in_.b.data(), n_, c_);
  }
  double flops() const override { return flopsOf(n_, c_); }
  double bytes() const override { return bytesOf(n_, c_); }
  KernelCheck check() override {
    in_ = inputs(n_, c_, 21);
    poison(y_);
    run();
    const auto want = reference(in_, n_, c_);
    return compareWith(y_.data(), want.data(), want.size(), kLayernormTolerance);
  }

 private:
  std::size_t n_, c_;
  Inputs in_;
  std::vector<float> y_, mean_, rstd_;
};

#ifdef TRAINSCOPE_HAVE_CUDA
class CudaLayerNormCase final : public KernelCase {
 public:
  CudaLayerNormCase(std::size_t n, std::size_t c) : n_(n), c_(c), x_(n * c), w_(c), b_(c), y_(n * c), mean_(n), rstd_(n) {
    upload(inputs(n, c, 1));
  }
  void run() override {
    cuda::layernormForward(y_.get(), mean_.get(), rstd_.get(), x_.get(), w_.get(), b_.get(), n_, c_, stream_.get());
  }
  double flops() const override { return flopsOf(n_, c_); }
  double bytes() const override { return bytesOf(n_, c_); }
  KernelCheck check() override {
    const Inputs in = inputs(n_, c_, 21);
    upload(in);
    y_.poison(stream_.get());
    run();
    const auto got = y_.download(stream_.get());
    const auto want = reference(in, n_, c_);
    return compareWith(got.data(), want.data(), want.size(), kLayernormTolerance);
  }
  void* deviceStream() const override { return stream_.get(); }

 private:
  void upload(const Inputs& in) {
    x_.upload(in.x, stream_.get());
    w_.upload(in.w, stream_.get());
    b_.upload(in.b, stream_.get());
  }
  std::size_t n_, c_;
  cuda::Stream stream_;
  cuda::DeviceArray<float> x_, w_, b_, y_, mean_, rstd_;
};
#else
using CudaLayerNormCase = void;  // built without CUDA
#endif

class LayerNormOp final : public KernelOp {
 public:
  std::string_view name() const override { return "layernorm"; }
  std::vector<KernelShape> shapes(std::int64_t H, std::int64_t S, std::int64_t B, std::int64_t) const override {
    return {{"block.ln", {{"N", B * S}, {"C", H}}}};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<LayerNormCase>(s["N"], s["C"]);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& s, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return makeCase<CudaLayerNormCase>(s["N"], s["C"]);
  }
};

}  // namespace
TS_DEFINE_KERNEL_OP(layernorm, LayerNormOp)
}  // namespace ts
