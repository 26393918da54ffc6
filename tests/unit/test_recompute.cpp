// Activation recomputation (workloads/layers/recompute.h): a stack of transformer blocks run as recomputed units
// (full) or with the attention probabilities recomputed (selective) gives the plain stack's output, input gradient
// and parameter gradients bit for bit, with dropout's masks drawn again in the backward; and the units share one
// unit's buffers (the activations a stack holds, counted by the device, by the formula of docs/architecture.md).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tensor_test_support.h"
#include "workloads/layers/activation.h"
#include "workloads/layers/dropout.h"
#include "workloads/layers/linear.h"
#include "workloads/layers/recompute.h"
#include "workloads/layers/transformer_block.h"

namespace ts::wl {
namespace {

constexpr std::int64_t kB = 2, kT = 6, kC = 8, kHeads = 2, kBlocks = 3, kN = kB * kT;

using test::activationBytes;
using test::fillRandom;

// A stack of blocks h.0 .. h.2 (the same weights in every mode: Init keys by name), as a model would build it.
struct Stack {
  Arena arena;
  Precision precision = Precision::kFloat32;
  std::unique_ptr<RecomputePools> pools;
  std::unique_ptr<ActivationPool> scores;
  std::vector<std::unique_ptr<Layer>> layers;
  std::size_t bytes = 0;  // the activations it took

  explicit Stack(Recompute mode) {
    const std::size_t before = activationBytes();
    const Init init(11);
    pools = std::make_unique<RecomputePools>(arena);
    scores = std::make_unique<ActivationPool>(arena);
    for (std::int64_t l = 0; l < kBlocks; ++l) {
      const TransformerBlockConfig c{.batch = kB,
                                     .seq = kT,
                                     .channels = kC,
                                     .heads = kHeads,
                                     .layers = kBlocks,
                                     .dropout = 0.25,
                                     .seed = 3,
                                     .scores = mode == Recompute::kSelective ? scores.get() : nullptr};
      const std::string name = "h." + std::to_string(l);
      if (mode != Recompute::kFull) {
        layers.push_back(std::make_unique<TransformerBlock>(arena, init, name, c));
        continue;
      }
      std::vector<std::unique_ptr<Layer>> unit;
      {
        const PooledActivations scope(arena, pools->internals);
        unit.push_back(std::make_unique<TransformerBlock>(arena, init, name, c));
      }
      layers.push_back(std::make_unique<Recomputed>(
          arena, *pools, RecomputedUnit{.index = static_cast<std::size_t>(l), .inShape = {kN, kC}, .outShape = {kN, kC}},
          std::move(unit), precision));
    }
    bytes = activationBytes() - before;
  }

  // One forward and backward of x with dy; the output, the input gradient and every parameter gradient, in order.
  std::vector<std::vector<float>> run(const Tensor& x, const Tensor& dy) {
    StepContext ctx;
    ctx.step = 4;
    ctx.firstSample = 10;
    const Tensor* y = &x;
    for (auto& l : layers) y = &l->forward(*y, ctx);
    std::vector<std::vector<float>> out{y->toHost()};
    const Tensor* d = &dy;
    for (std::size_t i = layers.size(); i-- > 0;) d = &layers[i]->backward(*d, ctx);
    out.push_back(d->toHost());
    for (auto& l : layers) {
      std::vector<Param*> ps;
      l->params(ps);
      for (Param* p : ps) out.push_back(p->grad.toHost());
    }
    return out;
  }
};

std::vector<std::vector<float>> runStack(Recompute mode) {
  Stack s(mode);
  Tensor x = s.arena.own({kN, kC}, MemoryKind::kWorkspace), dy = s.arena.own({kN, kC}, MemoryKind::kWorkspace);
  fillRandom(x, 1);
  fillRandom(dy, 2);
  return s.run(x, dy);
}

TEST(Recompute, FullAndSelectiveGiveThePlainBlocksResultsBitForBit) {
  const auto plain = runStack(Recompute::kNone);
  ASSERT_EQ(plain.size(), 2 + kBlocks * 12u);  // output, input gradient, 12 parameters a block
  for (Recompute mode : {Recompute::kSelective, Recompute::kFull}) {
    const auto other = runStack(mode);
    ASSERT_EQ(other.size(), plain.size());
    for (std::size_t k = 0; k < plain.size(); ++k) EXPECT_EQ(other[k], plain[k]) << nameOf(mode) << " tensor " << k;
  }
}

TEST(Recompute, TheUnitsShareOneUnitsBuffers) {
  // A block's floats (docs/architecture.md): 44 N C + 4 N + 3 B H T^2, and 4 N C for its two dropouts.
  const std::size_t block = 4 * (48 * kN * kC + 4 * kN + 3 * kB * kHeads * kT * kT), scores = 4 * 3 * kB * kHeads * kT * kT;
  EXPECT_EQ(Stack(Recompute::kNone).bytes, kBlocks * block);
  EXPECT_EQ(Stack(Recompute::kSelective).bytes, kBlocks * (block - scores) + scores);
  // Full: one block's buffers, each unit's output (the next one's input) and two input gradients, alternating.
  EXPECT_EQ(Stack(Recompute::kFull).bytes, block + (kBlocks + 2) * 4 * kN * kC);
}

TEST(Recompute, AUnitOnTheDataReturnsZerosAsItsInputGradient) {
  // The mlp's first hidden layer: its Linear computes no input gradient, and the unit holds zeros of its own
  // while the other units write the shared buffers.
  Arena arena;
  RecomputePools pools(arena);
  const Precision precision = Precision::kFloat32;
  std::vector<std::unique_ptr<Layer>> units;
  for (std::size_t i = 0; i < 2; ++i) {
    std::vector<std::unique_ptr<Layer>> hidden;
    {
      const PooledActivations scope(arena, pools.internals);
      hidden.push_back(std::make_unique<Linear>(arena, Init(5), "layers." + std::to_string(2 * i),
                                                LinearConfig{.rows = 4, .in = i == 0 ? 12 : 8, .out = 8}));
      hidden.push_back(std::make_unique<Activation>(arena, ActivationKind::kRelu, std::vector<std::int64_t>{4, 8}));
    }
    units.push_back(std::make_unique<Recomputed>(
        arena, pools, RecomputedUnit{.index = i, .inShape = {4, i == 0 ? 12 : 8}, .outShape = {4, 8}, .dataInput = i == 0},
        std::move(hidden), precision));
  }
  units.front()->skipInputGradient();
  Tensor x = arena.own({4, 12}, MemoryKind::kWorkspace), dy = arena.own({4, 8}, MemoryKind::kWorkspace);
  fillRandom(x, 3);
  fillRandom(dy, 4);
  StepContext ctx;
  units[1]->forward(units[0]->forward(x, ctx), ctx);
  const std::vector<float> dx = units[0]->backward(units[1]->backward(dy, ctx), ctx).toHost();
  EXPECT_EQ(dx, std::vector<float>(48, 0.0f));
}

}  // namespace
}  // namespace ts::wl
