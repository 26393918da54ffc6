// A pipeline rank builds its stage's activation buffers alone (models/model.h, BuiltLayers): the layers of the
// other stages are built (their shapes and FLOPs cut the model) into shared scratch. Checked by the
// device's count of activation bytes: the stages' own buffers add up to the whole model's exactly, each stage
// holds less than the whole model, and a probe (every layer scratch) holds only the scratch sets, enough for
// one forward of the whole model, which gives the same output as the whole model's.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tensor_test_support.h"
#include "workloads/layers/param_init.h"
#include "workloads/models/model.h"

namespace ts::wl {
namespace {

using test::activationBytes;

struct Built {
  std::unique_ptr<Model> model;
  std::size_t bytes = 0;  // the activations it took, its scratch sets included
};

Built build(ModelConfig c, BuiltLayers layers, std::int64_t batch) {
  c.built = layers;
  const std::size_t before = activationBytes();
  Built b;
  b.model = makeModel(c, batch);
  b.bytes = activationBytes() - before;
  return b;
}

ModelConfig configOf(ModelKind kind, Recompute recompute) {
  ModelConfig c = modelPreset(kind, "tiny");
  if (kind != ModelKind::kTransformer) {
    c.inputShape = kind == ModelKind::kCnn ? std::vector<std::int64_t>{3, 8, 8} : std::vector<std::int64_t>{12};
    c.classes = 5;
  } else {
    c.vocab = 32;
    c.seqLen = 8;
  }
  if (kind == ModelKind::kMlp) {
    c.depth = 5;
    c.width = 16;
  }
  c.recompute = recompute;
  return c;
}

// Contiguous stages of (nearly) equal layer counts.
std::vector<BuiltLayers> stagesOf(std::size_t layers, std::size_t stages) {
  std::vector<BuiltLayers> out;
  for (std::size_t s = 0; s < stages; ++s) {
    const std::size_t from = layers * s / stages, to = layers * (s + 1) / stages;
    const bool last = s + 1 == stages;
    out.push_back({from, last ? SIZE_MAX : to, last});
  }
  return out;
}

struct Case {
  ModelKind kind;
  Recompute recompute;
};

class StageBuffers : public ::testing::TestWithParam<Case> {};

TEST_P(StageBuffers, TheStagesOwnBuffersAddUpToTheWholeModels) {
  const ModelConfig c = configOf(GetParam().kind, GetParam().recompute);
  const std::int64_t batch = 4;
  const Built whole = build(c, {}, batch);
  EXPECT_EQ(whole.model->scratchActivationBytes(), 0u);
  const std::size_t layers = whole.model->layerCount();
  ASSERT_GE(layers, 4u);
  for (std::size_t stages : {2u, 3u}) {
    std::size_t own = 0;
    for (const BuiltLayers& stage : stagesOf(layers, stages)) {
      const Built b = build(c, stage, batch);
      ASSERT_EQ(b.model->layerCount(), layers);  // every layer is there, for its shapes and FLOPs
      EXPECT_GT(b.model->scratchActivationBytes(), 0u);
      const std::size_t mine = b.bytes - b.model->scratchActivationBytes();
      EXPECT_LT(mine, whole.bytes) << "stage from " << stage.from;
      // Without recomputation, where each layer holds its own: the scratch sets too are less than the rest.
      if (GetParam().recompute == Recompute::kNone) {
        EXPECT_LT(b.bytes, whole.bytes) << "stage from " << stage.from;
      }
      own += mine;
    }
    // Full recomputation's shared buffers are each stage's largest unit's, so the stages may hold more in all.
    if (GetParam().recompute == Recompute::kNone) {
      EXPECT_EQ(own, whole.bytes) << stages << " stages";
    } else {
      EXPECT_GE(own, whole.bytes) << stages << " stages";
    }
  }
}

TEST_P(StageBuffers, AProbeOfScratchBuffersRunsTheWholeForward) {
  const ModelConfig c = configOf(GetParam().kind, GetParam().recompute);
  const std::int64_t batch = 4;
  const Built whole = build(c, {}, batch);
  const Built probe = build(c, BuiltLayers::none(), batch);
  // Under full recomputation the units' internals are the shared pool's, as in the whole model.
  if (GetParam().recompute == Recompute::kNone) {
    EXPECT_EQ(probe.bytes, probe.model->scratchActivationBytes());
  }
  EXPECT_LT(probe.bytes, whole.bytes);
  // Both materialised alike (the same seeds per tensor), one batch through each: the same logits, bit for bit.
  data::Batch x;
  if (c.kind == ModelKind::kTransformer) {
    x.task = data::Task::kLanguageModel;
    x.inputShape = {batch, c.seqLen};
    for (std::int64_t i = 0; i < batch * c.seqLen; ++i) x.tokens.push_back(static_cast<std::int32_t>((i * 7) % c.vocab));
  } else {
    x.inputShape = {batch};
    x.inputShape.insert(x.inputShape.end(), c.inputShape.begin(), c.inputShape.end());
    std::int64_t n = batch;
    for (auto d : c.inputShape) n *= d;
    for (std::int64_t i = 0; i < n; ++i) x.features.push_back(static_cast<float>((i * 37) % 11) / 11.0f - 0.5f);
  }
  StepContext ctx;
  auto logits = [&](Model& m) {
    const Tensor& y = m.forwardLayers(m.embed(x, ctx), ctx, 0, m.layerCount());
    return y.toHost();
  };
  EXPECT_EQ(logits(*probe.model), logits(*whole.model));
}

INSTANTIATE_TEST_SUITE_P(Models, StageBuffers,
                         ::testing::Values(Case{ModelKind::kMlp, Recompute::kNone}, Case{ModelKind::kMlp, Recompute::kFull},
                                           Case{ModelKind::kCnn, Recompute::kNone}, Case{ModelKind::kCnn, Recompute::kFull},
                                           Case{ModelKind::kTransformer, Recompute::kNone},
                                           Case{ModelKind::kTransformer, Recompute::kFull}),
                         [](const auto& info) {
                           return std::string(nameOf(info.param.kind)) + "_" + std::string(nameOf(info.param.recompute));
                         });

}  // namespace
}  // namespace ts::wl
