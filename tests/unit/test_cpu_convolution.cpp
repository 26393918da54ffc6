// The CPU convolution's methods (kernels/cpu/convolution.h: oneDNN in NCHW and NHWC, im2col in NCHW)
// against a float64 convolution from the definition, on awkward shapes: the forward's output poisoned
// first, the backward passes adding onto random dx, dw, dbias; each call twice, the second on a cached
// plan with other buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/convolution.h"
#include "kernels/specs/kernel_op.h"  // randomInputs: random data, never zeros
#include "tests/unit/relative_error.h"

namespace ts {
namespace {

using cpu::Conv2dShape;
using cpu::ConvAlgorithm;
using cpu::ConvMethod;

struct Grads {
  std::vector<double> y, dx, dw, db;  // the forward (with bias) and the three gradients alone
};

// All three passes in float64 from the definition, NCHW.
Grads reference(const Conv2dShape& s, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                const std::vector<float>& dy) {
  const int P = s.P(), Q = s.Q();
  Grads g{std::vector<double>(dy.size()), std::vector<double>(x.size()), std::vector<double>(w.size()),
          std::vector<double>(b.size())};
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          const std::size_t yi = ((std::size_t(n) * s.K + k) * P + p) * Q + q;
          double acc = b[k];
          g.db[k] += dy[yi];
          for (int c = 0; c < s.C; ++c)
            for (int r = 0; r < s.R; ++r)
              for (int t = 0; t < s.S; ++t) {
                const int h = p * s.stride - s.pad + r, v = q * s.stride - s.pad + t;
                if (h < 0 || h >= s.H || v < 0 || v >= s.W) continue;
                const std::size_t xi = ((std::size_t(n) * s.C + c) * s.H + h) * s.W + v;
                const std::size_t wi = ((std::size_t(k) * s.C + c) * s.R + r) * s.S + t;
                acc += double(x[xi]) * w[wi];
                g.dx[xi] += double(dy[yi]) * w[wi];
                g.dw[wi] += double(dy[yi]) * x[xi];
              }
          g.y[yi] = acc;
        }
  return g;
}

// [a,b,c,d] -> [a,c,d,b] (NCHW to NHWC, KCRS to KRSC) and back.
std::vector<float> channelsLast(const std::vector<float>& v, int a, int b, int c, int d, bool back = false) {
  std::vector<float> out(v.size());
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < b; ++j)
      for (int k = 0; k < c; ++k)
        for (int l = 0; l < d; ++l) {
          const std::size_t first = ((std::size_t(i) * b + j) * c + k) * d + l, last = ((std::size_t(i) * c + k) * d + l) * b + j;
          out[back ? first : last] = v[back ? last : first];
        }
  return out;
}

// The tensors of one case in the method's layout, converting to and from NCHW.
struct Layouts {
  Conv2dShape s;
  bool nhwc;
  std::vector<float> act(const std::vector<float>& v, int c, int h, int w, bool back = false) const {
    return nhwc ? channelsLast(v, s.N, c, h, w, back) : v;
  }
  std::vector<float> x(const std::vector<float>& v, bool back = false) const { return act(v, s.C, s.H, s.W, back); }
  std::vector<float> y(const std::vector<float>& v, bool back = false) const { return act(v, s.K, s.P(), s.Q(), back); }
  std::vector<float> w(const std::vector<float>& v, bool back = false) const {
    return nhwc ? channelsLast(v, s.K, s.C, s.R, s.S, back) : v;
  }
};

using test::maxRelErr;

std::vector<double> plus(std::vector<double> gradient, const std::vector<float>& prior) {
  for (std::size_t i = 0; i < gradient.size(); ++i) gradient[i] += prior[i];
  return gradient;
}

struct MethodCase {
  ConvAlgorithm algorithm;
  ConvLayout layout;
};
std::string caseName(const testing::TestParamInfo<MethodCase>& i) {
  return std::string(nameOf(i.param.algorithm)) + "_" + std::string(nameOf(i.param.layout));
}

class CpuConvolution : public testing::TestWithParam<MethodCase> {};

TEST_P(CpuConvolution, AllThreePassesMatchFloat64AndAccumulateOrOverwrite) {
  const ConvMethod m{GetParam().algorithm, GetParam().layout};
  if (m.algorithm == ConvAlgorithm::kOneDnn && !cpu::haveOneDnn()) GTEST_SKIP() << "built without oneDNN";
  // {N, C, H, W, K, R, S, stride, pad}: padded 3x3, stride 2 with odd sizes, unpadded stride 2, 1x1 (stride 1
  // and 2), a 5x5 filter, batch 1, channels not a multiple of any vector width, a ResNet downsampling.
  for (const Conv2dShape s :
       {Conv2dShape{2, 3, 5, 6, 4, 3, 3, 1, 1}, Conv2dShape{3, 5, 9, 7, 6, 3, 3, 2, 1}, Conv2dShape{1, 2, 7, 7, 3, 3, 3, 2, 0},
        Conv2dShape{1, 4, 6, 6, 4, 1, 1, 1, 0}, Conv2dShape{2, 8, 8, 8, 16, 1, 1, 2, 0},
        Conv2dShape{2, 17, 11, 13, 9, 5, 5, 1, 2}, Conv2dShape{4, 16, 16, 16, 32, 3, 3, 2, 1}}) {
    SCOPED_TRACE(testing::Message() << "N" << s.N << " C" << s.C << " H" << s.H << " W" << s.W << " K" << s.K << " R" << s.R
                                    << " stride " << s.stride << " pad " << s.pad);
    const std::size_t nx = std::size_t(s.N) * s.C * s.H * s.W, nw = std::size_t(s.K) * s.C * s.R * s.S;
    const std::size_t ny = std::size_t(s.N) * s.K * s.P() * s.Q();
    const Layouts L{s, m.layout == ConvLayout::kNhwc};
    // Terms summed per output: C*R*S (forward), up to K*R*S (backward-data), N*P*Q (backward-filter); oneDNN
    // sums in long running float32 sums, 4 times GEMM's tolerance (as kernels/specs/conv2d.cpp).
    const double perTerm = m.algorithm == ConvAlgorithm::kOneDnn ? 1.6e-5 : 4e-6;
    const auto tolerance = [&](double terms) { return perTerm * std::sqrt(terms); };
    for (unsigned round = 0; round < 2; ++round) {  // the second round runs the plans the first one made
      const unsigned seed = 50 + 10 * round;
      const auto x = randomInputs(nx, seed), w = randomInputs(nw, seed + 1), b = randomInputs(s.K, seed + 2),
                 dy = randomInputs(ny, seed + 3), dx0 = randomInputs(nx, seed + 4), dw0 = randomInputs(nw, seed + 5),
                 db0 = randomInputs(s.K, seed + 6);
      const Grads want = reference(s, x, w, b, dy);
      const auto xl = L.x(x), wl = L.w(w), dyl = L.y(dy);
      std::vector<float> y(ny, NAN), dx = L.x(dx0), dw = L.w(dw0), db = db0;
      cpu::conv2dForward(y.data(), xl.data(), wl.data(), b.data(), s, m);
      cpu::conv2dBackwardData(dx.data(), dyl.data(), wl.data(), s, m);
      cpu::conv2dBackwardFilter(dw.data(), db.data(), dyl.data(), xl.data(), s, m);
      EXPECT_LE(maxRelErr(L.y(y, true), want.y), tolerance(s.C * s.R * s.S + 1));
      EXPECT_LE(maxRelErr(L.x(dx, true), plus(want.dx, dx0)), tolerance(s.K * s.R * s.S));
      EXPECT_LE(maxRelErr(L.w(dw, true), plus(want.dw, dw0)), tolerance(s.N * s.P() * s.Q()));
      EXPECT_LE(maxRelErr(db, plus(want.db, db0)), tolerance(s.N * s.P() * s.Q()));
      // Without a bias: the forward has none to add, backward-filter none to write.
      std::vector<float> y0(ny, NAN), dwAlone = L.w(dw0);
      cpu::conv2dForward(y0.data(), xl.data(), wl.data(), nullptr, s, m);
      cpu::conv2dBackwardFilter(dwAlone.data(), nullptr, dyl.data(), xl.data(), s, m);
      std::vector<double> unbiased = want.y;
      for (std::size_t i = 0; i < ny; ++i) unbiased[i] -= b[(i / (std::size_t(s.P()) * s.Q())) % s.K];
      EXPECT_LE(maxRelErr(L.y(y0, true), unbiased), tolerance(s.C * s.R * s.S + 1));
      EXPECT_LE(maxRelErr(L.w(dwAlone, true), plus(want.dw, dw0)), tolerance(s.N * s.P() * s.Q()));
      // Overwriting backward-data: the old contents (NaN here) neither read nor kept.
      std::vector<float> dxOver(nx, NAN);
      cpu::conv2dBackwardData(dxOver.data(), dyl.data(), wl.data(), s, m, cpu::Write::kOverwrite);
      EXPECT_LE(maxRelErr(L.x(dxOver, true), want.dx), tolerance(s.K * s.R * s.S));
    }
    EXPECT_FALSE(cpu::convImplementation(cpu::ConvPass::kBackwardData, s, m).empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, CpuConvolution,
                         testing::Values(MethodCase{ConvAlgorithm::kOneDnn, ConvLayout::kNchw},
                                         MethodCase{ConvAlgorithm::kOneDnn, ConvLayout::kNhwc},
                                         MethodCase{ConvAlgorithm::kIm2col, ConvLayout::kNchw}),
                         caseName);

TEST(CpuConvolutionMethod, DefaultIsOneDnnWhenBuiltWithIt) {
  EXPECT_EQ(cpu::defaultConvAlgorithm(), cpu::haveOneDnn() ? ConvAlgorithm::kOneDnn : ConvAlgorithm::kIm2col);
  EXPECT_EQ(cpu::oneDnnDescription().empty(), !cpu::haveOneDnn());
  EXPECT_EQ(cpu::convImplementation(cpu::ConvPass::kForward, Conv2dShape{1, 1, 4, 4, 1, 3, 3, 1, 1},
                                    ConvMethod{ConvAlgorithm::kIm2col, ConvLayout::kNchw}),
            "gemm");
}

TEST(CpuConvolutionMethod, ImpossibleMethodsAreOneLineErrors) {
  std::vector<float> t(64, 1.0f);
  const Conv2dShape s{1, 1, 4, 4, 1, 3, 3, 1, 1};
  EXPECT_THROW(
      cpu::conv2dForward(t.data(), t.data(), t.data(), nullptr, s, ConvMethod{ConvAlgorithm::kIm2col, ConvLayout::kNhwc}), Error);
  if (!cpu::haveOneDnn()) {
    EXPECT_THROW(
        cpu::conv2dForward(t.data(), t.data(), t.data(), nullptr, s, ConvMethod{ConvAlgorithm::kOneDnn, ConvLayout::kNchw}),
        Error);
    return;
  }
  // A filter larger than the padded input: oneDNN refuses it, and says so as the project's Error.
  const Conv2dShape tooBig{1, 1, 2, 2, 1, 5, 5, 1, 0};
  try {
    cpu::conv2dForward(t.data(), t.data(), t.data(), nullptr, tooBig, ConvMethod{});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("oneDNN convolution forward nchw N=1 C=1 H=2 W=2 K=1 R=5 S=5"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ts
