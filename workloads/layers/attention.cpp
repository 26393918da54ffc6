#include "workloads/layers/attention.h"

#include <algorithm>
#include <cmath>

#include "workloads/device_ops.h"

namespace ts::wl {

namespace {

// The q, k and v rows of this rank's heads in the [3C, C] qkv weight.
TensorSplit qkvSplit(std::int64_t channels, int rank, int ranks) {
  TensorSplit s{TensorSplit::kColumn, rank, ranks, {}};
  const std::int64_t local = channels / ranks;
  for (int part = 0; part < 3; ++part)
    for (std::int64_t c = 0; c < local; ++c) s.rows.push_back(part * channels + rank * local + c);
  return s;
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(Arena& arena, const Init& init, const std::string& name, const AttentionConfig& c)
    : B_(c.batch),
      T_(c.seq),
      C_(c.channels / c.tpRanks),
      NH_(c.heads / c.tpRanks),
      D_(c.channels / c.heads),
      fullHeads_(c.heads),
      recomputeScores_(c.scores != nullptr),
      qkv_(arena, init, name + ".qkv",
           {.rows = c.batch * c.seq,
            .in = c.channels,
            .out = 3 * c.channels,
            .initStd = c.initStd,
            .split = qkvSplit(c.channels, c.tpRank, c.tpRanks)}),
      proj_(arena, init, name + ".proj",
            {.rows = c.batch * c.seq,
             .in = c.channels,
             .out = c.channels,
             .initStd = c.projStd,
             .split = TensorSplit{TensorSplit::kRow, c.tpRank, c.tpRanks, {}}}),
      q_(arena.tensor({B_, NH_, T_, D_})),
      k_(arena.tensor({B_, NH_, T_, D_})),
      v_(arena.tensor({B_, NH_, T_, D_})),
      o_(arena.tensor({B_, NH_, T_, D_})),
      merged_(arena.tensor({B_ * T_, C_})),
      do_(arena.tensor({B_, NH_, T_, D_})),
      dq_(arena.tensor({B_, NH_, T_, D_})),
      dk_(arena.tensor({B_, NH_, T_, D_})),
      dv_(arena.tensor({B_, NH_, T_, D_})),
      dqkv_(arena.tensor({B_ * T_, 3 * C_})) {
  if (c.scores) c.scores->beginUnit();
  auto scores = [&] { return c.scores ? c.scores->tensor({B_, NH_, T_, T_}) : arena.tensor({B_, NH_, T_, T_}); };
  att_ = scores();
  datt_ = scores();
  dscores_ = scores();
}

double CausalSelfAttention::scoresFlops(std::int64_t heads) const { return 2.0 * B_ * heads * T_ * T_ * D_; }

// The scores q k^T and their product with v: two matmuls of one size.
double CausalSelfAttention::forwardFlops() const {
  return qkv_.forwardFlops() + proj_.forwardFlops() + 2 * scoresFlops(fullHeads_);
}
double CausalSelfAttention::rankForwardFlops() const {
  return qkv_.rankForwardFlops() + proj_.rankForwardFlops() + 2 * scoresFlops(NH_);
}

// Selective recomputation repeats q k^T (the softmax is not counted, as nowhere else).
double CausalSelfAttention::recomputedFlops() const { return recomputeScores_ ? scoresFlops(fullHeads_) : 0; }
double CausalSelfAttention::rankRecomputedFlops() const { return recomputeScores_ ? scoresFlops(NH_) : 0; }

void CausalSelfAttention::scoresForward() {
  Device& d = *q_.device;
  const int T = int(T_), D = int(D_), BH = int(B_ * NH_);
  const std::int64_t sHead = T_ * D_, sAtt = T_ * T_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  ops::gemmStridedBatched(d, false, true, T, T, D, scale, q_.data, D, sHead, k_.data, D, sHead, 0.0f, att_.data, T, sAtt, BH);
  ops::softmaxForward(d, att_.data, att_.data, B_ * NH_ * T_, T_, T_);
}

// Every (batch, head) pair at once: the head permutes, then strided batched GEMMs over B*NH matrices.
const Tensor& CausalSelfAttention::forward(const Tensor& x, StepContext& ctx) {
  Device& d = *q_.device;
  const Tensor& qkv = qkv_.forward(x, ctx);  // [B*T, 3C]: q | k | v, head h at columns h*D ..
  const int B = int(B_), T = int(T_), NH = int(NH_), D = int(D_), C = int(C_), BH = B * NH;
  const std::int64_t sHead = T_ * D_, sAtt = T_ * T_;
  ops::headsFromRows(d, q_.data, qkv.data, B, T, NH, D, 0, 3 * C);
  ops::headsFromRows(d, k_.data, qkv.data, B, T, NH, D, C, 3 * C);
  ops::headsFromRows(d, v_.data, qkv.data, B, T, NH, D, 2 * C, 3 * C);
  scoresForward();  // out = att v
  ops::gemmStridedBatched(d, false, false, T, D, T, 1.0f, att_.data, T, sAtt, v_.data, D, sHead, 0.0f, o_.data, D, sHead, BH);
  ops::rowsFromHeads(d, merged_.data, o_.data, B, T, NH, D, 0, C);
  return proj_.forward(merged_, ctx);
}

const Tensor& CausalSelfAttention::backward(const Tensor& dy, StepContext& ctx) {
  Device& d = *q_.device;
  const Tensor& dmerged = proj_.backward(dy, ctx);
  const int B = int(B_), T = int(T_), NH = int(NH_), D = int(D_), C = int(C_), BH = B * NH;
  const std::int64_t sHead = T_ * D_, sAtt = T_ * T_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  ops::headsFromRows(d, do_.data, dmerged.data, B, T, NH, D, 0, C);
  // Selective recomputation: another block's forward or backward wrote the shared probabilities since ours.
  if (recomputeScores_) scoresForward();
  // out = att v:  datt = dout v^T,  dv = att^T dout.
  ops::gemmStridedBatched(d, false, true, T, T, D, 1.0f, do_.data, D, sHead, v_.data, D, sHead, 0.0f, datt_.data, T, sAtt, BH);
  ops::gemmStridedBatched(d, true, false, T, D, T, 1.0f, att_.data, T, sAtt, do_.data, D, sHead, 0.0f, dv_.data, D, sHead, BH);
  // Softmax backward (masked entries have att = 0, so they get no gradient); it accumulates, so from zero.
  zero(dscores_);
  ops::softmaxBackward(d, dscores_.data, datt_.data, att_.data, B_ * NH_ * T_, T_);
  // scores = scale q k^T:  dq = scale dscores k,  dk = scale dscores^T q.
  ops::gemmStridedBatched(d, false, false, T, D, T, scale, dscores_.data, T, sAtt, k_.data, D, sHead, 0.0f, dq_.data, D, sHead,
                          BH);
  ops::gemmStridedBatched(d, true, false, T, D, T, scale, dscores_.data, T, sAtt, q_.data, D, sHead, 0.0f, dk_.data, D, sHead,
                          BH);
  ops::rowsFromHeads(d, dqkv_.data, dq_.data, B, T, NH, D, 0, 3 * C);
  ops::rowsFromHeads(d, dqkv_.data, dk_.data, B, T, NH, D, C, 3 * C);
  ops::rowsFromHeads(d, dqkv_.data, dv_.data, B, T, NH, D, 2 * C, 3 * C);
  return qkv_.backward(dqkv_, ctx);
}

void CausalSelfAttention::params(std::vector<Param*>& out) {
  qkv_.params(out);
  proj_.params(out);
}

}  // namespace ts::wl
