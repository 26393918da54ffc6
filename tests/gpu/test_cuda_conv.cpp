// The cuDNN convolution (kernels/cuda/convolution.h) against the CPU's im2col + GEMM (kernels/cpu/cpu_ops.h):
// forward with bias, backward-data, and backward-filter with the bias gradient, the backward ones
// accumulating as the CPU's do, at awkward shapes (one image, three channels, odd sizes, stride 2, no
// padding, 1x1 / 3x3 / 5x5 filters), in NCHW and NHWC, with the heuristic's and the search's algorithms,
// in every precision. Skips, saying why, where no GPU is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "base/precision.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/convolution.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_resources.h"
#include "kernels/specs/kernel_op.h"  // randomInputs
#include "tests/gpu/gpu_test_support.h"

namespace ts {
namespace {

using cuda::ConvAlgoChoice;
using cuda::ConvDirection;
using cuda::ConvLayout;

// N, C, H, W, K, R, S, stride, pad.
const cpu::Conv2dShape kShapes[] = {
    {1, 3, 7, 9, 5, 3, 3, 1, 1},      // one image, three channels, odd sizes
    {2, 3, 11, 13, 4, 5, 5, 2, 0},    // 5x5, stride 2, no padding
    {1, 5, 9, 7, 6, 1, 1, 2, 0},      // 1x1, stride 2
    {2, 7, 5, 5, 3, 1, 1, 1, 0},      // 1x1, stride 1
    {3, 8, 15, 17, 16, 3, 3, 2, 1},   // 3x3, stride 2, padded
    {2, 16, 10, 10, 8, 5, 5, 1, 1},   // 5x5 padded by 1 (not "same")
    {4, 32, 28, 28, 64, 3, 3, 1, 1},  // large enough for the tensor-core algorithms
};

std::string text(const cpu::Conv2dShape& s) {
  return "N=" + std::to_string(s.N) + " C=" + std::to_string(s.C) + " H=" + std::to_string(s.H) + " W=" + std::to_string(s.W) +
         " K=" + std::to_string(s.K) + " R=" + std::to_string(s.R) + " S=" + std::to_string(s.S) +
         " stride=" + std::to_string(s.stride) + " pad=" + std::to_string(s.pad);
}

// Inputs rounded to the dtype on the host, so that the CPU computes from what the GPU reads.
std::vector<float> rounded(std::vector<float> v, DType t) {
  for (auto& x : v) {
    if (t == DType::kBFloat16) x = bfloat16ToFloat(floatToBFloat16(x));
    if (t == DType::kFloat16) x = halfToFloat(floatToHalf(x));
  }
  return v;
}

// A 4-D tensor [d0,d1,d2,d3] (NCHW, KCRS) as [d0,d2,d3,d1] (NHWC, KRSC), and back.
std::vector<float> toChannelsLast(const std::vector<float>& v, int d0, int d1, int d2, int d3) {
  std::vector<float> out(v.size());
  for (std::size_t a = 0; a < std::size_t(d0); ++a)
    for (std::size_t b = 0; b < std::size_t(d1); ++b)
      for (std::size_t c = 0; c < std::size_t(d2); ++c)
        for (std::size_t e = 0; e < std::size_t(d3); ++e)
          out[((a * d2 + c) * d3 + e) * d1 + b] = v[((a * d1 + b) * d2 + c) * d3 + e];
  return out;
}
std::vector<float> fromChannelsLast(const std::vector<float>& v, int d0, int d1, int d2, int d3) {
  std::vector<float> out(v.size());
  for (std::size_t a = 0; a < std::size_t(d0); ++a)
    for (std::size_t b = 0; b < std::size_t(d1); ++b)
      for (std::size_t c = 0; c < std::size_t(d2); ++c)
        for (std::size_t e = 0; e < std::size_t(d3); ++e)
          out[((a * d1 + b) * d2 + c) * d3 + e] = v[((a * d2 + c) * d3 + e) * d1 + b];
  return out;
}

// One tensor on the device in the dtype and layout, filled from / read back to an NCHW host vector.
class DeviceTensor {
 public:
  DeviceTensor(std::array<int, 4> dims, DType t, bool nhwc, cudaStream_t s)
      : dims_(dims), t_(t), nhwc_(nhwc), s_(s), a_(std::size_t(dims[0]) * dims[1] * dims[2] * dims[3] * dtypeSize(t)) {}
  void* get() const { return a_.get(); }
  void set(const std::vector<float>& nchw) {
    const auto v = nhwc_ ? toChannelsLast(nchw, dims_[0], dims_[1], dims_[2], dims_[3]) : nchw;
    std::vector<unsigned char> raw(v.size() * dtypeSize(t_));
    for (std::size_t i = 0; i < v.size(); ++i) storeElement(raw.data(), t_, i, v[i]);
    a_.upload(raw, s_);
  }
  void poison() { a_.poison(s_); }  // 0xff bytes: NaN in float32, bfloat16 and float16
  std::vector<float> get_nchw() const {
    const auto raw = a_.download(s_);
    std::vector<float> v(raw.size() / dtypeSize(t_));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(loadElement(raw.data(), t_, i));
    return nhwc_ ? fromChannelsLast(v, dims_[0], dims_[1], dims_[2], dims_[3]) : v;
  }

 private:
  std::array<int, 4> dims_;
  DType t_;
  bool nhwc_;
  cudaStream_t s_;
  cuda::DeviceArray<unsigned char> a_;
};

// Sums of `terms` products against the CPU's float32: TF32 rounds the inputs to 10 bits; 16-bit outputs add
// up to three roundings (result, then the bias or the accumulated value).
double tolerance(Precision p, double terms) {
  if (p == Precision::kTF32) return 2e-3 * std::sqrt(terms);
  const double sums = 2e-5 * std::sqrt(terms);
  return p == Precision::kFloat32 ? sums : sums + 3 * unitRoundoff(p);
}

struct Outputs {
  std::vector<float> y, dx, dw, db;
};

// Every direction of one convolution, from the same host data, on the GPU (and the same on the CPU).
Outputs runGpu(cuda::Convolution& conv, const cpu::Conv2dShape& s, DType t, bool nhwc, const std::vector<float>& x,
               const std::vector<float>& w, const std::vector<float>& b, const std::vector<float>& dy,
               const std::vector<float>& dx0, const std::vector<float>& dw0, const std::vector<float>& db0,
               float backwardBeta = 1.0f) {
  cuda::Stream stream;
  DeviceTensor dX({s.N, s.C, s.H, s.W}, t, nhwc, stream.get()), dW({s.K, s.C, s.R, s.S}, t, nhwc, stream.get());
  DeviceTensor dB({1, s.K, 1, 1}, t, false, stream.get()), dY({s.N, s.K, s.P(), s.Q()}, t, nhwc, stream.get());
  DeviceTensor dDy({s.N, s.K, s.P(), s.Q()}, t, nhwc, stream.get()), dDx({s.N, s.C, s.H, s.W}, t, nhwc, stream.get());
  DeviceTensor dDw({s.K, s.C, s.R, s.S}, t, nhwc, stream.get()), dDb({1, s.K, 1, 1}, t, false, stream.get());
  dX.set(x);
  dW.set(w);
  dB.set(b);
  dDy.set(dy);
  dY.poison();
  if (backwardBeta == 0.0f) {
    dDx.poison();  // with beta = 0 the outputs are not read
    dDw.poison();
    dDb.poison();
  } else {
    dDx.set(dx0);
    dDw.set(dw0);
    dDb.set(db0);
  }
  conv.forward(dY.get(), dX.get(), dW.get(), dB.get(), stream.get());
  conv.backwardData(dDx.get(), dDy.get(), dW.get(), stream.get(), backwardBeta);
  conv.backwardFilter(dDw.get(), dDb.get(), dDy.get(), dX.get(), stream.get(), backwardBeta);
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return {dY.get_nchw(), dDx.get_nchw(), dDw.get_nchw(), dDb.get_nchw()};
}

Outputs runCpu(const cpu::Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
               const std::vector<float>& dy, const std::vector<float>& dx0, const std::vector<float>& dw0,
               const std::vector<float>& db0) {
  Outputs r{std::vector<float>(std::size_t(s.N) * s.K * s.P() * s.Q()), dx0, dw0, db0};
  cpu::conv2dForward(r.y.data(), x.data(), w.data(), b.data(), s);
  cpu::conv2dBackwardData(r.dx.data(), dy.data(), w.data(), s);
  cpu::conv2dBackwardFilter(r.dw.data(), r.db.data(), dy.data(), x.data(), s);
  return r;
}

class CudaConv : public ::testing::TestWithParam<std::tuple<Precision, ConvLayout, ConvAlgoChoice>> {};

TEST_P(CudaConv, EveryDirectionAgainstTheCpu) {
  REQUIRE_GPU();
  const auto [precision, layout, choice] = GetParam();
  const DType t = storageType(precision);
  const bool nhwc = layout == ConvLayout::kNhwc;
  for (const cpu::Conv2dShape& s : kShapes) {
    const std::size_t nx = std::size_t(s.N) * s.C * s.H * s.W, nw = std::size_t(s.K) * s.C * s.R * s.S,
                      ny = std::size_t(s.N) * s.K * s.P() * s.Q();
    const auto x = rounded(randomInputs(nx, 1), t), w = rounded(randomInputs(nw, 2), t), b = rounded(randomInputs(s.K, 3), t);
    const auto dy = rounded(randomInputs(ny, 4), t), dx0 = rounded(randomInputs(nx, 5), t), dw0 = rounded(randomInputs(nw, 6), t),
               db0 = rounded(randomInputs(s.K, 7), t);
    cuda::ConvolutionOptions o;
    o.precision = precision;
    o.layout = layout;
    o.choice = choice;
    cuda::Convolution conv(s, o);
    const std::string where = text(s) + " " + std::string(precisionName(precision)) + " " +
                              std::string(cuda::convLayoutName(layout)) +
                              (choice == ConvAlgoChoice::kSearch ? " search" : " heuristic");
    for (ConvDirection d : {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardFilter}) {
      EXPECT_FALSE(conv.algoName(d).empty()) << where;
      EXPECT_LE(conv.workspaceBytes(d), conv.workspaceAllocatedBytes()) << where;
    }
    const Outputs onGpu = runGpu(conv, s, t, nhwc, x, w, b, dy, dx0, dw0, db0);
    const Outputs onCpu = runCpu(s, x, w, b, dy, dx0, dw0, db0);
    const auto algo = [&](ConvDirection d) { return " (" + conv.algoName(d) + ", " + conv.mathName(d) + ")"; };
    EXPECT_LT(maxRel(onGpu.y, onCpu.y), tolerance(precision, double(s.C) * s.R * s.S))
        << "forward " << where << algo(ConvDirection::kForward);
    EXPECT_LT(maxRel(onGpu.dx, onCpu.dx), tolerance(precision, double(s.K) * s.R * s.S))
        << "backward-data " << where << algo(ConvDirection::kBackwardData);
    EXPECT_LT(maxRel(onGpu.dw, onCpu.dw), tolerance(precision, double(s.N) * s.P() * s.Q()))
        << "backward-filter " << where << algo(ConvDirection::kBackwardFilter);
    EXPECT_LT(maxRel(onGpu.db, onCpu.db), tolerance(precision, double(s.N) * s.P() * s.Q())) << "backward-bias " << where;
  }
}

std::string paramName(const ::testing::TestParamInfo<CudaConv::ParamType>& info) {
  const auto [precision, layout, choice] = info.param;
  return std::string(precisionName(precision)) + "_" + std::string(cuda::convLayoutName(layout)) +
         (choice == ConvAlgoChoice::kSearch ? "_search" : "_heuristic");
}

INSTANTIATE_TEST_SUITE_P(AllPrecisionsLayoutsAndChoices, CudaConv,
                         ::testing::Combine(::testing::Values(Precision::kFloat32, Precision::kTF32, Precision::kBFloat16,
                                                              Precision::kFloat16),
                                            ::testing::Values(ConvLayout::kNchw, ConvLayout::kNhwc),
                                            ::testing::Values(ConvAlgoChoice::kHeuristic, ConvAlgoChoice::kSearch)),
                         paramName);

TEST(CudaConvSemantics, BetaZeroOverwritesWithoutReadingTheOutputs) {
  REQUIRE_GPU();
  const cpu::Conv2dShape s{2, 3, 11, 13, 4, 5, 5, 2, 0};
  const std::size_t nx = std::size_t(s.N) * s.C * s.H * s.W, nw = std::size_t(s.K) * s.C * s.R * s.S,
                    ny = std::size_t(s.N) * s.K * s.P() * s.Q();
  const auto x = randomInputs(nx, 11), w = randomInputs(nw, 12), b = randomInputs(s.K, 13), dy = randomInputs(ny, 14);
  const std::vector<float> zx(nx, 0.0f), zw(nw, 0.0f), zb(s.K, 0.0f);
  cuda::Convolution conv(s, cuda::ConvolutionOptions{});
  const Outputs onGpu = runGpu(conv, s, DType::kFloat32, false, x, w, b, dy, zx, zw, zb, 0.0f);  // outputs poisoned, beta 0
  const Outputs onCpu = runCpu(s, x, w, b, dy, zx, zw, zb);                                      // accumulated onto zeros
  EXPECT_LT(maxRel(onGpu.dx, onCpu.dx), tolerance(Precision::kFloat32, double(s.K) * s.R * s.S));
  EXPECT_LT(maxRel(onGpu.dw, onCpu.dw), tolerance(Precision::kFloat32, double(s.N) * s.P() * s.Q()));
  EXPECT_LT(maxRel(onGpu.db, onCpu.db), tolerance(Precision::kFloat32, double(s.N) * s.P() * s.Q()));
}

TEST(CudaConvSemantics, AWorkspaceLimitIsRespectedOrNamed) {
  REQUIRE_GPU();
  const cpu::Conv2dShape s{4, 32, 28, 28, 64, 3, 3, 1, 1};
  for (ConvAlgoChoice choice : {ConvAlgoChoice::kHeuristic, ConvAlgoChoice::kSearch}) {
    cuda::ConvolutionOptions o;
    o.choice = choice;
    o.maxWorkspaceBytes = 0;
    try {
      cuda::Convolution conv(s, o);
      EXPECT_EQ(conv.workspaceAllocatedBytes(), 0u);
      const std::size_t nx = std::size_t(s.N) * s.C * s.H * s.W, nw = std::size_t(s.K) * s.C * s.R * s.S,
                        ny = std::size_t(s.N) * s.K * s.P() * s.Q();
      const auto x = randomInputs(nx, 21), w = randomInputs(nw, 22), b = randomInputs(s.K, 23), dy = randomInputs(ny, 24);
      const auto dx0 = randomInputs(nx, 25), dw0 = randomInputs(nw, 26), db0 = randomInputs(s.K, 27);
      const Outputs onGpu = runGpu(conv, s, DType::kFloat32, false, x, w, b, dy, dx0, dw0, db0);
      const Outputs onCpu = runCpu(s, x, w, b, dy, dx0, dw0, db0);
      EXPECT_LT(maxRel(onGpu.y, onCpu.y), tolerance(Precision::kFloat32, double(s.C) * s.R * s.S));
      EXPECT_LT(maxRel(onGpu.dx, onCpu.dx), tolerance(Precision::kFloat32, double(s.K) * s.R * s.S));
      EXPECT_LT(maxRel(onGpu.dw, onCpu.dw), tolerance(Precision::kFloat32, double(s.N) * s.P() * s.Q()));
    } catch (const Error& e) {  // no zero-workspace algorithm in this cuDNN: it must say so
      EXPECT_NE(std::string(e.what()).find("no usable"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaConvSemantics, ShapesThatMakeNoConvolutionAreUsageErrors) {
  // No GPU needed: the shape is checked before cuDNN is called.
  cuda::ConvolutionOptions o;
  EXPECT_THROW(cuda::Convolution(cpu::Conv2dShape{1, 3, 4, 4, 2, 7, 7, 1, 1}, o), UsageError);  // 7x7 on a padded 6x6
  EXPECT_THROW(cuda::Convolution(cpu::Conv2dShape{1, 3, 4, 4, 2, 3, 3, 0, 1}, o), UsageError);  // stride 0
  EXPECT_THROW(cuda::Convolution(cpu::Conv2dShape{0, 3, 4, 4, 2, 3, 3, 1, 1}, o), UsageError);  // no images
}

}  // namespace
}  // namespace ts
