// The CPU ops against float64 references written independently here, and the backward ops against
// central finite differences of the float64 forward. Random inputs (never zeros), awkward sizes.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "kernels/cpu/convolution.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/specs/kernel_op.h"  // randomInputs: random data, never zeros
#include "tests/unit/compute_threads_scope.h"
#include "tests/unit/relative_error.h"

namespace ts {
namespace {

using test::maxRelErr;

// d/dx_i of f at x, central differences in float64.
std::vector<double> numericGrad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
                                double h = 1e-6) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f(x);
    x[i] = keep - h;
    const double down = f(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

std::vector<double> toDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// float64 forwards, written from the formulas.
std::vector<double> layernormRef(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                                 std::size_t N, std::size_t C) {
  std::vector<double> y(N * C);
  for (std::size_t i = 0; i < N; ++i) {
    double m = 0, v = 0;
    for (std::size_t c = 0; c < C; ++c) m += x[i * C + c];
    m /= C;
    for (std::size_t c = 0; c < C; ++c) v += (x[i * C + c] - m) * (x[i * C + c] - m);
    v /= C;
    for (std::size_t c = 0; c < C; ++c) y[i * C + c] = (x[i * C + c] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
  }
  return y;
}
double geluRef(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

}  // namespace

TEST(CpuOps, GemmMatchesFloat64ForEveryTransposeAndAwkwardSizes) {
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{33, 1, 17}, std::tuple{64, 65, 129}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const auto A = randomInputs(static_cast<std::size_t>(m * k), 1), B = randomInputs(static_cast<std::size_t>(k * n), 2);
        auto C = randomInputs(static_cast<std::size_t>(m * n), 3);
        std::vector<double> product(C.size()), want(C.size());
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double acc = 0;
            for (int p = 0; p < k; ++p)
              acc += double(ta ? A[p * m + i] : A[i * k + p]) * double(tb ? B[j * k + p] : B[p * n + j]);
            product[i * n + j] = acc;
            want[i * n + j] = 1.5 * acc + 0.5 * C[i * n + j];
          }
        cpu::gemm(ta, tb, m, n, k, 1.5f, A.data(), ta ? m : k, B.data(), tb ? k : n, 0.5f, C.data(), n);
        EXPECT_LT(maxRelErr(C, want), 1e-5 * std::sqrt(double(k))) << m << "x" << n << "x" << k << " " << ta << tb;
        std::vector<double> Cd(C.size(), 7.0);  // beta = 0: the old contents must not leak in
        cpu::gemm(ta, tb, m, n, k, 1.0, toDouble(A).data(), ta ? m : k, toDouble(B).data(), tb ? k : n, 0.0, Cd.data(), n);
        for (std::size_t i = 0; i < Cd.size(); ++i) EXPECT_NEAR(Cd[i], product[i], 1e-12 * std::max(1.0, std::fabs(product[i])));
      }
  }
}

TEST(CpuOps, LayerNormForwardAndBackward) {
  const std::size_t N = 3, C = 11;
  const auto x = randomInputs(N * C, 4), w = randomInputs(C, 5), b = randomInputs(C, 6), dy = randomInputs(N * C, 7);
  std::vector<float> y(N * C), mean(N), rstd(N);
  cpu::layernormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  EXPECT_LT(maxRelErr(y, layernormRef(toDouble(x), toDouble(w), toDouble(b), N, C)), 1e-5);
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  cpu::layernormBackward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww, const std::vector<double>& bb) {
    const auto yy = layernormRef(xx, ww, bb, N, C);
    double l = 0;
    for (std::size_t i = 0; i < yy.size(); ++i) l += yy[i] * dy[i];
    return l;
  };
  EXPECT_LT(maxRelErr(dx, numericGrad([&](const auto& v) { return loss(v, toDouble(w), toDouble(b)); }, toDouble(x))), 1e-4);
  EXPECT_LT(maxRelErr(dw, numericGrad([&](const auto& v) { return loss(toDouble(x), v, toDouble(b)); }, toDouble(w))), 1e-4);
  EXPECT_LT(maxRelErr(db, numericGrad([&](const auto& v) { return loss(toDouble(x), toDouble(w), v); }, toDouble(b))), 1e-4);
}

TEST(CpuOps, SoftmaxPlainAndCausalAndBackward) {
  const std::size_t T = 5, rows = 2 * T, cols = T;
  const auto x = randomInputs(rows * cols, 8, -4, 4);
  for (std::size_t causal : {std::size_t{0}, T}) {
    std::vector<float> y(rows * cols);
    cpu::softmaxForward(y.data(), x.data(), rows, cols, causal);
    std::vector<double> want(rows * cols, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t valid = causal ? r % T + 1 : cols;
      double s = 0;
      for (std::size_t c = 0; c < valid; ++c) s += std::exp(double(x[r * cols + c]));
      for (std::size_t c = 0; c < valid; ++c) want[r * cols + c] = std::exp(double(x[r * cols + c])) / s;
    }
    EXPECT_LT(maxRelErr(y, want), 1e-6) << "causal " << causal;
  }
  std::vector<float> y(rows * cols), dx(rows * cols, 0.0f);
  const auto dy = randomInputs(rows * cols, 9);
  cpu::softmaxForward(y.data(), x.data(), rows, cols);
  cpu::softmaxBackward(dx.data(), dy.data(), y.data(), rows, cols);
  auto loss = [&](const std::vector<double>& xx) {
    double l = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      double s = 0;
      for (std::size_t c = 0; c < cols; ++c) s += std::exp(xx[r * cols + c]);
      for (std::size_t c = 0; c < cols; ++c) l += std::exp(xx[r * cols + c]) / s * dy[r * cols + c];
    }
    return l;
  };
  EXPECT_LT(maxRelErr(dx, numericGrad(loss, toDouble(x))), 1e-5);
}

TEST(CpuOps, GeluForwardAndBackward) {
  const auto x = randomInputs(101, 10, -5, 5), dy = randomInputs(101, 11);
  std::vector<float> y(101), dx(101, 0.0f);
  cpu::geluForward(y.data(), x.data(), 101);
  std::vector<double> want(101);
  for (std::size_t i = 0; i < 101; ++i) want[i] = geluRef(x[i]);
  EXPECT_LT(maxRelErr(y, want), 1e-6);
  cpu::geluBackward(dx.data(), x.data(), dy.data(), 101);
  auto loss = [&](const std::vector<double>& xx) {
    double l = 0;
    for (std::size_t i = 0; i < xx.size(); ++i) l += geluRef(xx[i]) * dy[i];
    return l;
  };
  EXPECT_LT(maxRelErr(dx, numericGrad(loss, toDouble(x))), 1e-5);
}

TEST(CpuOps, CrossEntropyLossAndLogitGradients) {
  const std::size_t N = 4, V = 37;
  const auto z = randomInputs(N * V, 12, -6, 6);
  const std::vector<int> targets = {0, 36, 5, 17};
  std::vector<float> losses(N), dz(N * V);
  cpu::crossEntropyForwardBackward(losses.data(), dz.data(), z.data(), targets.data(), N, V, 1.0f / N);
  auto loss = [&](const std::vector<double>& zz) {
    double l = 0;
    for (std::size_t i = 0; i < N; ++i) {
      double s = 0;
      for (std::size_t v = 0; v < V; ++v) s += std::exp(zz[i * V + v]);
      l += (std::log(s) - zz[i * V + targets[i]]) / N;
    }
    return l;
  };
  double mean = 0;
  for (float l : losses) mean += l / N;
  EXPECT_NEAR(mean, loss(toDouble(z)), 1e-5);
  EXPECT_LT(maxRelErr(dz, numericGrad(loss, toDouble(z))), 1e-5);
}

TEST(CpuOps, OptimizerStepsMatchTheirDefinitions) {
  const std::size_t n = 9;
  auto p = randomInputs(n, 13), g = randomInputs(n, 14), m = randomInputs(n, 15, 0, 1), v = randomInputs(n, 16, 0, 1);
  std::vector<double> pd = toDouble(p), md = toDouble(m), vd = toDouble(v);
  cpu::adamwUpdate(p.data(), g.data(), m.data(), v.data(), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 3);
  for (std::size_t i = 0; i < n; ++i) {
    md[i] = 0.9 * md[i] + 0.1 * g[i];
    vd[i] = 0.999 * vd[i] + 0.001 * double(g[i]) * g[i];
    const double mh = md[i] / (1 - std::pow(0.9, 3)), vh = vd[i] / (1 - std::pow(0.999, 3));
    pd[i] -= 1e-2 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * pd[i]);
  }
  EXPECT_LT(maxRelErr(p, pd), 1e-5);
  auto q = randomInputs(n, 17), buf = randomInputs(n, 18);
  std::vector<double> qd = toDouble(q), bd = toDouble(buf);
  cpu::sgdMomentumUpdate(q.data(), g.data(), buf.data(), n, 0.05f, 0.9f, 1e-2f);
  for (std::size_t i = 0; i < n; ++i) {
    bd[i] = 0.9 * bd[i] + (g[i] + 1e-2 * qd[i]);
    qd[i] -= 0.05 * bd[i];
  }
  EXPECT_LT(maxRelErr(q, qd), 1e-6);
}

// LAMB against its definition (one tensor), and in parts: the parts' moments, their sums added, then each
// part's step with the whole tensor's trust ratio give the one-tensor update bit for bit (how ZeRO pieces and
// tensor-parallel slices run it).
TEST(CpuOps, LambWholeAndInPartsMatchItsDefinition) {
  const std::size_t n = 11;
  const float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f, eps = 1e-6f, wd = 0.1f;
  const int t = 3;
  const auto g = randomInputs(n, 21), p0 = randomInputs(n, 22), m0 = randomInputs(n, 23, 0, 1), v0 = randomInputs(n, 24, 0, 1);
  auto p = p0, m = m0, v = v0;
  std::vector<float> u(n);
  cpu::lambUpdate(p.data(), g.data(), m.data(), v.data(), u.data(), n, lr, b1, b2, eps, wd, t);
  std::vector<double> pd = toDouble(p0), ud(n);
  double pn = 0, un = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double mi = 0.9 * m0[i] + 0.1 * g[i], vi = 0.999 * v0[i] + 0.001 * double(g[i]) * g[i];
    ud[i] = (mi / (1 - std::pow(0.9, t))) / (std::sqrt(vi / (1 - std::pow(0.999, t))) + 1e-6) + 0.1 * pd[i];
    pn += pd[i] * pd[i];
    un += ud[i] * ud[i];
  }
  for (std::size_t i = 0; i < n; ++i) pd[i] -= 1e-2 * std::sqrt(pn / un) * ud[i];
  EXPECT_LT(maxRelErr(p, pd), 1e-5);

  auto q = p0, mq = m0, vq = v0;
  const std::size_t cuts[] = {0, 4, 5, n};  // parts of 4, 1 and 6 elements
  double sums[2] = {0, 0};
  for (int k = 0; k < 3; ++k)
    cpu::lambMoments(q.data() + cuts[k], g.data() + cuts[k], mq.data() + cuts[k], vq.data() + cuts[k], cuts[k + 1] - cuts[k], b1,
                     b2, eps, wd, t, sums);
  for (int k = 0; k < 3; ++k)
    cpu::lambApply(q.data() + cuts[k], mq.data() + cuts[k], vq.data() + cuts[k], cuts[k + 1] - cuts[k], lr, b1, b2, eps, wd, t,
                   cpu::lambTrust(sums[0], sums[1]));
  EXPECT_EQ(q, p);
  EXPECT_EQ(mq, m);
  EXPECT_EQ(vq, v);
  EXPECT_EQ(cpu::lambTrust(0, 4), 1.0) << "a zero tensor steps by the direction itself";
  EXPECT_EQ(cpu::lambTrust(9, 4), 1.5);
}

// The batch-norm tests run in both layouts: NCHW's channel-at-a-time passes and the channels-last kernels'
// blocks of rows (normalization_channels_last.cpp).
class CpuBatchNorm : public testing::TestWithParam<ConvLayout> {
 protected:
  ConvLayout layout() const { return GetParam(); }
  // Element (i, c, j) of an [N, C, HW] tensor in the layout, and the channel of flat index k.
  std::size_t at(std::size_t C, std::size_t HW, std::size_t i, std::size_t c, std::size_t j) const {
    return layout() == ConvLayout::kNhwc ? (i * HW + j) * C + c : (i * C + c) * HW + j;
  }
  std::size_t channelOf(std::size_t C, std::size_t HW, std::size_t k) const {
    return layout() == ConvLayout::kNhwc ? k % C : (k / HW) % C;
  }
};
INSTANTIATE_TEST_SUITE_P(Layouts, CpuBatchNorm, testing::Values(ConvLayout::kNchw, ConvLayout::kNhwc),
                         [](const testing::TestParamInfo<ConvLayout>& i) { return std::string(nameOf(i.param)); });

// Batch norm per channel over N*HW against float64 (forward from the formula, backward against finite
// differences of sum(dy * y)), on inputs whose mean is far from 0 (the float per-element pass subtracts the
// mean first); then ReLU's and batch norm's input gradients added into dinp or written over it. HW = 437:
// channels-last, several blocks of rows (819 rows each at C = 5) and a short last one.
TEST_P(CpuBatchNorm, BatchNormAndReluMatchFloat64AndAccumulateOrOverwrite) {
  const std::size_t N = 3, C = 5, HW = 437, n = N * C * HW;
  auto x = randomInputs(n, 71);
  for (std::size_t i = 0; i < n; ++i) x[i] = 20.0f + 3.0f * x[i] * float(1 + channelOf(C, HW, i));
  const auto w = randomInputs(C, 72), b = randomInputs(C, 73), dy = randomInputs(n, 74), dinp0 = randomInputs(n, 75);
  // Channel c's mean and (biased) variance in float64.
  const auto moments = [&](const auto& xd, std::size_t c) {
    double m = 0, v = 0;
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < HW; ++j) m += xd[at(C, HW, i, c, j)];
    m /= double(N * HW);
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < HW; ++j) v += std::pow(xd[at(C, HW, i, c, j)] - m, 2);
    return std::pair{m, v / double(N * HW)};
  };
  const auto forward = [&](const std::vector<double>& xd) {
    std::vector<double> y(n);
    for (std::size_t c = 0; c < C; ++c) {
      const auto [m, v] = moments(xd, c);
      for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = 0; j < HW; ++j) {
          const std::size_t k = at(C, HW, i, c, j);
          y[k] = (xd[k] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
        }
    }
    return y;
  };
  std::vector<float> y(n), mean(C), rstd(C);
  cpu::batchnormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, HW, 1e-5f, nullptr, nullptr, 0.1f,
                        nullptr, false, layout());
  EXPECT_LE(maxRelErr(y, forward(toDouble(x))), 2e-5);
  std::vector<float> relu(n);
  cpu::batchnormForward(relu.data(), nullptr, nullptr, x.data(), w.data(), b.data(), N, C, HW, 1e-5f, nullptr, nullptr, 0.1f,
                        nullptr, true, layout());
  for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(relu[k], y[k] > 0 ? y[k] : 0.0f) << "the fused ReLU, at " << k;
  const auto want = numericGrad(
      [&](const std::vector<double>& xd) {
        const auto yd = forward(xd);
        double l = 0;
        for (std::size_t k = 0; k < n; ++k) l += yd[k] * dy[k];
        return l;
      },
      toDouble(x), 1e-4);
  std::vector<float> added = dinp0, written(n, NAN), dw(C, 0.0f), db(C, 0.0f);
  cpu::batchnormBackward(added.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C, HW,
                         cpu::Write::kAccumulate, nullptr, layout());
  cpu::batchnormBackward(written.data(), nullptr, nullptr, dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C, HW,
                         cpu::Write::kOverwrite, nullptr, layout());
  std::vector<double> wantAdded = want;
  for (std::size_t k = 0; k < n; ++k) wantAdded[k] += dinp0[k];
  EXPECT_LE(maxRelErr(written, want), 1e-4);
  EXPECT_LE(maxRelErr(added, wantAdded), 1e-4);
  // dweight = sum dy xhat, dbias = sum dy (float64, from the reference's statistics).
  for (std::size_t c = 0; c < C; ++c) {
    const auto [m, v] = moments(x, c);
    double sdy = 0, sdyx = 0;
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < HW; ++j) {
        const std::size_t k = at(C, HW, i, c, j);
        sdy += dy[k];
        sdyx += dy[k] * (x[k] - m) / std::sqrt(v + 1e-5);
      }
    EXPECT_NEAR(db[c], sdy, 1e-5 * std::max(1.0, std::fabs(sdy))) << c;
    EXPECT_NEAR(dw[c], sdyx, 1e-4 * std::max(1.0, std::fabs(sdyx))) << c;
  }

  std::vector<float> reluAdded = dinp0, reluWritten(n, NAN);
  const auto centred = randomInputs(n, 76);
  cpu::reluBackward(reluAdded.data(), centred.data(), dy.data(), n);
  cpu::reluBackward(reluWritten.data(), centred.data(), dy.data(), n, cpu::Write::kOverwrite);
  for (std::size_t k = 0; k < n; ++k) {
    ASSERT_EQ(reluWritten[k], centred[k] > 0 ? dy[k] : 0.0f) << k;
    ASSERT_EQ(reluAdded[k], dinp0[k] + (centred[k] > 0 ? dy[k] : 0.0f)) << k;
  }
}

// SyncBatchNorm in one process: two replicas (threads) each hold half of the batch and add their statistics
// through a ReplicaSum (a barrier and a shared buffer: an all-reduce of two). Each half's output and input
// gradient are the whole batch's, and the halves' dweight/dbias add up to the whole batch's.
TEST_P(CpuBatchNorm, SyncBatchNormOverTwoReplicasIsTheWholeBatchs) {
  const std::size_t N = 4, C = 3, HW = 29, n = N * C * HW, half = n / 2;
  auto x = randomInputs(n, 81);
  for (std::size_t i = 0; i < n; ++i) x[i] = 5.0f + 2.0f * x[i] + (i < half ? 1.0f : -1.0f);  // the halves differ
  const auto w = randomInputs(C, 82), b = randomInputs(C, 83), dy = randomInputs(n, 84);
  std::vector<float> y(n), mean(C), rstd(C), dx(n, NAN), dw(C, 0.0f), db(C, 0.0f), rm(C, 0.0f), rv(C, 1.0f);
  cpu::batchnormForward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, HW, 1e-5f, rm.data(), rv.data(),
                        0.1f, nullptr, false, layout());
  cpu::batchnormBackward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C, HW,
                         cpu::Write::kOverwrite, nullptr, layout());

  std::vector<double> shared;
  std::barrier sync(2);
  struct Replica {
    std::vector<float> y, mean, rstd, dx, dw, db, rm, rv;
  };
  Replica r[2];
  const auto run = [&](int k) {
    const cpu::ReplicaSum sum = [&](double* v, std::size_t count) {
      if (k == 0) shared.assign(count, 0.0);
      sync.arrive_and_wait();
      {
        static std::mutex m;
        std::lock_guard lock(m);
        for (std::size_t i = 0; i < count; ++i) shared[i] += v[i];
      }
      sync.arrive_and_wait();
      std::copy(shared.begin(), shared.end(), v);
      sync.arrive_and_wait();
    };
    Replica& me = r[k];
    me = {std::vector<float>(half),    std::vector<float>(C),       std::vector<float>(C),       std::vector<float>(half, NAN),
          std::vector<float>(C, 0.0f), std::vector<float>(C, 0.0f), std::vector<float>(C, 0.0f), std::vector<float>(C, 1.0f)};
    const float* xk = x.data() + k * half;
    cpu::batchnormForward(me.y.data(), me.mean.data(), me.rstd.data(), xk, w.data(), b.data(), N / 2, C, HW, 1e-5f, me.rm.data(),
                          me.rv.data(), 0.1f, &sum, false, layout());
    cpu::batchnormBackward(me.dx.data(), me.dw.data(), me.db.data(), dy.data() + k * half, xk, w.data(), me.mean.data(),
                           me.rstd.data(), N / 2, C, HW, cpu::Write::kOverwrite, &sum, layout());
  };
  std::thread other(run, 1);
  run(0);
  other.join();
  for (int k = 0; k < 2; ++k) {
    for (std::size_t i = 0; i < half; ++i) {
      ASSERT_NEAR(r[k].y[i], y[k * half + i], 1e-5 * std::max(1.0f, std::fabs(y[k * half + i]))) << k << " " << i;
      ASSERT_NEAR(r[k].dx[i], dx[k * half + i], 1e-5 * std::max(1.0f, std::fabs(dx[k * half + i]))) << k << " " << i;
    }
    for (std::size_t c = 0; c < C; ++c) {
      EXPECT_NEAR(r[k].mean[c], mean[c], 1e-6 * std::fabs(mean[c]));
      EXPECT_NEAR(r[k].rstd[c], rstd[c], 1e-6 * rstd[c]);
      EXPECT_NEAR(r[k].rv[c], rv[c], 1e-6 * rv[c]) << "the running variance is the whole batch's (unbiased)";
    }
  }
  for (std::size_t c = 0; c < C; ++c) {
    EXPECT_NEAR(r[0].dw[c] + r[1].dw[c], dw[c], 1e-5 * std::max(1.0f, std::fabs(dw[c])));
    EXPECT_NEAR(r[0].db[c] + r[1].db[c], db[c], 1e-5 * std::max(1.0f, std::fabs(db[c])));
  }
}

// Evaluation's batch norm: the running statistics, not the batch's.
TEST_P(CpuBatchNorm, BatchNormInferenceUsesTheRunningStatistics) {
  const std::size_t N = 2, C = 3, HW = 5, n = N * C * HW;
  const auto x = randomInputs(n, 91), w = randomInputs(C, 92), b = randomInputs(C, 93), rm = randomInputs(C, 94);
  const auto rv = randomInputs(C, 95, 0.5f, 2.0f);
  std::vector<float> y(n);
  cpu::batchnormInference(y.data(), x.data(), w.data(), b.data(), rm.data(), rv.data(), N, C, HW, 1e-5f, layout());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = channelOf(C, HW, i);
    const double want = (double(x[i]) - rm[c]) / std::sqrt(double(rv[c]) + 1e-5) * w[c] + b[c];
    ASSERT_NEAR(y[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << i;
  }
}

// The channels-last image ops are NCHW's on the transposed tensor: the transpose there and back is the
// identity, and global average pooling, max pooling (its argmax the winner's index in the NHWC input) and
// their backward passes give NCHW's values in the other order.
TEST(CpuOps, ChannelsLastPoolingIsNchwPoolingTransposed) {
  const int N = 2, C = 5, H = 7, W = 6;
  const std::size_t HW = H * W, n = std::size_t(N) * C * HW;
  const auto x = randomInputs(n, 101);
  std::vector<float> last(n), back(n);
  cpu::transposeImages(last.data(), x.data(), N, C, HW, ConvLayout::kNchw);
  for (int i = 0; i < N; ++i)
    for (int c = 0; c < C; ++c)
      for (std::size_t j = 0; j < HW; ++j) ASSERT_EQ(last[(i * HW + j) * C + c], x[(i * C + c) * HW + j]);
  cpu::transposeImages(back.data(), last.data(), N, C, HW, ConvLayout::kNhwc);
  EXPECT_EQ(back, x);

  std::vector<float> pooled(N * C), pooledLast(N * C);
  cpu::globalAvgPoolForward(pooled.data(), x.data(), N, C, HW);
  cpu::globalAvgPoolForward(pooledLast.data(), last.data(), N, C, HW, ConvLayout::kNhwc);
  EXPECT_EQ(pooledLast, pooled);
  const auto dy = randomInputs(std::size_t(N) * C, 102), dx0 = randomInputs(n, 103);
  std::vector<float> dx = dx0, dxLast(n), dxBack(n);
  cpu::transposeImages(dxLast.data(), dx0.data(), N, C, HW, ConvLayout::kNchw);
  cpu::globalAvgPoolBackward(dx.data(), dy.data(), N, C, HW);
  cpu::globalAvgPoolBackward(dxLast.data(), dy.data(), N, C, HW, ConvLayout::kNhwc);
  cpu::transposeImages(dxBack.data(), dxLast.data(), N, C, HW, ConvLayout::kNhwc);
  EXPECT_EQ(dxBack, dx);

  const int k = 3, stride = 2, pad = 1, P = (H + 2 * pad - k) / stride + 1, Q = (W + 2 * pad - k) / stride + 1;
  const std::size_t outs = std::size_t(N) * C * P * Q;
  std::vector<float> y(outs), yLast(outs), yBack(outs), g(n, 0.0f), gLast(n, 0.0f), gBack(n);
  std::vector<int> arg(outs), argLast(outs);
  cpu::maxPool2dForward(y.data(), arg.data(), x.data(), N, C, H, W, k, stride, pad);
  cpu::maxPool2dForward(yLast.data(), argLast.data(), last.data(), N, C, H, W, k, stride, pad, ConvLayout::kNhwc);
  cpu::transposeImages(yBack.data(), yLast.data(), N, C, std::size_t(P) * Q, ConvLayout::kNhwc);
  EXPECT_EQ(yBack, y);
  for (std::size_t o = 0; o < outs; ++o) ASSERT_EQ(last[argLast[o]], yLast[o]) << "the argmax holds the maximum, at " << o;
  const auto dpool = randomInputs(outs, 104);
  std::vector<float> dpoolLast(outs);
  cpu::transposeImages(dpoolLast.data(), dpool.data(), N, C, std::size_t(P) * Q, ConvLayout::kNchw);
  cpu::maxPool2dBackward(g.data(), dpool.data(), arg.data(), outs);
  cpu::maxPool2dBackward(gLast.data(), dpoolLast.data(), argLast.data(), outs);
  cpu::transposeImages(gBack.data(), gLast.data(), N, C, HW, ConvLayout::kNhwc);
  EXPECT_EQ(gBack, g);
}

TEST(CpuOps, AddsAndCasts) {
  const auto a = randomInputs(12, 19), b = randomInputs(4, 20);
  std::vector<float> out(12);
  cpu::biasAdd(out.data(), a.data(), b.data(), 3, 4);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(out[i], a[i] + b[i % 4]);
  cpu::residualAdd(out.data(), a.data(), a.data(), 12);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(out[i], 2 * a[i]);
  std::vector<std::uint16_t> h(12);
  cpu::castToBFloat16(h.data(), a.data(), 12);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_NEAR(bfloat16ToFloat(h[i]), a[i], std::fabs(a[i]) * 0x1p-8);
  cpu::castToHalf(h.data(), a.data(), 12);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_NEAR(halfToFloat(h[i]), a[i], std::fabs(a[i]) * 0x1p-11);
}

}  // namespace ts

#include "kernels/specs/kernel_op.h"

namespace ts {

TEST(KernelSpecs, CheckCountsPoisonAndWrongValues) {
  const std::vector<double> want = {1.0, -2.0, 0.5};
  const std::vector<float> good = {1.0f, -2.0f, 0.5f};
  EXPECT_EQ(maxRelativeError(good.data(), want.data(), 3), 0.0);
  std::vector<float> unwritten = good;
  poison(unwritten);
  EXPECT_TRUE(std::isinf(maxRelativeError(unwritten.data(), want.data(), 3)));  // an op that wrote nothing fails
  std::vector<float> off = good;
  off[1] = -2.1f;
  EXPECT_NEAR(maxRelativeError(off.data(), want.data(), 3), 0.05, 1e-6);
}

TEST(KernelSpecs, EveryOpPassesItsOwnCheckAtAwkwardShapes) {
  for (const KernelOp* op : allKernelOps()) {
    for (const KernelShape& shape : op->shapes(64, 7, 3, 97)) {  // 21 tokens, vocabulary 97
      if (shape.name.rfind("square", 0) == 0) continue;          // the ceiling squares are large
      auto c = op->make(shape, KernelSettings{});
      const KernelCheck r = c->check();
      EXPECT_TRUE(r.passed) << op->name() << " " << shape.name << " err " << r.maxRelErr << " tol " << r.tolerance;
      EXPECT_GT(c->flops(), 0);
      EXPECT_GT(c->bytes(), 0);
    }
  }
  EXPECT_THROW(findKernelOp("gemm").make(KernelShape{"x", {{"M", 2}, {"N", 2}, {"K", 2}}}, KernelSettings{Precision::kBFloat16}),
               UsageError);
}

}  // namespace ts

namespace ts {
namespace {

// Direct convolution in float64, from the definition.
std::vector<double> convRef(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                            const cpu::Conv2dShape& s) {
  const int P = s.P(), Q = s.Q();
  std::vector<double> y(static_cast<std::size_t>(s.N) * s.K * P * Q);
  for (int n = 0; n < s.N; ++n)
    for (int k = 0; k < s.K; ++k)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) {
          double acc = b[k];
          for (int c = 0; c < s.C; ++c)
            for (int r = 0; r < s.R; ++r)
              for (int t = 0; t < s.S; ++t) {
                const int h = p * s.stride - s.pad + r, ww = q * s.stride - s.pad + t;
                if (h >= 0 && h < s.H && ww >= 0 && ww < s.W)
                  acc += x[((n * s.C + c) * s.H + h) * s.W + ww] * w[((k * s.C + c) * s.R + r) * s.S + t];
              }
          y[((n * s.K + k) * P + p) * Q + q] = acc;
        }
  return y;
}

}  // namespace

TEST(CpuOps, ConvolutionForwardAndBothBackwards) {
  for (const cpu::Conv2dShape s : {cpu::Conv2dShape{2, 3, 5, 6, 4, 3, 3, 1, 1}, cpu::Conv2dShape{1, 2, 7, 7, 3, 3, 2, 2, 0}}) {
    const std::size_t nx = static_cast<std::size_t>(s.N) * s.C * s.H * s.W, nw = static_cast<std::size_t>(s.K) * s.C * s.R * s.S;
    const std::size_t ny = static_cast<std::size_t>(s.N) * s.K * s.P() * s.Q();
    const auto x = randomInputs(nx, 30), w = randomInputs(nw, 31), b = randomInputs(s.K, 32), dy = randomInputs(ny, 33);
    std::vector<float> y(ny);
    cpu::conv2dForward(y.data(), x.data(), w.data(), b.data(), s);
    EXPECT_LT(maxRelErr(y, convRef(toDouble(x), toDouble(w), toDouble(b), s)), 1e-5);
    auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww, const std::vector<double>& bb) {
      const auto yy = convRef(xx, ww, bb, s);
      double l = 0;
      for (std::size_t i = 0; i < yy.size(); ++i) l += yy[i] * dy[i];
      return l;
    };
    std::vector<float> dx(nx, 0.0f), dw(nw, 0.0f), db(s.K, 0.0f);
    cpu::conv2dBackwardData(dx.data(), dy.data(), w.data(), s);
    cpu::conv2dBackwardFilter(dw.data(), db.data(), dy.data(), x.data(), s);
    EXPECT_LT(maxRelErr(dx, numericGrad([&](const auto& v) { return loss(v, toDouble(w), toDouble(b)); }, toDouble(x))), 1e-4);
    EXPECT_LT(maxRelErr(dw, numericGrad([&](const auto& v) { return loss(toDouble(x), v, toDouble(b)); }, toDouble(w))), 1e-4);
    EXPECT_LT(maxRelErr(db, numericGrad([&](const auto& v) { return loss(toDouble(x), toDouble(w), v); }, toDouble(b))), 1e-4);
  }
}

namespace {
// cpu::attentionForward against the definition in float64, B x NH heads of T tokens of D.
void expectCausalAttentionMatches(int B, int NH, int T, int D) {
  const std::size_t n = static_cast<std::size_t>(B) * NH * T * D;
  const auto q = randomInputs(n, 40), k = randomInputs(n, 41), v = randomInputs(n, 42);
  std::vector<float> out(n);
  cpu::attentionForward(out.data(), q.data(), k.data(), v.data(), B, NH, T, D);
  std::vector<double> want(n, 0.0);
  for (int bh = 0; bh < B * NH; ++bh)
    for (int i = 0; i < T; ++i) {
      std::vector<double> s(static_cast<std::size_t>(i) + 1);
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += double(q[(bh * T + i) * D + d]) * k[(bh * T + j) * D + d];
        s[j] = dot / std::sqrt(double(D));
        mx = std::max(mx, s[j]);
      }
      for (auto& x : s) sum += (x = std::exp(x - mx));
      for (int j = 0; j <= i; ++j)
        for (int d = 0; d < D; ++d) want[(bh * T + i) * D + d] += s[j] / sum * v[(bh * T + j) * D + d];
    }
  EXPECT_LT(maxRelErr(out, want), 1e-5) << B << "x" << NH << " heads at " << cpu::computeThreads() << " threads";
}
}  // namespace

// At 1 to 4 compute threads (the heads whole to the threads: 6 of them, no multiple of 4; one head alone).
TEST(CpuOps, CausalAttentionMatchesTheDefinition) {
  for (int threads : {1, 2, 3, 4})
    for (auto [B, NH] : {std::pair{2, 3}, std::pair{1, 1}}) {
      const test::ComputeThreadsScope scope(threads);
      expectCausalAttentionMatches(B, NH, 5, 4);
    }
}

}  // namespace ts
