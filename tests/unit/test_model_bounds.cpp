// A model's size from its config alone (workloads/models/model_size.cpp): the count is the built model's, a count past
// 64 bits is no count, and a shape beyond range or a model the memory cannot hold is one line before anything is built.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "test_support.h"
#include "workloads/models/model.h"
#include "workloads/parallel/layout.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {
namespace {

ModelConfig configOf(ModelKind kind, const std::string& preset, const std::vector<std::string>& overrides = {}) {
  ModelConfig c = modelPreset(kind, preset);
  for (const std::string& o : overrides) applyModelOverride(c, o);
  if (kind == ModelKind::kMlp) c.inputShape = {784};
  if (kind == ModelKind::kCnn) c.inputShape = {3, 32, 32};
  c.classes = kind == ModelKind::kTransformer ? 0 : 10;
  return c;
}

TEST(ModelBounds, TheCountFromTheConfigIsTheBuiltModels) {
  // Expert-parallel rank 1 of 4 (placedConfigOf): its 2 of the 8 experts of each mixture, every dense weight.
  ModelConfig expertRank = configOf(ModelKind::kTransformer, "moe-tiny", {"experts=8"});
  expertRank.moe.ep = {1, 4};
  const std::vector<ModelConfig> configs = {
      configOf(ModelKind::kMlp, "tiny"),
      configOf(ModelKind::kMlp, "tiny", {"depth=0"}),
      configOf(ModelKind::kMlp, "small", {"depth=1"}),
      configOf(ModelKind::kCnn, "tiny"),
      configOf(ModelKind::kCnn, "resnet20", {"widths=8,16,32"}),
      configOf(ModelKind::kCnn, "tiny", {"stem=imagenet", "widths=8,8,16", "blocks=2,1,1"}),
      configOf(ModelKind::kTransformer, "tiny"),
      configOf(ModelKind::kTransformer, "tiny", {"layers=3", "vocab=300", "seq_len=16"}),
      configOf(ModelKind::kTransformer, "moe-tiny"),
      expertRank,
  };
  for (const ModelConfig& c : configs) {
    SCOPED_TRACE(c.toJson().dump());
    const auto counted = modelParameterCount(c);
    ASSERT_TRUE(counted);
    EXPECT_EQ(static_cast<std::int64_t>(*counted), makeModel(c, 2)->parameterCount());
  }
}

TEST(ModelBounds, ACountPast64BitsIsNoCount) {
  ModelConfig c = configOf(ModelKind::kTransformer, "tiny");
  c.hidden = std::int64_t{1} << 40;  // 12 C^2 alone is past 2^64
  EXPECT_FALSE(modelParameterCount(c));
  EXPECT_NE(test::usageError([&] { checkModelFits(c, 1 << 30, "this host's memory"); }).find("more than 2^64 parameters"),
            std::string::npos);
}

TEST(ModelBounds, AModelTheMemoryCannotHoldIsOneLine) {
  const ModelConfig c = configOf(ModelKind::kTransformer, "tiny", {"hidden=65536", "layers=4096", "heads=1"});
  const std::string line = test::usageError([&] { checkModelFits(c, std::uint64_t{64} << 30, "this host's memory"); });
  EXPECT_EQ(line.rfind("the transformer (layers 4096, hidden 65536, seq_len 32, vocab 256) has 2.11e+14 parameters: ", 0), 0u)
      << line;
  EXPECT_NE(line.find("for them and their gradients alone, more than this host's memory (64 GiB)"), std::string::npos) << line;
  // What fits is taken; 0 is no bound.
  const ModelConfig tiny = configOf(ModelKind::kTransformer, "tiny");
  EXPECT_NO_THROW(checkModelFits(tiny, 8 * *modelParameterCount(tiny), "x"));
  EXPECT_THROW(checkModelFits(tiny, 8 * *modelParameterCount(tiny) - 1, "x"), UsageError);
  EXPECT_NO_THROW(checkModelFits(c, 0, "x"));
  // Tensor-parallel ranks build their slices only: 2 share what one cannot hold.
  const ModelShare tp2{2, 2, "--tp 2"};
  EXPECT_NO_THROW(checkModelFits(tiny, 4 * *modelParameterCount(tiny), "x", tp2));
  EXPECT_NE(test::usageError([&] {
              checkModelFits(tiny, 4 * *modelParameterCount(tiny) - 1, "x", tp2);
            }).find("alone (a rank's share under --tp 2), more than x"),
            std::string::npos);
}

TEST(ModelBounds, EveryLayoutThatShardsTheModelDividesTheHostCheck) {
  // Before, only --tp divided the count: a model that --pp 4 or --zero 3 shards was refused on a host that holds a
  // rank's share.
  LayoutOptions l;
  l.dp = 4;
  l.zero = 3;
  ModelShare s = modelShareOf(l);
  EXPECT_EQ(s.valueShards, 4u);
  EXPECT_EQ(s.gradientShards, 4u);
  EXPECT_EQ(s.by, "--zero 3 over 4 replicas");
  l.zero = 2;
  s = modelShareOf(l);
  EXPECT_EQ(s.valueShards, 1u);  // ZeRO-2 keeps every value on every replica
  EXPECT_EQ(s.gradientShards, 4u);
  l = LayoutOptions{};
  l.pp = 4;
  l.tp = 2;
  s = modelShareOf(l);
  EXPECT_EQ(s.valueShards, 8u);
  EXPECT_EQ(s.by, "--tp 2 --pp 4");
  EXPECT_EQ(modelShareOf(LayoutOptions{}).by, "");
  const ModelConfig tiny = configOf(ModelKind::kTransformer, "tiny");
  const std::uint64_t n = *modelParameterCount(tiny);
  EXPECT_NO_THROW(checkModelFits(tiny, n, "x", modelShareOf(l)));  // 8 bytes each over 8 ranks
  EXPECT_THROW(checkModelFits(tiny, n - 1, "x", modelShareOf(l)), UsageError);
}

TEST(ModelBounds, TheExpertCountIsTheBuiltModelsExperts) {
  ModelConfig whole = configOf(ModelKind::kTransformer, "moe-tiny", {"experts=8"}), expertRank = whole;
  expertRank.moe.ep = {1, 4};  // its 2 of the 8 experts of each mixture
  for (const ModelConfig& c : {whole, expertRank, configOf(ModelKind::kTransformer, "tiny")}) {
    SCOPED_TRACE(c.toJson().dump());
    const auto model = makeModel(c, 2);
    std::int64_t built = 0;
    for (const Param* p : model->params()) built += p->expert ? p->value.numel() : 0;
    ASSERT_TRUE(modelExpertParameterCount(c));
    EXPECT_EQ(static_cast<std::int64_t>(*modelExpertParameterCount(c)), built);
  }
  EXPECT_EQ(*modelExpertParameterCount(expertRank) * 4, *modelExpertParameterCount(whole));
}

TEST(ModelBounds, ExpertParallelDividesTheExpertsOfTheHostCheck) {
  // Before, the whole model was divided by --tp x --pp alone: every expert counted on every rank, so a host that holds
  // an --ep rank's share refused the run.
  const ModelConfig moe = configOf(ModelKind::kTransformer, "moe-tiny", {"experts=8"});
  const std::uint64_t all = *modelParameterCount(moe), experts = *modelExpertParameterCount(moe);
  ASSERT_GT(experts, all / 2);  // the experts are most of it, so dividing them matters
  LayoutOptions ep4;
  ep4.dp = 1;
  ep4.ep = 4;
  ModelShare s = modelShareOf(ep4);
  EXPECT_EQ(s.by, "--ep 4");
  EXPECT_EQ(std::vector<std::uint64_t>({s.valueShards, s.gradientShards, s.expertValueShards, s.expertGradientShards}),
            std::vector<std::uint64_t>({1, 1, 4, 4}));
  const std::uint64_t share = 8 * (all - experts) + 8 * experts / 4;  // values and gradients, 4 bytes each
  EXPECT_NO_THROW(checkModelFits(moe, share, "x", s));
  EXPECT_NE(test::usageError([&] { checkModelFits(moe, share - 1, "x", s); }).find("(a rank's share under --ep 4), more than x"),
            std::string::npos);
  EXPECT_THROW(checkModelFits(moe, share, "x", modelShareOf(LayoutOptions{})), UsageError);  // all 8 experts: too many
  // Tensor parallelism leaves a mixture whole (moe.h); ZeRO-2 shards an expert's gradients over its own copies (dp),
  // the dense ones' over every replica (dp x ep).
  LayoutOptions l = ep4;
  l.ep = 2;
  l.dp = 2;
  l.tp = 2;
  l.zero = 2;
  s = modelShareOf(l);
  EXPECT_EQ(s.by, "--tp 2 --ep 2 --zero 2 over 4 replicas (each expert's over its 2 copies)");
  EXPECT_EQ(std::vector<std::uint64_t>({s.valueShards, s.gradientShards, s.expertValueShards, s.expertGradientShards}),
            std::vector<std::uint64_t>({2, 8, 2, 4}));
  const auto part = [](std::uint64_t n, std::uint64_t shards) { return (4 * n + shards - 1) / shards; };
  const std::uint64_t zero2 = part(all - experts, 2) + part(all - experts, 8) + part(experts, 2) + part(experts, 4);
  EXPECT_NO_THROW(checkModelFits(moe, zero2, "x", s));
  EXPECT_THROW(checkModelFits(moe, zero2 - 1, "x", s), UsageError);
}

TEST(ModelBounds, AShapeBeyondRangeIsRefusedAsItIsSet) {
  ModelConfig gpt = modelPreset(ModelKind::kTransformer, "tiny");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(gpt, "layers=2147483648"); }),
            "--set layers=2147483648: out of range (at most 4096)");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(gpt, "vocab=16777217"); }),
            "--set vocab=16777217: out of range (at most 16777216)");
  EXPECT_NO_THROW(applyModelOverride(gpt, "layers=4096"));
  ModelConfig mlp = modelPreset(ModelKind::kMlp, "tiny");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(mlp, "width=1048577"); }),
            "--set width=1048577: out of range (at most 1048576)");
  ModelConfig cnn = modelPreset(ModelKind::kCnn, "tiny");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(cnn, "blocks=1,4097"); }),
            "--set blocks=1,4097: out of range (at most 4096 each)");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(cnn, "widths=1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"); }),
            "--set widths=1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1: more than 16 stages");
}

// The model's closed choices are enums (model.h): an unknown word is refused where it is set, naming the choices, and the
// record's config names the choice.
TEST(ModelBounds, AClosedChoiceIsRefusedAsItIsSet) {
  ModelConfig mlp = modelPreset(ModelKind::kMlp, "tiny");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(mlp, "activation=tanh"); }), "mlp: activation 'tanh' is not relu or gelu");
  applyModelOverride(mlp, "activation=gelu");
  EXPECT_EQ(mlp.toJson().at("activation"), "gelu");
  ModelConfig cnn = modelPreset(ModelKind::kCnn, "tiny");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(cnn, "stem=mnist"); }), "cnn: stem 'mnist' is not cifar or imagenet");
  EXPECT_EQ(test::usageError([&] { applyModelOverride(cnn, "layout=chwn"); }), "cnn: layout 'chwn' is not auto, nchw or nhwc");
  EXPECT_EQ(cnn.toJson().at("stem"), "cifar");
  EXPECT_EQ(modelPreset(ModelKind::kCnn, "resnet18").toJson().at("stem"), "imagenet");
}

}  // namespace
}  // namespace ts::wl
