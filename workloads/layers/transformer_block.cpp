#include "workloads/layers/transformer_block.h"

#include <cmath>

#include "workloads/device_ops.h"

namespace ts::wl {

TransformerBlock::TransformerBlock(Arena& arena, const Init& init, const std::string& name, const TransformerBlockConfig& c)
    : ln1_(arena, name + ".ln_1", c.batch * c.seq, c.channels),
      attn_(arena, init, name + ".attn",
            {.batch = c.batch,
             .seq = c.seq,
             .channels = c.channels,
             .heads = c.heads,
             .initStd = 0.02,
             .projStd = 0.02 / std::sqrt(2.0 * c.layers),
             .tpRank = c.tpRank,
             .tpRanks = c.tpRanks,
             .scores = c.scores}),
      ln2_(arena, name + ".ln_2", c.batch * c.seq, c.channels),
      mid_(arena.tensor({c.batch * c.seq, c.channels})),
      out_(arena.tensor({c.batch * c.seq, c.channels})),
      dmid_(arena.tensor({c.batch * c.seq, c.channels})),
      dx_(arena.tensor({c.batch * c.seq, c.channels})) {
  const double projStd = 0.02 / std::sqrt(2.0 * c.layers);
  if (c.moe.enabled()) {
    auto moe = std::make_unique<MixtureOfExperts>(
        arena, init, name + ".moe",
        MoeConfig{.rows = c.batch * c.seq, .channels = c.channels, .settings = c.moe, .projStd = projStd});
    moe_ = moe.get();
    mlp_ = std::move(moe);
  } else {
    mlp_ = std::make_unique<FeedForward>(
        arena, init, name + ".mlp",
        FeedForwardConfig{
            .rows = c.batch * c.seq, .channels = c.channels, .projStd = projStd, .tpRank = c.tpRank, .tpRanks = c.tpRanks});
  }
  if (c.dropout > 0) {
    const DropoutConfig drop{.seed = c.seed, .p = c.dropout, .rows = c.batch * c.seq, .cols = c.channels, .rowsPerSample = c.seq};
    attnDrop_ = std::make_unique<Dropout>(arena, name + ".attn.dropout", drop);
    mlpDrop_ = std::make_unique<Dropout>(arena, name + ".mlp.dropout", drop);
  }
}

const Tensor& TransformerBlock::forward(const Tensor& x, StepContext& ctx) {
  const Tensor* a = &attn_.forward(ln1_.forward(x, ctx), ctx);
  if (attnDrop_) a = &attnDrop_->forward(*a, ctx);
  ops::residualAdd(*out_.device, mid_.data, x.data, a->data, x.numel());
  const Tensor* mp = &mlp_->forward(ln2_.forward(mid_, ctx), ctx);
  if (mlpDrop_) mp = &mlpDrop_->forward(*mp, ctx);
  const Tensor& m = *mp;
  ops::residualAdd(*out_.device, out_.data, mid_.data, m.data, mid_.numel());
  return out_;
}

const Tensor& TransformerBlock::backward(const Tensor& dy, StepContext& ctx) {
  // out = mid + mlp(mid):  dmid = dy + mlp'(dy).  mid = x + attn(x):  dx = dmid + attn'(dmid).
  const Tensor& dm = ln2_.backward(mlp_->backward(mlpDrop_ ? mlpDrop_->backward(dy, ctx) : dy, ctx), ctx);
  ops::residualAdd(*out_.device, dmid_.data, dy.data, dm.data, dy.numel());
  const Tensor& da = ln1_.backward(attn_.backward(attnDrop_ ? attnDrop_->backward(dmid_, ctx) : dmid_, ctx), ctx);
  ops::residualAdd(*out_.device, dx_.data, dmid_.data, da.data, dmid_.numel());
  return dx_;
}

void TransformerBlock::params(std::vector<Param*>& out) {
  ln1_.params(out);
  attn_.params(out);
  ln2_.params(out);
  mlp_->params(out);
}

}  // namespace ts::wl
