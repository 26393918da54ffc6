// A layer's two FLOP counts (workloads/layers/layer.h): forwardFlops() is the whole layer's on every tensor-parallel
// rank (the model's FLOPs, a train record's flops_per_step), rankForwardFlops() the slice the rank computes (what a
// plan's schedule carries, and predict replays). A layer tensor parallelism splits in two computes exactly half of it
// on each rank; at tp=1 the two are the one-process layer's. The counts are products of small integers, exact in a
// double, so they are compared exactly.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "workloads/layers/attention.h"
#include "workloads/layers/convolution.h"
#include "workloads/layers/linear.h"
#include "workloads/layers/recompute.h"
#include "workloads/layers/transformer_block.h"

namespace ts::wl {
namespace {

constexpr int kTp = 2;
constexpr std::int64_t kB = 2, kT = 4, kC = 8, kHeads = 2;

// The one-process layer's FLOPs, then each tp rank's two counts against them: the whole, and exactly half.
template <typename Make>
void expectHalvedOverTwoRanks(Make make) {
  Arena arena;
  const std::unique_ptr<Layer> whole = make(arena, 0, 1);
  ASSERT_GT(whole->forwardFlops(), 0);
  EXPECT_EQ(whole->rankForwardFlops(), whole->forwardFlops());
  EXPECT_EQ(whole->rankRecomputedFlops(), whole->recomputedFlops());
  for (int rank = 0; rank < kTp; ++rank) {
    const std::unique_ptr<Layer> slice = make(arena, rank, kTp);
    SCOPED_TRACE(rank);
    EXPECT_EQ(slice->forwardFlops(), whole->forwardFlops());
    EXPECT_EQ(slice->rankForwardFlops(), whole->forwardFlops() / kTp);
    EXPECT_EQ(slice->recomputedFlops(), whole->recomputedFlops());
    EXPECT_EQ(slice->rankRecomputedFlops(), whole->recomputedFlops() / kTp);
  }
}

TensorSplit splitOf(TensorSplit::Kind kind, int rank, int ranks) {
  return ranks == 1 ? TensorSplit{} : TensorSplit{kind, rank, ranks, {}};
}

TEST(LayerFlops, ALinearSplitByColumnsOrRowsComputesHalfOnEachOfTwoRanks) {
  for (TensorSplit::Kind kind : {TensorSplit::kColumn, TensorSplit::kRow}) {
    SCOPED_TRACE(kind);
    expectHalvedOverTwoRanks([&](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
      return std::make_unique<Linear>(a, Init(1), "fc",
                                      LinearConfig{.rows = 6, .in = 8, .out = 4, .split = splitOf(kind, rank, ranks)});
    });
  }
}

TEST(LayerFlops, AnAttentionSplitByHeadsComputesHalfOnEachOfTwoRanksRecomputationIncluded) {
  for (bool selective : {false, true}) {
    SCOPED_TRACE(selective);
    std::vector<std::unique_ptr<ActivationPool>> pools;  // --recompute selective: the probabilities from a pool
    expectHalvedOverTwoRanks([&](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
      ActivationPool* scores = selective ? pools.emplace_back(std::make_unique<ActivationPool>(a)).get() : nullptr;
      return std::make_unique<CausalSelfAttention>(
          a, Init(2), "attn",
          AttentionConfig{
              .batch = kB, .seq = kT, .channels = kC, .heads = kHeads, .tpRank = rank, .tpRanks = ranks, .scores = scores});
    });
  }
}

TEST(LayerFlops, ATransformerBlockComputesHalfOnEachOfTwoRanks) {
  expectHalvedOverTwoRanks([](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
    return std::make_unique<TransformerBlock>(
        a, Init(3), "h.0",
        TransformerBlockConfig{.batch = kB, .seq = kT, .channels = kC, .heads = kHeads, .tpRank = rank, .tpRanks = ranks});
  });
}

TEST(LayerFlops, AFullyRecomputedUnitCountsItsLayersSlicesAndRecomputesThem) {
  std::vector<std::unique_ptr<RecomputePools>> pools;
  expectHalvedOverTwoRanks([&](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
    RecomputePools& p = *pools.emplace_back(std::make_unique<RecomputePools>(a));
    std::vector<std::unique_ptr<Layer>> unit;
    {
      const PooledActivations scope(a, p.internals);
      unit.push_back(std::make_unique<TransformerBlock>(
          a, Init(3), "h.0",
          TransformerBlockConfig{.batch = kB, .seq = kT, .channels = kC, .heads = kHeads, .tpRank = rank, .tpRanks = ranks}));
    }
    static const Precision precision = Precision::kFloat32;
    auto layer = std::make_unique<Recomputed>(a, p, RecomputedUnit{.inShape = {kB * kT, kC}, .outShape = {kB * kT, kC}},
                                              std::move(unit), precision);
    EXPECT_EQ(layer->rankRecomputedFlops(), layer->rankForwardFlops());  // the whole forward runs again
    return layer;
  });
}

TEST(LayerFlops, AConvolutionSplitByChannelsAndABlockWithoutAShortcutComputeHalfOnEachOfTwoRanks) {
  const cpu::Conv2dShape shape{2, 4, 6, 5, 4, 3, 3, 1, 1};
  for (TensorSplit::Kind kind : {TensorSplit::kColumn, TensorSplit::kRow}) {
    SCOPED_TRACE(kind);
    expectHalvedOverTwoRanks([&](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
      return std::make_unique<Conv2d>(a, Init(4), "conv", shape, ConvLayout::kNchw, splitOf(kind, rank, ranks));
    });
  }
  expectHalvedOverTwoRanks([](Arena& a, int rank, int ranks) -> std::unique_ptr<Layer> {
    return std::make_unique<BasicBlock>(
        a, Init(5), "block", BasicBlockConfig{.n = 2, .cin = 4, .h = 6, .w = 5, .cout = 4, .tpRank = rank, .tpRanks = ranks});
  });
}

TEST(LayerFlops, ABlocksReplicatedShortcutIsWholeOnEveryRank) {
  Arena a;
  const BasicBlockConfig c{.n = 2, .cin = 2, .h = 6, .w = 5, .cout = 4, .stride = 2};
  BasicBlockConfig sliced = c;
  sliced.tpRanks = kTp;
  const BasicBlock whole(a, Init(6), "block", c), slice(a, Init(6), "block", sliced);
  // The 1x1 stride-2 shortcut from 2 to 4 channels over the 3x3 output: 2 N K P Q C.
  const double shortcut = 2.0 * 2 * 4 * 3 * 3 * 2;
  EXPECT_EQ(slice.forwardFlops(), whole.forwardFlops());
  EXPECT_EQ(slice.rankForwardFlops(), (whole.forwardFlops() - shortcut) / kTp + shortcut);
}

}  // namespace
}  // namespace ts::wl
