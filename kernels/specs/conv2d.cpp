// conv2d, conv2d_bwd_data, conv2d_bwd_filter: the three passes of a 2-D convolution, at the convolutions
// of the ResNet-style CIFAR network (32x32 images, batch B):
//   conv2d             y[N,K,P,Q]  = x[N,C,H,W] (*) w[K,C,R,S] + bias[K]   (y overwritten)
//   conv2d_bwd_data    dx[N,C,H,W] += the gradient through w of dy[N,K,P,Q]
//   conv2d_bwd_filter  dw[K,C,R,S] += the gradient through x of dy[N,K,P,Q]
// The backward passes accumulate, as a training step does (the CPU ops always do; on CUDA, beta = 1).
// Each pass is 2*N*K*P*Q*C*R*S FLOPs and moves at least its two inputs and its output once (e bytes an
// element: 4 for float32 and TF32, 2 for bfloat16 and float16; the forward reads bias[K] too).
// CPU (kernels/cpu/convolution.h): float32, oneDNN (the default where built with it; --conv-algo onednn) in
// NCHW or NHWC (--conv-layout), or im2col + GEMM (--conv-algo im2col) in NCHW; the record names the algorithm,
// oneDNN's kernel and the layout. CUDA: cuDNN (kernels/cuda/convolution.h), float32, TF32, bfloat16 or
// float16 tensors (16-bit outputs too), NCHW or NHWC (--conv-layout), the algorithm from cuDNN's heuristics
// or its timed search (--conv-algo).
// Checked against a direct float64 convolution from the definition on fresh inputs: the forward's output
// poisoned with NaN first, the backward's output holding random values the gradient must be added to.
#include <climits>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/convolution.h"
#include "kernels/specs/kernel_op.h"
#ifdef TRAINSCOPE_HAVE_CUDNN
#include "kernels/cuda/convolution.h"
#include "kernels/cuda/device_resources.h"
#endif

namespace ts {
namespace {

using Pass = cpu::ConvPass;

// The three tensors every pass touches. The forward reads x, w and writes y; backward-data reads dy (kept
// in y) and w and writes dx (in x); backward-filter reads dy (in y) and x and writes dw (in w).
enum class Tensor { kX, kW, kY };
Tensor outputOf(Pass p) { return p == Pass::kForward ? Tensor::kY : p == Pass::kBackwardData ? Tensor::kX : Tensor::kW; }

// A tensor's dimensions in NCHW order: x [N,C,H,W], w [K,C,R,S], y [N,K,P,Q].
struct Dims4 {
  std::size_t d0, d1, d2, d3;
  std::size_t count() const { return d0 * d1 * d2 * d3; }
};
Dims4 dimsOf(const cpu::Conv2dShape& s, Tensor t) {
  using Z = std::size_t;
  switch (t) {
    case Tensor::kX:
      return {Z(s.N), Z(s.C), Z(s.H), Z(s.W)};
    case Tensor::kW:
      return {Z(s.K), Z(s.C), Z(s.R), Z(s.S)};
    case Tensor::kY:
      return {Z(s.N), Z(s.K), Z(s.P()), Z(s.Q())};
  }
  return {0, 0, 0, 0};
}
std::size_t countOf(const cpu::Conv2dShape& s, Tensor t) { return dimsOf(s, t).count(); }

double convFlops(const cpu::Conv2dShape& s) { return 2.0 * s.N * s.K * s.P() * s.Q() * s.C * s.R * s.S; }
double convBytes(Pass pass, const cpu::Conv2dShape& s, std::size_t elementBytes) {
  const double elements = double(countOf(s, Tensor::kX)) + double(countOf(s, Tensor::kW)) + double(countOf(s, Tensor::kY)) +
                          (pass == Pass::kForward ? s.K : 0);
  return double(elementBytes) * elements;
}

// Calls f(yi, xi, wi) for every product of the convolution: output element yi of y [N,K,P,Q] takes input
// element xi of x [N,C,H,W] times filter element wi of w [K,C,R,S] (the zero padding takes nothing).
template <typename F>
void forEachProduct(const cpu::Conv2dShape& s, F f) {
  const int P = s.P(), Q = s.Q();
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          const std::size_t yi = ((std::size_t(n) * s.K + k) * P + p) * Q + q;
          for (int c = 0; c < s.C; ++c)
            for (int r = 0; r < s.R; ++r) {
              const int h = p * s.stride - s.pad + r;
              if (h < 0 || h >= s.H) continue;
              for (int t = 0; t < s.S; ++t) {
                const int w = q * s.stride - s.pad + t;
                if (w < 0 || w >= s.W) continue;
                f(yi, ((std::size_t(n) * s.C + c) * s.H + h) * s.W + w, ((std::size_t(k) * s.C + c) * s.R + r) * s.S + t);
              }
            }
        }
}

// The pass in float64 from the definition, NCHW: the forward with its bias; a backward pass's gradient
// alone (the caller adds the values it accumulates onto). y holds dy for the backward passes.
std::vector<double> reference(Pass pass, const cpu::Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& y, const std::vector<float>& bias) {
  std::vector<double> out(countOf(s, outputOf(pass)), 0.0);
  switch (pass) {
    case Pass::kForward: {
      forEachProduct(s, [&](std::size_t yi, std::size_t xi, std::size_t wi) { out[yi] += double(x[xi]) * w[wi]; });
      const std::size_t PQ = std::size_t(s.P()) * s.Q();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] += bias[(i / PQ) % s.K];
      break;
    }
    case Pass::kBackwardData:
      forEachProduct(s, [&](std::size_t yi, std::size_t xi, std::size_t wi) { out[xi] += double(y[yi]) * w[wi]; });
      break;
    case Pass::kBackwardFilter:
      forEachProduct(s, [&](std::size_t yi, std::size_t xi, std::size_t wi) { out[wi] += double(y[yi]) * x[xi]; });
      break;
  }
  return out;
}

// Products summed into one output element: the forward C*R*S (+ the bias), backward-data at most K*R*S,
// backward-filter N*P*Q.
double termsPerOutput(Pass pass, const cpu::Conv2dShape& s) {
  switch (pass) {
    case Pass::kForward:
      return double(s.C) * s.R * s.S + 1;
    case Pass::kBackwardData:
      return double(s.K) * s.R * s.S;
    case Pass::kBackwardFilter:
      return double(s.N) * s.P() * s.Q();
  }
  return 1;
}

// Relative tolerance. float32 sums of `terms` products: 4e-6 sqrt(terms) as for GEMM (im2col + OpenBLAS), 4
// times that on cuDNN, whose FFT and Winograd algorithms round their transformed operands too, and on oneDNN,
// whose backward-filter kernels add each gradient's N*P*Q products in long running float32 sums (7.3e-4 at
// N*P*Q = 32768 on this CPU, over GEMM's 7.2e-4). TF32 rounds each input to a 10-bit mantissa first: 2e-3 sqrt(terms).
// bfloat16 and float16 inputs are rounded on the host, so the reference sees what the op sees and the float32
// accumulation differs alone, but the outputs are stored in 16 bits: up to three roundings (the forward's sum,
// then its bias added; a backward's gradient, then the value it is added to), each unitRoundoff of the larger
// of 1 and the result.
double tolerance(Pass pass, const cpu::Conv2dShape& s, Precision p, bool cuda, bool onednn = false) {
  const double root = std::sqrt(termsPerOutput(pass, s));
  const double sums = (cuda || onednn ? 1.6e-5 : 4e-6) * root;
  if (!cuda) return sums;
  if (p == Precision::kTF32) return 2e-3 * root;
  return p == Precision::kFloat32 ? sums : sums + 3 * unitRoundoff(p);
}

// [d0,d1,d2,d3] <-> [d0,d2,d3,d1] (NCHW and NHWC, KCRS and KRSC): toLast moves d1 last, else back.
std::vector<float> permuteChannels(const std::vector<float>& v, Dims4 d, bool toLast) {
  std::vector<float> out(v.size());
  for (std::size_t a = 0; a < d.d0; ++a)
    for (std::size_t b = 0; b < d.d1; ++b)
      for (std::size_t c = 0; c < d.d2; ++c)
        for (std::size_t e = 0; e < d.d3; ++e) {
          const std::size_t first = ((a * d.d1 + b) * d.d2 + c) * d.d3 + e, last = ((a * d.d2 + c) * d.d3 + e) * d.d1 + b;
          if (toLast)
            out[last] = v[first];
          else
            out[first] = v[last];
        }
  return out;
}
std::vector<float> toChannelsLast(const std::vector<float>& v, Dims4 d) { return permuteChannels(v, d, true); }
std::vector<float> fromChannelsLast(const std::vector<float>& v, Dims4 d) { return permuteChannels(v, d, false); }

// The CPU pass, float32, by the chosen algorithm in the chosen layout (tensors generated in NCHW and
// transposed for NHWC, as on CUDA).
class ConvCase final : public KernelCase {
 public:
  ConvCase(Pass pass, const cpu::Conv2dShape& s, const KernelSettings& k)
      : pass_(pass),
        s_(s),
        method_{k.cpuConv, k.convNhwc ? ConvLayout::kNhwc : ConvLayout::kNchw},
        x_(inLayout(Tensor::kX, randomInputs(countOf(s, Tensor::kX), 1))),
        w_(inLayout(Tensor::kW, randomInputs(countOf(s, Tensor::kW), 2))),
        y_(inLayout(Tensor::kY, randomInputs(countOf(s, Tensor::kY), 4))),
        b_(randomInputs(s.K, 3)) {}
  void run() override {
    switch (pass_) {
      case Pass::kForward:
        cpu::conv2dForward(y_.data(), x_.data(), w_.data(), b_.data(), s_, method_);
        break;
      case Pass::kBackwardData:
        cpu::conv2dBackwardData(x_.data(), y_.data(), w_.data(), s_, method_);
        break;
      case Pass::kBackwardFilter:
        cpu::conv2dBackwardFilter(w_.data(), nullptr, y_.data(), x_.data(), s_, method_);
        break;
    }
  }
  double flops() const override { return convFlops(s_); }
  double bytes() const override { return convBytes(pass_, s_, sizeof(float)); }
  KernelCheck check() override {
    const auto x = randomInputs(x_.size(), 71), w = randomInputs(w_.size(), 72), y = randomInputs(y_.size(), 73);
    x_ = inLayout(Tensor::kX, x);
    w_ = inLayout(Tensor::kW, w);
    y_ = inLayout(Tensor::kY, y);
    const Tensor outT = outputOf(pass_);
    std::vector<float>& out = tensor(outT);
    if (pass_ == Pass::kForward) poison(out);
    run();
    const std::vector<float> got = nhwc() ? fromChannelsLast(out, dimsOf(s_, outT)) : out;
    std::vector<double> want = reference(pass_, s_, x, w, y, b_);
    if (pass_ != Pass::kForward) {  // what the backward pass added onto
      const std::vector<float>& prior = outT == Tensor::kX ? x : w;
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += prior[i];
    }
    return compareWith(got.data(), want.data(), want.size(),
                       tolerance(pass_, s_, Precision::kFloat32, false, method_.algorithm == cpu::ConvAlgorithm::kOneDnn));
  }
  nlohmann::json details() const override {
    return {{"algo", nameOf(method_.algorithm)},
            {"kernel", cpu::convImplementation(pass_, s_, method_)},
            {"layout", nameOf(method_.layout)}};
  }

 private:
  bool nhwc() const { return method_.layout == ConvLayout::kNhwc; }
  std::vector<float>& tensor(Tensor t) { return t == Tensor::kX ? x_ : t == Tensor::kW ? w_ : y_; }
  // An NCHW (KCRS) tensor in the method's layout.
  std::vector<float> inLayout(Tensor t, std::vector<float> nchw) const {
    return nhwc() ? toChannelsLast(nchw, dimsOf(s_, t)) : nchw;
  }
  Pass pass_;
  cpu::Conv2dShape s_;
  cpu::ConvMethod method_;            // declared before the tensors, which inLayout makes in its layout
  std::vector<float> x_, w_, y_, b_;  // y_ is dy for the backward passes; x_ / w_ their outputs dx / dw
};

#ifdef TRAINSCOPE_HAVE_CUDNN
cuda::ConvolutionOptions optionsFor(Pass pass, const KernelSettings& k) {
  cuda::ConvolutionOptions o;
  o.precision = k.precision;
  o.layout = k.convNhwc ? cuda::ConvLayout::kNhwc : cuda::ConvLayout::kNchw;
  o.choice = k.convSearch ? cuda::ConvAlgoChoice::kSearch : cuda::ConvAlgoChoice::kHeuristic;
  o.forward = pass == Pass::kForward;
  o.backwardData = pass == Pass::kBackwardData;
  o.backwardFilter = pass == Pass::kBackwardFilter;
  return o;
}

cuda::ConvDirection directionOf(Pass p) {
  return p == Pass::kForward        ? cuda::ConvDirection::kForward
         : p == Pass::kBackwardData ? cuda::ConvDirection::kBackwardData
                                    : cuda::ConvDirection::kBackwardFilter;
}

// The cuDNN pass on the current device, its own stream; tensors in the precision's storage type and the
// chosen layout (generated in NCHW on the host, transposed on the way up and back down).
class CudaConvCase final : public KernelCase {
 public:
  CudaConvCase(Pass pass, const cpu::Conv2dShape& s, const KernelSettings& k)
      : pass_(pass),
        s_(s),
        precision_(k.precision),
        t_(storageType(k.precision)),
        nhwc_(k.convNhwc),
        conv_(s, optionsFor(pass, k)),
        x_(countOf(s, Tensor::kX) * dtypeSize(t_)),
        w_(countOf(s, Tensor::kW) * dtypeSize(t_)),
        y_(countOf(s, Tensor::kY) * dtypeSize(t_)),
        b_(std::size_t(s.K) * dtypeSize(t_)),
        bias_(roundedInputs(s.K, 3, t_)) {
    upload(Tensor::kX, roundedInputs(countOf(s, Tensor::kX), 1, t_));
    upload(Tensor::kW, roundedInputs(countOf(s, Tensor::kW), 2, t_));
    upload(Tensor::kY, roundedInputs(countOf(s, Tensor::kY), 4, t_));
    b_.upload(bytesOf(bias_), stream_.get());
  }
  void run() override {
    switch (pass_) {
      case Pass::kForward:
        conv_.forward(y_.get(), x_.get(), w_.get(), b_.get(), stream_.get(), 0.0f);
        break;
      case Pass::kBackwardData:
        conv_.backwardData(x_.get(), y_.get(), w_.get(), stream_.get(), 1.0f);
        break;
      case Pass::kBackwardFilter:
        conv_.backwardFilter(w_.get(), nullptr, y_.get(), x_.get(), stream_.get(), 1.0f);
        break;
    }
  }
  double flops() const override { return convFlops(s_); }
  double bytes() const override { return convBytes(pass_, s_, dtypeSize(t_)); }
  KernelCheck check() override {
    const auto x = roundedInputs(countOf(s_, Tensor::kX), 71, t_), w = roundedInputs(countOf(s_, Tensor::kW), 72, t_),
               y = roundedInputs(countOf(s_, Tensor::kY), 73, t_);
    upload(Tensor::kX, x);
    upload(Tensor::kW, w);
    upload(Tensor::kY, y);
    const Tensor outT = outputOf(pass_);
    if (pass_ == Pass::kForward) array(outT).poison(stream_.get());  // 0xff bytes: NaN in all three types
    run();
    const std::vector<float> got = download(outT);
    std::vector<double> want = reference(pass_, s_, x, w, y, bias_);
    if (pass_ != Pass::kForward) {
      const std::vector<float>& prior = outT == Tensor::kX ? x : w;
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += prior[i];
    }
    return compareWith(got.data(), want.data(), want.size(), tolerance(pass_, s_, precision_, true));
  }
  void* deviceStream() const override { return stream_.get(); }
  nlohmann::json details() const override {
    const cuda::ConvDirection d = directionOf(pass_);
    return {{"algo", conv_.algoName(d)},
            {"math", conv_.mathName(d)},
            {"workspace_bytes", conv_.workspaceBytes(d)},
            {"layout", nhwc_ ? "nhwc" : "nchw"}};
  }

 private:
  cuda::DeviceArray<unsigned char>& array(Tensor t) { return t == Tensor::kX ? x_ : t == Tensor::kW ? w_ : y_; }
  std::vector<unsigned char> bytesOf(const std::vector<float>& v) const {
    std::vector<unsigned char> out(v.size() * dtypeSize(t_));
    for (std::size_t i = 0; i < v.size(); ++i) storeElement(out.data(), t_, i, v[i]);
    return out;
  }
  // An NCHW host tensor to the device, in the layout and dtype; and back.
  void upload(Tensor t, const std::vector<float>& nchw) {
    array(t).upload(bytesOf(nhwc_ ? toChannelsLast(nchw, dimsOf(s_, t)) : nchw), stream_.get());
  }
  std::vector<float> download(Tensor t) {
    const std::vector<unsigned char> raw = array(t).download(stream_.get());
    std::vector<float> v(countOf(s_, t));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(loadElement(raw.data(), t_, i));
    return nhwc_ ? fromChannelsLast(v, dimsOf(s_, t)) : v;
  }

  Pass pass_;
  cpu::Conv2dShape s_;
  Precision precision_;
  DType t_;
  bool nhwc_;
  cuda::Stream stream_;
  cuda::Convolution conv_;
  cuda::DeviceArray<unsigned char> x_, w_, y_, b_;  // y_ holds dy for the backward passes, x_ / w_ their outputs
  std::vector<float> bias_;                         // bias[K] as uploaded, for the reference
};
#else
using CudaConvCase = void;  // built without cuDNN
#endif

class ConvOp final : public KernelOp {
 public:
  explicit ConvOp(Pass pass) : pass_(pass) {}
  std::string_view name() const override {
    return pass_ == Pass::kForward ? "conv2d" : pass_ == Pass::kBackwardData ? "conv2d_bwd_data" : "conv2d_bwd_filter";
  }
  std::vector<KernelShape> shapes(std::int64_t, std::int64_t, std::int64_t B, std::int64_t) const override {
    auto s = [&](std::string n, int C, int HW, int K, int R, int stride) {
      return KernelShape{
          std::move(n),
          {{"N", B}, {"C", C}, {"H", HW}, {"W", HW}, {"K", K}, {"R", R}, {"S", R}, {"stride", stride}, {"pad", R / 2}}};
    };
    return {s("stem", 3, 32, 64, 3, 1), s("stage1.3x3", 64, 32, 64, 3, 1), s("stage2.down", 64, 32, 128, 3, 2),
            s("stage3.1x1", 128, 16, 256, 1, 2)};
  }
  bool supports(Precision p, bool cuda) const override { return cuda || p == Precision::kFloat32; }
  std::unique_ptr<KernelCase> make(const KernelShape& sh, const KernelSettings& settings) const override {
    requireFloat32(name(), settings.precision);
    return std::make_unique<ConvCase>(pass_, shapeOf(sh), settings);
  }
  std::unique_ptr<KernelCase> makeCuda(const KernelShape& sh, const KernelSettings& settings) const override {
    return makeCase<CudaConvCase>(pass_, shapeOf(sh), settings);
  }

 private:
  // The shape, UsageError where it makes no convolution (a --shapes file can hold anything).
  cpu::Conv2dShape shapeOf(const KernelShape& sh) const {
    const auto i = [&](const char* d) {
      const std::int64_t v = sh[d];
      if (v < (std::string_view(d) == "pad" ? 0 : 1) || v > INT_MAX / 4)
        throw UsageError(fmt::format("{} {}: {} = {} is out of range", name(), sh.name, d, v));
      return static_cast<int>(v);
    };
    const cpu::Conv2dShape s{i("N"), i("C"), i("H"), i("W"), i("K"), i("R"), i("S"), i("stride"), i("pad")};
    if (s.H + 2 * s.pad < s.R || s.W + 2 * s.pad < s.S)
      throw UsageError(fmt::format("{} {}: a {}x{} filter does not fit the {}x{} input padded by {}", name(), sh.name, s.R, s.S,
                                   s.H, s.W, s.pad));
    return s;
  }
  Pass pass_;
};

}  // namespace
TS_DEFINE_KERNEL_OP(conv2d, ConvOp, Pass::kForward)
TS_DEFINE_KERNEL_OP(conv2d_bwd_data, ConvOp, Pass::kBackwardData)
TS_DEFINE_KERNEL_OP(conv2d_bwd_filter, ConvOp, Pass::kBackwardFilter)
}  // namespace ts
