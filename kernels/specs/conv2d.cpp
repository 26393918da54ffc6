// conv2d (forward, NCHW, im2col + GEMM) at the convolutions of the ResNet-style CIFAR network (32x32
// images, batch B): 2*N*K*P*Q*C*R*S FLOPs; moves at least x, w and y once (4 bytes each element).
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/specs/kernel_op.h"

namespace ts {
namespace {

class ConvCase final : public KernelCase {
 public:
  explicit ConvCase(const cpu::Conv2dShape& s)
      : s_(s), x_(randomInputs(nx(), 1)), w_(randomInputs(nw(), 2)), b_(randomInputs(s.K, 3)), y_(ny()) {}
  void run() override { cpu::conv2dForward(y_.data(), x_.data(), w_.data(), b_.data(), s_); }
  double flops() const override { return 2.0 * s_.N * s_.K * s_.P() * s_.Q() * s_.C * s_.R * s_.S; }
  double bytes() const override { return 4.0 * (nx() + nw() + ny() + s_.K); }
  KernelCheck check() override {
    x_ = randomInputs(nx(), 71);
    w_ = randomInputs(nw(), 72);
    poison(y_);
    run();
    const int P = s_.P(), Q = s_.Q();
    std::vector<double> want(ny());
    for (int n = 0; n < s_.N; ++n)
      for (int k = 0; k < s_.K; ++k)
        for (int p = 0; p < P; ++p)
          for (int q = 0; q < Q; ++q) {
            double acc = b_[k];
            for (int c = 0; c < s_.C; ++c)
              for (int r = 0; r < s_.R; ++r)
                for (int t = 0; t < s_.S; ++t) {
                  const int h = p * s_.stride - s_.pad + r, w = q * s_.stride - s_.pad + t;
                  if (h >= 0 && h < s_.H && w >= 0 && w < s_.W)
                    acc += double(x_[((std::size_t(n) * s_.C + c) * s_.H + h) * s_.W + w]) * w_[((std::size_t(k) * s_.C + c) * s_.R + r) * s_.S + t];
                }
            want[((std::size_t(n) * s_.K + k) * P + p) * Q + q] = acc;
          }
    return compareWith(y_.data(), want.data(), want.size(), 4e-6 * std::sqrt(static_cast<double>(s_.C * s_.R * s_.S)));
  }

 private:
  std::size_t nx() const { return std::size_t(s_.N) * s_.C * s_.H * s_.W; }
  std::size_t nw() const { return std::size_t(s_.K) * s_.C * s_.R * s_.S; }
  std::size_t ny() const { return std::size_t(s_.N) * s_.K * s_.P() * s_.Q(); }
  cpu::Conv2dShape s_;
  std::vector<float> x_, w_, b_, y_;
};

class ConvOp final : public KernelOp {
 public:
  std::string_view name() const override { return "conv2d"; }
  std::vector<KernelShape> shapes(std::int64_t, std::int64_t, std::int64_t B, std::int64_t) const override {
    auto s = [&](std::string n, int C, int HW, int K, int R, int stride) {
      return KernelShape{std::move(n), {{"N", B}, {"C", C}, {"H", HW}, {"W", HW}, {"K", K}, {"R", R}, {"S", R}, {"stride", stride}, {"pad", R / 2}}};
    };
    return {s("stem", 3, 32, 64, 3, 1), s("stage1.3x3", 64, 32, 64, 3, 1), s("stage2.down", 64, 32, 128, 3, 2), s("stage3.1x1", 128, 16, 256, 1, 2)};
  }
  std::unique_ptr<KernelCase> make(const KernelShape& sh, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    const auto i = [&](const char* d) { return static_cast<int>(sh[d]); };
    return std::make_unique<ConvCase>(cpu::Conv2dShape{i("N"), i("C"), i("H"), i("W"), i("K"), i("R"), i("S"), i("stride"), i("pad")});
  }
};

}  // namespace
const KernelOp& conv2dKernelOp() { static const ConvOp op; return op; }
}  // namespace ts
