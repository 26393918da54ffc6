// Dropout's masks (kernels/cpu/dropout.cpp): the drop rate and scale, the backward's mask the forward's, and
// the mask a function of each element's global sample and feature, so that a rank holding a slice of the
// rows (data parallel, micro-batches) or of the features (tensor parallel) draws the whole tensor's mask.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "workloads/layers/dropout.h"

namespace ts {
namespace {

// The mask of [rows, cols] under keys: forward of ones, multiplied back by 1 - p (1 kept, 0 dropped).
std::vector<float> maskOf(std::size_t rows, std::size_t cols, const cpu::DropoutKeys& k) {
  std::vector<float> ones(rows * cols, 1.0f), out(rows * cols);
  cpu::dropoutForward(out.data(), ones.data(), rows, cols, k);
  for (float& v : out) v = v == 0.0f ? 0.0f : 1.0f;
  return out;
}

cpu::DropoutKeys keys(float p) {
  cpu::DropoutKeys k;
  k.seed = 1234;
  k.layer = 77;
  k.step = 5;
  k.p = p;
  return k;
}

TEST(Dropout, DropsAboutPAndScalesTheRestAndTheBackwardUsesTheSameMask) {
  const std::size_t rows = 300, cols = 400, n = rows * cols;
  for (const float p : {0.1f, 0.5f}) {
    const cpu::DropoutKeys k = keys(p);
    std::vector<float> x(n), y(n), dx(n, 7.0f), added(n, 1.0f);
    for (std::size_t i = 0; i < n; ++i) x[i] = 0.25f + float(i % 13);
    cpu::dropoutForward(y.data(), x.data(), rows, cols, k);
    std::size_t dropped = 0;
    const float scale = 1.0f / (1.0f - p);
    for (std::size_t i = 0; i < n; ++i) {
      if (y[i] == 0.0f)
        ++dropped;
      else
        ASSERT_EQ(y[i], x[i] * scale) << i;
    }
    // 120,000 draws: the binomial's standard deviation is at most 0.0015 of n.
    EXPECT_NEAR(double(dropped) / double(n), p, 0.006) << p;
    cpu::dropoutBackward(dx.data(), x.data(), rows, cols, k, cpu::Write::kOverwrite);
    cpu::dropoutBackward(added.data(), x.data(), rows, cols, k);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(dx[i], y[i]) << "the backward's mask and scale are the forward's, at " << i;
      ASSERT_EQ(added[i], 1.0f + y[i]) << i;
    }
  }
}

TEST(Dropout, TheMaskIsTheWholeTensorsWhateverSliceOfRowsOrFeaturesARankHolds) {
  const std::size_t rows = 12, cols = 10, T = 3;  // 4 samples of 3 tokens each
  cpu::DropoutKeys k = keys(0.3f);
  k.rowsPerSample = T;
  const auto whole = maskOf(rows, cols, k);
  // Samples 2 and 3 (a second data-parallel rank, or a second micro-batch): rows 6..11.
  cpu::DropoutKeys lower = k;
  lower.firstSample = 2;
  const auto half = maskOf(rows / 2, cols, lower);
  for (std::size_t i = 0; i < half.size(); ++i) ASSERT_EQ(half[i], whole[rows / 2 * cols + i]) << i;
  // Features 4..8 (a tensor-parallel slice).
  cpu::DropoutKeys slice = k;
  slice.colOffset = 4;
  const auto cut = maskOf(rows, 5, slice);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < 5; ++c) ASSERT_EQ(cut[r * 5 + c], whole[r * cols + 4 + c]) << r << " " << c;
  // Another step, layer or seed draws another mask.
  for (auto change : {+[](cpu::DropoutKeys& x) { ++x.step; }, +[](cpu::DropoutKeys& x) { ++x.layer; },
                      +[](cpu::DropoutKeys& x) { ++x.seed; }}) {
    cpu::DropoutKeys other = k;
    change(other);
    EXPECT_NE(maskOf(rows, cols, other), whole);
  }
}

TEST(Dropout, TheLayerIsTheIdentityWhenEvaluating) {
  wl::Arena a;
  wl::Dropout drop(a, "drop", {.seed = 1, .p = 0.5, .rows = 4, .cols = 8});
  wl::Tensor x = a.tensor({4, 8});
  for (std::size_t i = 0; i < x.numel(); ++i) x.data[i] = float(i) + 1.0f;
  wl::StepContext ctx;
  ctx.evaluating = true;
  const wl::Tensor& y = drop.forward(x, ctx);
  for (std::size_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y.data[i], x.data[i]);
  const wl::Tensor& dx = drop.backward(x, ctx);
  for (std::size_t i = 0; i < x.numel(); ++i) ASSERT_EQ(dx.data[i], x.data[i]);
  ctx.evaluating = false;
  const wl::Tensor& trained = drop.forward(x, ctx);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < x.numel(); ++i) dropped += trained.data[i] == 0.0f;
  EXPECT_GT(dropped, 0u) << "32 draws at p = 0.5 all kept: the mask is not applied";
}

}  // namespace
}  // namespace ts
