// Every layer's backward against central finite differences of its forward. The layers compute in float32,
// so the objective L = sum(r * forward(x)) (r fixed random) is accumulated in float64 and the step h is
// chosen where float32 rounding (~1e-7 |L| / h) and the O(h^2) truncation are both far below the
// tolerance: |numeric - analytic| <= 2e-2 * max(1, |analytic|) on a sample of input and parameter
// elements (an indexing or transposition error shows up as an O(1) difference). The CPU ops underneath are
// checked in float64 by test_cpu_ops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "base/error.h"
#include "kernels/cpu/convolution.h"
#include "tensor_test_support.h"
#include "workloads/layers/activation.h"
#include "workloads/layers/attention.h"
#include "workloads/layers/convolution.h"
#include "workloads/layers/cross_entropy.h"
#include "workloads/layers/linear.h"
#include "workloads/layers/normalization.h"
#include "workloads/layers/transformer_block.h"

namespace ts::wl {
namespace {

using test::fillRandom;

double objective(Layer& layer, const Tensor& x, const std::vector<float>& r) {
  StepContext ctx;
  ctx.training = false;  // BatchNorm: no running-statistics update while probing
  const Tensor& y = layer.forward(x, ctx);
  double s = 0;
  for (std::size_t i = 0; i < y.numel(); ++i) s += double(r[i]) * y.data[i];
  return s;
}

// Indices to probe: all of a small tensor, else a spread-out sample of `count`.
std::vector<std::size_t> probes(std::size_t n, std::size_t count = 24) {
  std::vector<std::size_t> out;
  if (n <= count) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
  } else {
    for (std::size_t i = 0; i < count; ++i) out.push_back((i * 2654435761u) % n);
  }
  return out;
}

void checkNumbers(const char* what, std::size_t i, double numeric, double analytic) {
  EXPECT_NEAR(numeric, analytic, 2e-2 * std::max(1.0, std::fabs(analytic))) << what << " element " << i;
}

// Checks dL/dx and dL/dθ of `layer` at x, for outputs of `outputs` elements.
void checkLayer(Layer& layer, const Tensor& x, double h = 1e-2) {
  StepContext ctx;
  ctx.training = false;
  const Tensor& y = layer.forward(x, ctx);
  std::vector<float> r(y.numel());
  std::mt19937 g(99);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : r) v = u(g);
  std::vector<Param*> params;
  layer.params(params);
  for (Param* p : params) zero(p->grad);
  Tensor dy{r.data(), y.shape};
  const Tensor& dx = layer.backward(dy, ctx);
  const std::vector<float> dxCopy(dx.data, dx.data + dx.numel());
  for (std::size_t i : probes(x.numel())) {
    const float keep = x.data[i];
    x.data[i] = keep + float(h);
    const double up = objective(layer, x, r);
    x.data[i] = keep - float(h);
    const double down = objective(layer, x, r);
    x.data[i] = keep;
    checkNumbers("dx", i, (up - down) / (2 * h), dxCopy[i]);
  }
  for (Param* p : params)
    for (std::size_t i : probes(p->value.numel())) {
      const float keep = p->value.data[i];
      p->value.data[i] = keep + float(h);
      const double up = objective(layer, x, r);
      p->value.data[i] = keep - float(h);
      const double down = objective(layer, x, r);
      p->value.data[i] = keep;
      SCOPED_TRACE(p->name);
      checkNumbers("dparam", i, (up - down) / (2 * h), p->grad.data[i]);
    }
}

TEST(Layers, LinearBackwardMatchesFiniteDifferences) {
  Arena a;
  Linear l(a, Init(1), "fc", {.rows = 5, .in = 7, .out = 3});
  Tensor x = a.tensor({5, 7});
  fillRandom(x, 1);
  checkLayer(l, x);
}

TEST(Layers, ActivationsBackwardMatchFiniteDifferences) {
  for (auto kind : {ActivationKind::kGelu, ActivationKind::kRelu}) {
    Arena a;
    Activation l(a, kind, {4, 9});
    Tensor x = a.tensor({4, 9});
    fillRandom(x, 2);
    for (std::size_t i = 0; i < x.numel(); ++i)
      if (std::fabs(x.data[i]) < 0.05f) x.data[i] = 0.3f;  // away from ReLU's kink
    checkLayer(l, x, 1e-2);
  }
}

TEST(Layers, LayerNormBackwardMatchesFiniteDifferences) {
  Arena a;
  LayerNorm l(a, "ln", 3, 11);
  Tensor x = a.tensor({3, 11});
  fillRandom(x, 3, -2, 2);
  std::vector<Param*> ps;
  l.params(ps);
  for (Param* p : ps) fillRandom(p->value, 4);
  checkLayer(l, x, 1e-2);
}

// The CNN's layers in both layouts (channels-last: the CPU's with oneDNN; NHWC convolution needs it).
class ImageLayers : public testing::TestWithParam<ConvLayout> {
 protected:
  void SetUp() override {
    if (GetParam() == ConvLayout::kNhwc && !cpu::haveOneDnn()) GTEST_SKIP() << "channels-last convolution needs oneDNN";
  }
  ConvLayout layout() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(Layouts, ImageLayers, testing::Values(ConvLayout::kNchw, ConvLayout::kNhwc),
                         [](const testing::TestParamInfo<ConvLayout>& i) { return std::string(nameOf(i.param)); });

TEST_P(ImageLayers, BatchNormBackwardMatchesFiniteDifferences) {
  Arena a;
  BatchNorm2d l(a, "bn", 3, 2, 3, 3, layout());
  Tensor x = a.tensor(imageShape(3, 2, 3, 3, layout()));
  fillRandom(x, 5, -2, 2);
  std::vector<Param*> ps;
  l.params(ps);
  for (Param* p : ps) fillRandom(p->value, 6);
  checkLayer(l, x, 1e-2);
}

TEST_P(ImageLayers, ConvAndPoolingBackwardMatchFiniteDifferences) {
  Arena a;
  Conv2d conv(a, Init(2), "conv", cpu::Conv2dShape{2, 3, 7, 6, 4, 3, 3, 2, 1}, layout());
  Tensor x = a.tensor(imageShape(2, 3, 7, 6, layout()));
  fillRandom(x, 7);
  checkLayer(conv, x);
  GlobalAvgPool gap(a, 2, 3, 7, 6, layout());
  checkLayer(gap, x);
  MaxPool2d mp(a, {.n = 2, .c = 3, .h = 7, .w = 6, .k = 3, .stride = 2, .pad = 1, .layout = layout()});
  // Distinct values far apart, so a step of h never changes which element wins a window.
  for (std::size_t i = 0; i < x.numel(); ++i) x.data[i] = float((i * 37) % x.numel()) * 0.1f;
  checkLayer(mp, x, 1e-3);
}

TEST_P(ImageLayers, ResidualBasicBlockBackwardMatchesFiniteDifferences) {
  for (auto [cin, cout, stride] : {std::tuple{3, 3, 1}, std::tuple{2, 4, 2}}) {  // identity and projection shortcuts
    Arena a;
    BasicBlock block(a, Init(3), "block",
                     {.n = 2, .cin = cin, .h = 6, .w = 5, .cout = cout, .stride = stride, .layout = layout()});
    Tensor x = a.tensor(imageShape(2, cin, 6, 5, layout()));
    fillRandom(x, 8);
    checkLayer(block, x, 2e-4);
  }
}

// What a plan of the step counts for SyncBatchNorm (Layer::groupSums) is what the block asks for when it runs, in
// order: each batch norm's two forward sums and its backward one, the projection shortcut's included.
TEST_P(ImageLayers, BasicBlockAsksForTheBatchNormSumsItsGroupSumsList) {
  Arena a;
  BasicBlock block(a, Init(3), "block", {.n = 2, .cin = 2, .h = 6, .w = 5, .cout = 4, .stride = 2, .layout = layout()});
  Tensor x = a.tensor(imageShape(2, 2, 6, 5, layout()));
  fillRandom(x, 8);
  std::vector<std::size_t> asked;
  StepContext ctx;
  ctx.bnSum = [&](double*, std::size_t n) { asked.push_back(n); };  // one replica: the sum is the values
  const Tensor& y = block.forward(x, ctx);
  const std::size_t forwardAsks = asked.size();
  Tensor dy = a.tensor(y.shape);
  fillRandom(dy, 9);
  block.backward(dy, ctx);
  LayerSums listed;
  block.groupSums(listed);
  auto batchNorm = [](const std::vector<GroupSum>& sums) {
    std::vector<std::size_t> out;
    for (const GroupSum& s : sums)
      if (s.group == SumGroup::kBatchNorm) out.push_back(s.values);
    return out;
  };
  EXPECT_EQ(std::vector<std::size_t>(asked.begin(), asked.begin() + forwardAsks), batchNorm(listed.forward));
  EXPECT_EQ(std::vector<std::size_t>(asked.begin() + forwardAsks, asked.end()), batchNorm(listed.backward));
  EXPECT_EQ(forwardAsks, 6u);  // three batch norms (bn1, bn2, the shortcut's), two sums each
}

// The same convolution on NCHW and on channels-last data gives the same outputs (in the other order) from the
// same KCRS weights, and the transpose in front of a channels-last network passes its gradient back.
TEST(Layers, ChannelsLastConvolutionIsTheNchwOneTransposed) {
  if (!cpu::haveOneDnn()) GTEST_SKIP() << "channels-last convolution needs oneDNN";
  Arena a;
  const cpu::Conv2dShape s{2, 3, 7, 6, 4, 3, 3, 2, 1};
  Conv2d nchw(a, Init(2), "conv", s, ConvLayout::kNchw), nhwc(a, Init(2), "conv", s, ConvLayout::kNhwc);
  ChannelsLast transpose(a, 2, 3, 7, 6);
  Tensor x = a.tensor({2, 3, 7, 6});
  fillRandom(x, 7);
  StepContext ctx;
  const Tensor& y = nchw.forward(x, ctx);
  const Tensor& yLast = nhwc.forward(transpose.forward(x, ctx), ctx);
  const std::size_t PQ = std::size_t(s.P()) * s.Q();
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k)
      for (std::size_t i = 0; i < PQ; ++i) {
        const float want = y.data[(n * s.K + k) * PQ + i], got = yLast.data[(n * PQ + i) * s.K + k];
        ASSERT_NEAR(got, want, 1e-5 * std::max(1.0f, std::fabs(want))) << n << " " << k << " " << i;
      }
  checkLayer(transpose, x);
}

TEST(Layers, CausalSelfAttentionBackwardMatchesFiniteDifferences) {
  Arena a;
  CausalSelfAttention attn(a, Init(4), "attn", {.batch = 2, .seq = 5, .channels = 8, .heads = 2, .initStd = 0.3, .projStd = 0.3});
  Tensor x = a.tensor({10, 8});
  fillRandom(x, 9);
  checkLayer(attn, x);
}

TEST(Layers, TransformerBlockBackwardMatchesFiniteDifferences) {
  Arena a;
  TransformerBlock block(a, Init(5), "h.0", {.batch = 2, .seq = 4, .channels = 8, .heads = 2, .layers = 1});
  Tensor x = a.tensor({8, 8});
  fillRandom(x, 10);
  checkLayer(block, x);
}

TEST(Layers, CausalAttentionIgnoresTheFuture) {
  // Changing the last position's input must leave every earlier position's output unchanged.
  Arena a;
  CausalSelfAttention attn(a, Init(6), "attn", {.batch = 1, .seq = 6, .channels = 8, .heads = 2, .initStd = 0.3, .projStd = 0.3});
  Tensor x = a.tensor({6, 8});
  fillRandom(x, 11);
  StepContext ctx;
  const std::vector<float> before(attn.forward(x, ctx).data, attn.forward(x, ctx).data + 48);
  for (int c = 0; c < 8; ++c) x.data[5 * 8 + c] += 1.0f;
  const Tensor& after = attn.forward(x, ctx);
  for (int i = 0; i < 5 * 8; ++i) EXPECT_EQ(after.data[i], before[i]) << i;
  bool lastChanged = false;
  for (int i = 40; i < 48; ++i) lastChanged |= after.data[i] != before[i];
  EXPECT_TRUE(lastChanged);
}

TEST(Layers, CrossEntropyGradientMatchesFiniteDifferences) {
  Arena a;
  CrossEntropy ce(a, 4, 5);
  Tensor logits = a.tensor({4, 5});
  fillRandom(logits, 12, -3, 3);
  const std::int32_t targets[4] = {0, 4, 2, 2};
  ce.forward(logits, targets);
  const Tensor& d = ce.backward(1.0f);
  const std::vector<float> grad(d.data, d.data + 20);
  const double h = 1e-2;
  for (std::size_t i = 0; i < 20; ++i) {
    const float keep = logits.data[i];
    logits.data[i] = keep + float(h);
    const double up = ce.forward(logits, targets);
    logits.data[i] = keep - float(h);
    const double down = ce.forward(logits, targets);
    logits.data[i] = keep;
    EXPECT_NEAR((up - down) / (2 * h), grad[i], 1e-3) << i;
  }
  const std::int32_t bad[4] = {0, 5, 1, 1};
  EXPECT_THROW(ce.forward(logits, bad), UsageError);
}

}  // namespace
}  // namespace ts::wl
