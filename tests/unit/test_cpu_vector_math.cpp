// The vectorised float math of the CPU kernels (kernels/cpu/vector_math.h) against float64, and the kernels that
// run on the compute threads giving the same bits at any thread count (issue #20: the CPU backend at its peers'
// speed must not buy it with answers that depend on the machine or the thread count).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/threads.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/specs/kernel_op.h"  // randomInputs

namespace ts {
namespace {

double ulpsApart(float got, double want) {
  const auto w = static_cast<float>(want);
  const double ulp = std::nextafter(w, std::numeric_limits<float>::infinity()) - w;
  return std::fabs(got - want) / ulp;
}

TEST(VectorMath, ExpIsWithinTwoUlpsOverTheNormalRangeAndKeepsItsEdges) {
  double worst = 0;
  float at = 0;
  for (float x = -87.3f; x < 88.7f; x += 0.00137f * std::max(1.0f, std::fabs(x))) {
    const double e = ulpsApart(cpu::vmath::exp(x), std::exp(static_cast<double>(x)));
    if (e > worst) {
      worst = e;
      at = x;
    }
  }
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  EXPECT_EQ(cpu::vmath::exp(0.0f), 1.0f);
  EXPECT_EQ(cpu::vmath::exp(-std::numeric_limits<float>::infinity()), 0.0f) << "a masked score";
  EXPECT_EQ(cpu::vmath::exp(-100.0f), 0.0f);
  EXPECT_EQ(cpu::vmath::exp(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::vmath::exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::vmath::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_GT(cpu::vmath::exp(88.72f), 3.3e38f) << "the largest arguments reach the largest floats";
}

// GELU against its definition 0.5 x (1 + tanh(u)) in float64, where that is accurate (|x| <= 8: further out,
// 1 + tanh(u) cancels in float64 too), and against x sigmoid(2u) in float64 everywhere.
TEST(VectorMath, GeluAndItsGradientMatchTheDefinition) {
  const double k = std::sqrt(2.0 / M_PI);
  for (float x = -30.0f; x <= 30.0f; x += 0.0173f) {
    const double xd = x, u = k * (xd + 0.044715 * xd * xd * xd);
    const double viaSigmoid = xd / (1.0 + std::exp(-2.0 * u));
    const double tolerance = 2e-6 * std::max(1.0, std::fabs(2.0 * u));  // u is rounded to float first
    ASSERT_NEAR(cpu::vmath::gelu(x), viaSigmoid, tolerance * std::max(std::fabs(viaSigmoid), 1e-30)) << x;
    if (std::fabs(x) <= 8.0f) {
      ASSERT_NEAR(cpu::vmath::gelu(x), 0.5 * xd * (1.0 + std::tanh(u)), 1e-6 * std::max(1.0, std::fabs(xd))) << x;
      const double t = std::tanh(u);
      const double grad = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * k * (1 + 3 * 0.044715 * xd * xd);
      ASSERT_NEAR(cpu::vmath::geluGrad(x), grad, 4e-6 * std::max(1.0, std::fabs(grad))) << x;
    }
  }
  // The edges, where x^3 and e^-2u leave the floats: gelu tends to 0 below and to x above.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::vmath::gelu(-1e38f), 0.0f) << "not x / e^88";
  EXPECT_EQ(cpu::vmath::gelu(-1e20f), 0.0f);
  EXPECT_EQ(cpu::vmath::gelu(1e38f), 1e38f);
  EXPECT_EQ(cpu::vmath::gelu(inf), inf);
  EXPECT_TRUE(std::isnan(cpu::vmath::gelu(-inf))) << "as 0.5 x (1 + tanh(u)) = -inf * 0";
  EXPECT_TRUE(std::isnan(cpu::vmath::gelu(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(cpu::vmath::geluGrad(-1e3f), 0.0f);
  EXPECT_EQ(cpu::vmath::geluGrad(1e3f), 1.0f);
}

TEST(VectorMath, BlockedSumAddsEveryTermInAFixedOrder) {
  for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 1000u}) {
    const std::vector<float> x = randomInputs(n, 7);
    double exact = 0;
    for (float v : x) exact += v;
    const double s = cpu::vmath::blockedSum(n, [&](std::size_t i) { return double(x[i]); });
    EXPECT_NEAR(s, exact, 1e-12 * std::max(1.0, std::fabs(exact))) << n;
    EXPECT_EQ(s, cpu::vmath::blockedSum(n, [&](std::size_t i) { return double(x[i]); }));
  }
}

// Every kernel that splits its work over the compute threads, at 1 and at 3 threads: the same bits.
TEST(ComputeThreads, KernelsGiveTheSameBitsAtAnyThreadCount) {
  const std::size_t rows = 97, cols = 1031, n = rows * cols;  // above every kernel's grain
  const std::vector<float> x = randomInputs(n, 11), y = randomInputs(n, 12), w = randomInputs(cols, 13),
                           b = randomInputs(cols, 14);
  std::vector<int> targets(rows);
  for (std::size_t i = 0; i < rows; ++i) targets[i] = static_cast<int>((i * 37) % cols);
  auto runAll = [&] {
    std::vector<std::vector<float>> out;
    std::vector<float> o(n), o2(n), mean(rows), rstd(rows), losses(rows);
    cpu::geluForward(o.data(), x.data(), n);
    out.push_back(o);
    o2 = y;
    cpu::geluBackward(o2.data(), x.data(), y.data(), n);
    out.push_back(o2);
    cpu::softmaxForward(o.data(), x.data(), rows, cols, 0);
    out.push_back(o);
    o2 = y;
    cpu::softmaxBackward(o2.data(), y.data(), o.data(), rows, cols);
    out.push_back(o2);
    cpu::layernormForward(o.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, cols, 1e-5f);
    out.push_back(o);
    cpu::crossEntropyForwardBackward(losses.data(), o.data(), x.data(), targets.data(), rows, cols, 0.5f);
    out.push_back(o);
    out.push_back(losses);
    std::vector<float> rm(rows, 0.0f), rv(rows, 1.0f), bm(rows), br(rows);
    cpu::batchnormForward(o.data(), bm.data(), br.data(), x.data(), w.data(), b.data(), 1, rows, cols, 1e-5f, rm.data(),
                          rv.data(), 0.1f);
    out.push_back(o);
    std::vector<float> p = x, m(n, 0.1f), v(n, 0.2f);
    cpu::adamwUpdate(p.data(), y.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3);
    out.push_back(p);
    cpu::adamUpdate(p.data(), y.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 4);
    out.push_back(p);
    cpu::rmspropUpdate(p.data(), y.data(), v.data(), n, 1e-3f, 0.99f, 1e-8f, 0.01f);
    out.push_back(p);
    cpu::sgdMomentumUpdate(p.data(), y.data(), m.data(), n, 1e-2f, 0.9f, 0.01f);
    out.push_back(p);
    // A batch of 7 GEMMs (6 whole to 3 threads, then 1 on all of them) and attention's 7 heads (issue #40).
    std::vector<float> c(7 * 64 * 64);
    cpu::gemmStridedBatched(false, true, 64, 64, 64, 1.0f, x.data(), 64, 64 * 64, y.data(), 64, 64 * 64, 0.0f, c.data(), 64,
                            64 * 64, 7);
    out.push_back(c);
    cpu::attentionForward(c.data(), x.data(), y.data(), x.data() + c.size(), 1, 7, 64, 64);
    out.push_back(c);
    return out;
  };
  const int before = cpu::computeThreads();
  cpu::setComputeThreads(1);
  const auto one = runAll();
  cpu::setComputeThreads(3);
  const auto three = runAll();
  cpu::setComputeThreads(before);
  ASSERT_EQ(one.size(), three.size());
  for (std::size_t k = 0; k < one.size(); ++k) EXPECT_EQ(one[k], three[k]) << "kernel output " << k;
}

// The multi-tensor step against one call per tensor, for every element-wise optimizer: the same bits, at 1 and
// at 3 threads, with tensors of awkward sizes (one of them empty, one larger than a thread's share) and
// their own weight decays.
TEST(ComputeThreads, MultiTensorStepsGiveTheBitsOfOneCallPerTensor) {
  const std::vector<std::size_t> sizes = {7, 0, 70001, 1, 1031};
  for (auto kind : {cpu::ElementwiseUpdate::kSgd, cpu::ElementwiseUpdate::kAdam, cpu::ElementwiseUpdate::kAdamW,
                    cpu::ElementwiseUpdate::kRmsprop}) {
    const cpu::UpdateRule rule{kind, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.9f, 0.99f, 3};
    std::vector<std::vector<float>> p, g, a, b, p1, a1, b1;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const unsigned seed = 40 + 4 * unsigned(i);
      p.push_back(randomInputs(sizes[i], seed));
      g.push_back(randomInputs(sizes[i], seed + 1));
      a.push_back(randomInputs(sizes[i], seed + 2, 0, 1));
      b.push_back(randomInputs(sizes[i], seed + 3, 0, 1));
    }
    p1 = p, a1 = a, b1 = b;
    for (std::size_t i = 0; i < sizes.size(); ++i) {  // one call per tensor
      const float wd = 0.01f * float(i % 2);
      float *pi = p1[i].data(), *ai = a1[i].data(), *bi = b1[i].data();
      const float* gi = g[i].data();
      const std::size_t n = sizes[i];
      if (kind == cpu::ElementwiseUpdate::kSgd) cpu::sgdMomentumUpdate(pi, gi, ai, n, rule.lr, rule.momentum, wd);
      if (kind == cpu::ElementwiseUpdate::kAdam) cpu::adamUpdate(pi, gi, ai, bi, n, rule.lr, 0.9f, 0.999f, 1e-8f, wd, 3);
      if (kind == cpu::ElementwiseUpdate::kAdamW) cpu::adamwUpdate(pi, gi, ai, bi, n, rule.lr, 0.9f, 0.999f, 1e-8f, wd, 3);
      if (kind == cpu::ElementwiseUpdate::kRmsprop) cpu::rmspropUpdate(pi, gi, ai, n, rule.lr, rule.alpha, 1e-8f, wd);
    }
    const int before = cpu::computeThreads();
    for (int threads : {1, 3}) {
      cpu::setComputeThreads(threads);
      auto pm = p, am = a, bm = b;
      std::vector<cpu::UpdateTensor> many;
      for (std::size_t i = 0; i < sizes.size(); ++i)
        many.push_back({pm[i].data(), g[i].data(), am[i].data(), bm[i].data(), sizes[i], 0.01f * float(i % 2)});
      cpu::updateMany(rule, many.data(), many.size());
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(pm[i], p1[i]) << int(kind) << " tensor " << i << " at " << threads << " threads";
        EXPECT_EQ(am[i], a1[i]) << int(kind) << " tensor " << i;
        if (kind == cpu::ElementwiseUpdate::kAdam || kind == cpu::ElementwiseUpdate::kAdamW) {
          EXPECT_EQ(bm[i], b1[i]);
        }
      }
    }
    cpu::setComputeThreads(before);
  }
}

// Adam and RMSprop in float against their definitions in float64.
TEST(CpuOps, AdamAndRmspropMatchTheirDefinitions) {
  const std::size_t n = 9;
  const auto g = randomInputs(n, 31);
  auto p = randomInputs(n, 32), m = randomInputs(n, 33, 0, 1), v = randomInputs(n, 34, 0, 1);
  std::vector<double> pd(p.begin(), p.end()), md(m.begin(), m.end()), vd(v.begin(), v.end());
  cpu::adamUpdate(p.data(), g.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 3);
  for (std::size_t i = 0; i < n; ++i) {
    const double gi = g[i] + 0.1 * pd[i];
    md[i] = 0.9 * md[i] + 0.1 * gi;
    vd[i] = 0.999 * vd[i] + 0.001 * gi * gi;
    pd[i] -= 1e-2 * (md[i] / (1 - std::pow(0.9, 3))) / (std::sqrt(vd[i] / (1 - std::pow(0.999, 3))) + 1e-8);
    EXPECT_NEAR(p[i], pd[i], 1e-5 * std::max(1.0, std::fabs(pd[i]))) << i;
  }
  auto q = randomInputs(n, 35), sq = randomInputs(n, 36, 0, 1);
  std::vector<double> qd(q.begin(), q.end()), sd(sq.begin(), sq.end());
  cpu::rmspropUpdate(q.data(), g.data(), sq.data(), n, 1e-2f, 0.99f, 1e-8f, 0.1f);
  for (std::size_t i = 0; i < n; ++i) {
    const double gi = g[i] + 0.1 * qd[i];
    sd[i] = 0.99 * sd[i] + 0.01 * gi * gi;
    qd[i] -= 1e-2 * gi / (std::sqrt(sd[i]) + 1e-8);
    EXPECT_NEAR(q[i], qd[i], 1e-5 * std::max(1.0, std::fabs(qd[i]))) << i;
  }
}

}  // namespace
}  // namespace ts
