// The mixture-of-experts layer (workloads/layers/moe.h): its forward against a float64 reference written here (router,
// softmax, top-k, capacity, experts, combine), its backward and the auxiliary loss's gradient against central finite
// differences, and the routing's counts (routed, dropped, imbalance) on hand-built batches and under the router skew
// of the TRAINSCOPE_FAULT=router test hook, each exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "tensor_test_support.h"
#include "workloads/layers/moe.h"
#include "workloads/layers/transformer_block.h"

namespace ts::wl {
namespace {

using test::fillRandom;

struct BuiltMoe {
  Arena arena;
  std::unique_ptr<MixtureOfExperts> moe;
  Tensor x;
  std::vector<Param*> params;
  BuiltMoe(std::int64_t N, std::int64_t C, MoeSettings s, unsigned seed = 3) {
    moe = std::make_unique<MixtureOfExperts>(arena, Init(seed), "h.0.moe", MoeConfig{.rows = N, .channels = C, .settings = s});
    moe->params(params);
    for (Param* p : params) fillRandom(p->value, seed + static_cast<unsigned>(p->name.size()), -0.5f, 0.5f);
    fillRandom(params[0]->value, seed, -2.0f, 2.0f);  // the router: logits O(1), so the choices are well apart
    x = arena.tensor({N, C});
    fillRandom(x, seed + 100);
  }
  Param& param(const std::string& name) {
    for (Param* p : params)
      if (p->name == name) return *p;
    throw std::runtime_error("no parameter " + name);
  }
};

double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

// y[N, C] and the auxiliary loss in float64 from the layer's parameters, by the rules moe.h states.
struct Reference {
  std::vector<double> y;
  double aux = 0;
  std::vector<int> routed;
  std::int64_t dropped = 0;
};
Reference reference(BuiltMoe& b, std::int64_t N, std::int64_t C, const MoeSettings& s) {
  const std::int64_t E = s.experts, k = s.topK, cap = moeCapacity(s, N), H = 4 * C;
  const float* wr = b.param("h.0.moe.router.weight").value.data;
  std::vector<double> probs(N * E);
  for (std::int64_t n = 0; n < N; ++n) {
    double most = -1e300;
    std::vector<double> l(E);
    for (std::int64_t e = 0; e < E; ++e) {
      for (std::int64_t c = 0; c < C; ++c) l[e] += double(b.x.data[n * C + c]) * wr[e * C + c];
      l[e] += s.routerSkew * double(E - 1 - e);
      most = std::max(most, l[e]);
    }
    double sum = 0;
    for (std::int64_t e = 0; e < E; ++e) sum += std::exp(l[e] - most);
    for (std::int64_t e = 0; e < E; ++e) probs[n * E + e] = std::exp(l[e] - most) / sum;
  }
  std::vector<int> expert(N * k);
  std::vector<double> gate(N * k);
  for (std::int64_t n = 0; n < N; ++n) {
    std::vector<int> order(E);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return probs[n * E + a] > probs[n * E + c]; });
    double sum = 0;
    for (std::int64_t j = 0; j < k; ++j) sum += probs[n * E + order[j]];
    for (std::int64_t j = 0; j < k; ++j) {
      expert[n * k + j] = order[j];
      gate[n * k + j] = k == 1 ? probs[n * E + order[j]] : probs[n * E + order[j]] / sum;
    }
  }
  Reference r;
  r.routed.assign(E, 0);
  std::vector<bool> kept(N * k);
  for (std::int64_t j = 0; j < k; ++j)
    for (std::int64_t n = 0; n < N; ++n) {
      const int e = expert[n * k + j];
      kept[n * k + j] = r.routed[e]++ < cap;
      r.dropped += kept[n * k + j] ? 0 : 1;
    }
  r.y.assign(N * C, 0);
  for (std::int64_t a = 0; a < N * k; ++a) {
    if (!kept[a]) continue;
    const std::string e = "h.0.moe.experts." + std::to_string(expert[a]);
    const float *w1 = b.param(e + ".fc.weight").value.data, *b1 = b.param(e + ".fc.bias").value.data;
    const float *w2 = b.param(e + ".proj.weight").value.data, *b2 = b.param(e + ".proj.bias").value.data;
    const float* x = b.x.data + (a / k) * C;
    std::vector<double> h(H);
    for (std::int64_t i = 0; i < H; ++i) {
      double v = b1[i];
      for (std::int64_t c = 0; c < C; ++c) v += double(w1[i * C + c]) * x[c];
      h[i] = gelu(v);
    }
    for (std::int64_t c = 0; c < C; ++c) {
      double v = b2[c];
      for (std::int64_t i = 0; i < H; ++i) v += double(w2[c * H + i]) * h[i];
      r.y[(a / k) * C + c] += gate[a] * v;
    }
  }
  for (std::int64_t e = 0; e < E; ++e) {
    double p = 0;
    for (std::int64_t n = 0; n < N; ++n) p += probs[n * E + e];
    r.aux += (double(r.routed[e]) / double(N * k)) * (p / double(N));
  }
  r.aux *= s.auxCoef * double(E);
  return r;
}

void expectForwardMatches(std::int64_t N, std::int64_t C, const MoeSettings& s) {
  BuiltMoe b(N, C, s);
  StepContext ctx;
  const Tensor& y = b.moe->forward(b.x, ctx);
  const Reference r = reference(b, N, C, s);
  for (std::size_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y.data[i], r.y[i], 1e-5 * std::max(1.0, std::fabs(r.y[i]))) << i;
  EXPECT_NEAR(b.moe->lastAux(), r.aux, 1e-6 * std::max(1.0, r.aux));
  EXPECT_EQ(b.moe->lastRouted(), r.routed);
  EXPECT_EQ(b.moe->stats().dropped, r.dropped);
}

TEST(Moe, ForwardMatchesAFloat64ReferenceTop1) {
  expectForwardMatches(12, 8, {.experts = 4, .topK = 1, .capacityFactor = 0, .auxCoef = 0.01});
}
TEST(Moe, ForwardMatchesAFloat64ReferenceTop2) {
  expectForwardMatches(12, 8, {.experts = 4, .topK = 2, .capacityFactor = 0, .auxCoef = 0.01});
}
TEST(Moe, ForwardMatchesAFloat64ReferenceWithDrops) {
  expectForwardMatches(16, 8, {.experts = 4, .topK = 2, .capacityFactor = 0.5, .auxCoef = 0.1});
}

// L = sum(r y) + aux: the backward's input and parameter gradients (the aux loss's through the router included) against
// central differences, at probes where the step leaves the routing as it was (the choice is not differentiated).
void expectGradientsMatch(const MoeSettings& s) {
  const std::int64_t N = 10, C = 6;
  BuiltMoe b(N, C, s);
  std::vector<float> r(N * C);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : r) v = u(g);
  const auto objective = [&](std::vector<int>* slots) {
    StepContext ctx;
    ctx.training = false;
    const Tensor& y = b.moe->forward(b.x, ctx);
    double sum = b.moe->lastAux();
    for (std::size_t i = 0; i < y.numel(); ++i) sum += double(r[i]) * y.data[i];
    if (slots) *slots = b.moe->lastSlots();
    return sum;
  };
  std::vector<int> routing;
  objective(&routing);
  for (Param* p : b.params) zero(p->grad);
  StepContext ctx;
  ctx.training = false;
  const Tensor& dx = b.moe->backward(Tensor{r.data(), {N, C}}, ctx);
  const std::vector<float> dxCopy(dx.data, dx.data + dx.numel());
  const double h = 1e-3;
  int checked = 0;
  const auto probe = [&](float* v, float analytic, const std::string& what) {
    const float keep = *v;
    std::vector<int> up, down;
    *v = keep + float(h);
    const double fUp = objective(&up);
    *v = keep - float(h);
    const double fDown = objective(&down);
    *v = keep;
    if (up != routing || down != routing) return;  // the step crossed a routing decision
    ++checked;
    EXPECT_NEAR((fUp - fDown) / (2 * h), analytic, 2e-2 * std::max(1.0, std::fabs(double(analytic)))) << what;
  };
  for (std::size_t i = 0; i < b.x.numel(); i += 3) probe(b.x.data + i, dxCopy[i], "dx " + std::to_string(i));
  for (Param* p : b.params)
    for (std::size_t i = 0; i < p->value.numel(); i += 7) probe(p->value.data + i, p->grad.data[i], p->name);
  EXPECT_GT(checked, 100);
}

TEST(Moe, BackwardMatchesFiniteDifferencesTop1) {
  expectGradientsMatch({.experts = 3, .topK = 1, .capacityFactor = 0, .auxCoef = 0.5});
}
TEST(Moe, BackwardMatchesFiniteDifferencesTop2WithDrops) {
  expectGradientsMatch({.experts = 4, .topK = 2, .capacityFactor = 0.6, .auxCoef = 0.5});
}

// The aux loss's own gradient: with the experts' output not read (r = 0), d aux / d router weight alone.
TEST(Moe, AuxLossGradientIsTheRoutersOnly) {
  const std::int64_t N = 8, C = 4;
  BuiltMoe b(N, C, {.experts = 4, .topK = 1, .capacityFactor = 0, .auxCoef = 1});
  StepContext ctx;
  b.moe->forward(b.x, ctx);
  for (Param* p : b.params) zero(p->grad);
  std::vector<float> zeros(N * C, 0.0f);
  ctx.lossScale = 2;  // the aux loss's gradient is scaled as the model's loss
  b.moe->backward(Tensor{zeros.data(), {N, C}}, ctx);
  const std::vector<float> analytic = b.param("h.0.moe.router.weight").grad.toHost();
  for (Param* p : b.params) {
    if (p->name == "h.0.moe.router.weight") continue;
    for (float v : p->grad.toHost()) EXPECT_EQ(v, 0.0f) << p->name;
  }
  float* w = b.param("h.0.moe.router.weight").value.data;
  const double h = 1e-3;
  for (std::size_t i = 0; i < analytic.size(); ++i) {
    const float keep = w[i];
    w[i] = keep + float(h);
    b.moe->forward(b.x, ctx);
    const double up = b.moe->lastAux();
    w[i] = keep - float(h);
    b.moe->forward(b.x, ctx);
    const double down = b.moe->lastAux();
    w[i] = keep;
    EXPECT_NEAR(2 * (up - down) / (2 * h), analytic[i], 1e-3 * std::max(1.0, std::fabs(double(analytic[i])))) << i;
  }
}

// A hand-built batch: router row e picks feature e, token n's only large feature sends it to one expert. 6 tokens to
// expert 0 and 2 to expert 1 at top-1, capacity ceil(1.0 * 8 * 1 / 4) = 2: expert 0 keeps its first two tokens (in
// token order), 4 assignments are dropped and add nothing.
TEST(Moe, CapacityDropsAreCountedExactlyFirstComeFirstServed) {
  const std::int64_t N = 8, C = 4;
  const MoeSettings s{.experts = 4, .topK = 1, .capacityFactor = 1.0, .auxCoef = 0};
  BuiltMoe b(N, C, s);
  std::vector<float> w(4 * C, 0.0f);
  for (int e = 0; e < 4; ++e) w[e * C + e] = 10;
  b.param("h.0.moe.router.weight").value.fromHost(w);
  const int to[N] = {0, 1, 0, 0, 0, 1, 0, 0};
  std::vector<float> x(N * C, 0.0f);
  for (int n = 0; n < N; ++n) x[n * C + to[n]] = 1;
  b.x.fromHost(x);
  StepContext ctx;
  const std::vector<float> y = b.moe->forward(b.x, ctx).toHost();
  EXPECT_EQ(b.moe->capacity(), 2);
  EXPECT_EQ(b.moe->lastRouted(), (std::vector<int>{6, 2, 0, 0}));
  EXPECT_EQ(b.moe->lastSlots(), (std::vector<int>{0, 2, 1, -1, -1, 3, -1, -1}));
  EXPECT_EQ(b.moe->stats().dropped, 4);
  EXPECT_DOUBLE_EQ(b.moe->stats().imbalance(), 3.0);  // max 6 over the mean 8 / 4
  for (int n : {3, 4, 6, 7})
    for (int c = 0; c < C; ++c) EXPECT_EQ(y[n * C + c], 0.0f) << "dropped token " << n;
}

// Top-2: every second choice comes after every first choice (GShard's priority), so a token's second choice is dropped
// before any later token's first choice is.
TEST(Moe, SecondChoicesYieldToFirstChoices) {
  const std::int64_t N = 4, C = 4;
  const MoeSettings s{.experts = 4, .topK = 2, .capacityFactor = 1.0, .auxCoef = 0};  // capacity ceil(4 * 2 / 4) = 2
  BuiltMoe b(N, C, s);
  std::vector<float> w(4 * C, 0.0f);
  for (int e = 0; e < 4; ++e) w[e * C + e] = 10;
  b.param("h.0.moe.router.weight").value.fromHost(w);
  // Tokens 0, 1: expert 1 first, expert 0 second; tokens 2, 3: expert 0 first, expert 2 second.
  const std::vector<float> x = {0.5f, 1, 0, 0, 0.5f, 1, 0, 0, 1, 0, 0.5f, 0, 1, 0, 0.5f, 0};
  b.x.fromHost(x);
  StepContext ctx;
  b.moe->forward(b.x, ctx);
  EXPECT_EQ(b.moe->lastRouted(), (std::vector<int>{4, 2, 2, 0}));
  // First choices: tokens 0, 1 -> expert 1 rows 2, 3; tokens 2, 3 -> expert 0 rows 0, 1. Second choices: tokens 0, 1
  // find expert 0 full (dropped); tokens 2, 3 -> expert 2 rows 4, 5.
  EXPECT_EQ(b.moe->lastSlots(), (std::vector<int>{2, -1, 3, -1, 0, 4, 1, 5}));
  EXPECT_EQ(b.moe->stats().dropped, 2);
}

// The test hook (TRAINSCOPE_FAULT=router): a large skew ranks the experts 0, 1, ... for every token, so top-2 of 4
// routes all N tokens to experts 0 and 1: imbalance E / k = 2, and with capacity ceil(1.0 N 2 / 4) = N / 2 each keeps
// N / 2, dropping 2 (N - N / 2) per forward.
TEST(Moe, ASkewedRouterReportsItsImbalanceAndDropsExactly) {
  const std::int64_t N = 16, C = 4;
  const MoeSettings s{.experts = 4, .topK = 2, .capacityFactor = 1.0, .auxCoef = 0.01, .routerSkew = 100};
  BuiltMoe b(N, C, s);
  StepContext ctx;
  for (int i = 0; i < 3; ++i) b.moe->forward(b.x, ctx);
  ctx.training = false;  // a recomputation or an evaluation: not counted
  b.moe->forward(b.x, ctx);
  const MoeStats& st = b.moe->stats();
  EXPECT_EQ(st.forwards, 3);
  EXPECT_EQ(st.routed, (std::vector<std::int64_t>{48, 48, 0, 0}));
  EXPECT_EQ(st.assignments, 96);
  EXPECT_EQ(st.dropped, 3 * 2 * (N - N / 2));
  EXPECT_DOUBLE_EQ(st.imbalance(), 2.0);
  EXPECT_DOUBLE_EQ(st.worstImbalance, 2.0);
  // f = (1/2, 1/2, 0, 0), P ~ (1, 0, 0, 0): aux ~ 0.01 * 4 * 1/2.
  EXPECT_NEAR(st.meanAux(), 0.02, 1e-6);
}

// The model's FLOPs count the router and k experts per token (Megatron's MoE convention), not the capacity buffers.
TEST(Moe, ForwardFlopsAreTheRouterAndKExpertsPerToken) {
  const std::int64_t N = 12, C = 8, E = 4;
  for (std::int64_t k : {1, 2}) {
    Arena a;
    MixtureOfExperts moe(a, Init(1), "m", {.rows = N, .channels = C, .settings = {.experts = E, .topK = k, .capacityFactor = 0}});
    EXPECT_DOUBLE_EQ(moe.forwardFlops(), 2.0 * N * C * E + double(k * N) * 2 * (2.0 * C * 4 * C));
  }
}

// A block with experts names its parameters h.<l>.moe.router.weight and h.<l>.moe.experts.<e>.{fc,proj}.{weight,bias}
// (PyTorch's ModuleList style), in place of h.<l>.mlp.*.
TEST(Moe, ABlockWithExpertsNamesThemPyTorchStyle) {
  Arena a;
  TransformerBlock block(a, Init(1), "h.0", {.batch = 1, .seq = 4, .channels = 8, .heads = 2, .moe = {.experts = 2, .topK = 1}});
  std::vector<Param*> ps;
  block.params(ps);
  std::vector<std::string> names;
  for (Param* p : ps) names.push_back(p->name);
  for (const char* n : {"h.0.moe.router.weight", "h.0.moe.experts.0.fc.weight", "h.0.moe.experts.1.proj.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& n : names) EXPECT_EQ(n.find(".mlp."), std::string::npos) << n;
}

}  // namespace
}  // namespace ts::wl
