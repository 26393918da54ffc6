// Transformer: a GPT-style decoder. Token and position embeddings (wte [V, C], wpe [T, C]), `layers`
// pre-layernorm blocks, a final layernorm and an LM head (untied from wte, so each is its own tensor in
// checkpoints), cross-entropy on the next token at every position.
// Parameters: V C + T C + L (12 C^2 + 13 C) + 2 C + C V; with E experts (layers/moe.h) each block's MLP is E MLPs
// and a router: L (4 C^2 + 8 C + E (8 C^2 + 6 C)) for the blocks.
// Tensor parallel: each block split by heads and MLP columns (transformer_block.h; a mixture of experts is whole on
// every rank, moe.h); the embeddings, the final layernorm and the LM head are replicated (Megatron also splits the
// vocabulary; not here).
// Forward FLOPs per sequence batch: L (24 B T C^2 + 4 B T^2 C) + 2 B T C V (the LM head); with experts a block's
// 16 B T C^2 of MLP is k of them per token and the router's 2 B T C E (layers/moe.h).
#include "workloads/batch_staging.h"
#include "workloads/device_ops.h"
#include "workloads/layers/linear.h"
#include "workloads/layers/normalization.h"
#include "workloads/layers/transformer_block.h"
#include "workloads/mixed_precision.h"
#include "workloads/models/model.h"

#include <optional>

#include <fmt/format.h>

#include "base/error.h"

namespace ts::wl {
namespace {

class Transformer final : public Model {
 public:
  Transformer(const ModelConfig& c, std::int64_t batch, Device& device, TensorParallel tp)
      : Model(c, device),
        B_(batch),
        T_(c.seqLen),
        C_(c.hidden),
        V_(c.vocab),
        wte_(makeParam(arena_, "wte.weight", {V_, C_}, true, Init(c.seed).normal(0.02))),
        wpe_(makeParam(arena_, "wpe.weight", {T_, C_}, true, Init(c.seed).normal(0.01))),
        x0_(arena_.tensor({B_ * T_, C_})) {
    const Init init(c.seed);
    leading_ = {&wte_, &wpe_};
    if (c.dropout > 0)
      add(std::make_unique<Dropout>(
          arena_, "drop", DropoutConfig{.seed = c.seed, .p = c.dropout, .rows = B_ * T_, .cols = C_, .rowsPerSample = T_}));
    for (std::int64_t l = 0; l < c.layers; ++l) {
      const TransformerBlockConfig block{.batch = B_,
                                         .seq = T_,
                                         .channels = C_,
                                         .heads = c.heads,
                                         .layers = c.layers,
                                         .tpRank = tp.rank,
                                         .tpRanks = tp.ranks,
                                         .dropout = c.dropout,
                                         .seed = c.seed,
                                         .scores = c.recompute == Recompute::kSelective ? scorePool() : nullptr,
                                         .moe = c.moe};
      const std::function<std::unique_ptr<Layer>()> build = [&] {
        auto built = std::make_unique<TransformerBlock>(arena_, init, "h." + std::to_string(l), block);
        if (built->moe()) moes_.push_back(built->moe());
        return built;
      };
      if (c.recompute != Recompute::kFull) {
        add(build());
        continue;
      }
      addRecomputedUnit({.index = static_cast<std::size_t>(l), .inShape = {B_ * T_, C_}, .outShape = {B_ * T_, C_}}, build);
    }
    add(std::make_unique<LayerNorm>(arena_, "ln_f", B_ * T_, C_));
    add(std::make_unique<Linear>(arena_, init, "lm_head",
                                 LinearConfig{.rows = B_ * T_, .in = C_, .out = V_, .bias = false, .initStd = 0.02}));
    beginTail();
    loss_ = std::make_unique<CrossEntropy>(arena_, B_ * T_, V_);
    tokens_ = arena_.ints(static_cast<std::size_t>(B_ * T_));
  }

  const Tensor& embed(const data::Batch& batch, StepContext&) override {
    if (batch.size() != B_ || batch.tokens.size() != static_cast<std::size_t>(B_ * T_))
      throw Error(fmt::format("internal: a batch of {} tokens for a transformer built for {} x {}", batch.tokens.size(), B_, T_));
    for (const std::int32_t t : batch.tokens)
      if (t < 0 || t >= V_) throw UsageError(fmt::format("a token of {} is outside the model's vocabulary of {}", t, V_));
    Device& d = *x0_.device;
    if (const std::optional<StagedRows> staged = stagedRows(d, batch))
      d.copy(tokens_, staged->inputs, batch.tokens.size() * sizeof(int));
    else
      d.upload(tokens_, batch.tokens.data(), batch.tokens.size() * sizeof(int));
    ops::embeddingForward(d, x0_.data, tokens_, wte_.value.data, wpe_.value.data, B_, T_, C_);
    roundTo(compute_, x0_);
    return x0_;
  }

  void embedBackward(const Tensor& dx, StepContext& ctx) override {
    ops::embeddingBackward(*x0_.device, wte_.grad.data, wpe_.grad.data, dx.data, tokens_, B_, T_, C_);
    ctx.ready(wte_);
    ctx.ready(wpe_);
  }

  std::int64_t itemsPerMicroBatch() const override { return B_ * T_; }
  ItemKind itemKind() const override { return ItemKind::kTokens; }
  std::vector<MoeLayerStats> moeStats() const override {
    std::vector<MoeLayerStats> out;
    for (const MixtureOfExperts* m : moes_)
      if (m->stats().forwards > 0) out.push_back(m->layerStats());  // a pipeline's other stages' never run here
    return out;
  }

 private:
  std::int64_t B_, T_, C_, V_;
  Param wte_, wpe_;
  Tensor x0_;
  int* tokens_ = nullptr;
  std::vector<const MixtureOfExperts*> moes_;  // the blocks' mixtures of experts (layer order)
};

}  // namespace

std::unique_ptr<Model> makeTransformer(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp) {
  return std::make_unique<Transformer>(config, batch, device, tp);
}

}  // namespace ts::wl
