#include "workloads/layers/transformer_block.h"

#include <cmath>

#include "workloads/device_ops.h"

namespace ts::wl {

TransformerBlock::TransformerBlock(Arena& arena, const Init& init, const std::string& name, std::int64_t batch, std::int64_t seq,
                                   std::int64_t channels, std::int64_t heads, std::int64_t layers, int tpRank, int tpRanks,
                                   double dropout, std::uint64_t seed)
    : ln1_(arena, name + ".ln_1", batch * seq, channels),
      attn_(arena, init, name + ".attn", batch, seq, channels, heads, 0.02, 0.02 / std::sqrt(2.0 * layers), tpRank, tpRanks),
      ln2_(arena, name + ".ln_2", batch * seq, channels),
      fc_(arena, init, name + ".mlp.fc", batch * seq, channels, 4 * channels, true, 0.02,
          TensorSplit{TensorSplit::kColumn, tpRank, tpRanks, {}}),
      gelu_(arena, ActivationKind::kGelu, {batch * seq, 4 * channels / tpRanks}),
      proj_(arena, init, name + ".mlp.proj", batch * seq, 4 * channels, channels, true, 0.02 / std::sqrt(2.0 * layers),
            TensorSplit{TensorSplit::kRow, tpRank, tpRanks, {}}),
      mid_(arena.tensor({batch * seq, channels})),
      out_(arena.tensor({batch * seq, channels})),
      dmid_(arena.tensor({batch * seq, channels})),
      dx_(arena.tensor({batch * seq, channels})) {
  if (dropout > 0) {
    attnDrop_ = std::make_unique<Dropout>(arena, name + ".attn.dropout", seed, dropout, batch * seq, channels, seq);
    mlpDrop_ = std::make_unique<Dropout>(arena, name + ".mlp.dropout", seed, dropout, batch * seq, channels, seq);
  }
}

const Tensor& TransformerBlock::forward(const Tensor& x, StepContext& ctx) {
  const Tensor* a = &attn_.forward(ln1_.forward(x, ctx), ctx);
  if (attnDrop_) a = &attnDrop_->forward(*a, ctx);
  ops::residualAdd(*out_.device, mid_.data, x.data, a->data, x.numel());
  const Tensor* mp = &proj_.forward(gelu_.forward(fc_.forward(ln2_.forward(mid_, ctx), ctx), ctx), ctx);
  if (mlpDrop_) mp = &mlpDrop_->forward(*mp, ctx);
  const Tensor& m = *mp;
  ops::residualAdd(*out_.device, out_.data, mid_.data, m.data, mid_.numel());
  return out_;
}

const Tensor& TransformerBlock::backward(const Tensor& dy, StepContext& ctx) {
  // out = mid + mlp(mid):  dmid = dy + mlp'(dy).  mid = x + attn(x):  dx = dmid + attn'(dmid).
  const Tensor& dm = ln2_.backward(
      fc_.backward(gelu_.backward(proj_.backward(mlpDrop_ ? mlpDrop_->backward(dy, ctx) : dy, ctx), ctx), ctx), ctx);
  ops::residualAdd(*out_.device, dmid_.data, dy.data, dm.data, dy.numel());
  const Tensor& da = ln1_.backward(attn_.backward(attnDrop_ ? attnDrop_->backward(dmid_, ctx) : dmid_, ctx), ctx);
  ops::residualAdd(*out_.device, dx_.data, dmid_.data, da.data, dmid_.numel());
  return dx_;
}

void TransformerBlock::params(std::vector<Param*>& out) {
  ln1_.params(out);
  attn_.params(out);
  ln2_.params(out);
  fc_.params(out);
  proj_.params(out);
}

}  // namespace ts::wl
