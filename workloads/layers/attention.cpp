#include "workloads/layers/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/ops.h"

namespace ts::wl {

CausalSelfAttention::CausalSelfAttention(Arena& arena, const Init& init, const std::string& name, std::int64_t batch, std::int64_t seq,
                                         std::int64_t channels, std::int64_t heads, double initStd, double projStd)
    : B_(batch), T_(seq), C_(channels), NH_(heads), D_(channels / heads),
      qkv_(arena, init, name + ".qkv", batch * seq, channels, 3 * channels, true, initStd),
      proj_(arena, init, name + ".proj", batch * seq, channels, channels, true, projStd),
      q_(arena.tensor({B_, NH_, T_, D_})), k_(arena.tensor({B_, NH_, T_, D_})), v_(arena.tensor({B_, NH_, T_, D_})),
      att_(arena.tensor({B_, NH_, T_, T_})), merged_(arena.tensor({B_ * T_, C_})), dq_(arena.tensor({B_, NH_, T_, D_})),
      dk_(arena.tensor({B_, NH_, T_, D_})), dv_(arena.tensor({B_, NH_, T_, D_})), datt_(arena.tensor({B_, NH_, T_, T_})),
      dscores_(arena.tensor({B_, NH_, T_, T_})), dqkv_(arena.tensor({B_ * T_, 3 * C_})) {}

double CausalSelfAttention::forwardFlops() const { return qkv_.forwardFlops() + proj_.forwardFlops() + 4.0 * B_ * NH_ * T_ * T_ * D_; }

const Tensor& CausalSelfAttention::forward(const Tensor& x, StepContext& ctx) {
  const Tensor& qkv = qkv_.forward(x, ctx);  // [B*T, 3C]: q | k | v, head h at columns h*D ..
  const int T = static_cast<int>(T_), D = static_cast<int>(D_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  for (std::int64_t b = 0; b < B_; ++b)
    for (std::int64_t h = 0; h < NH_; ++h) {
      const std::size_t head = static_cast<std::size_t>((b * NH_ + h) * T_ * D_);
      for (std::int64_t t = 0; t < T_; ++t) {
        const float* row = qkv.data + (b * T_ + t) * 3 * C_ + h * D_;
        for (std::int64_t d = 0; d < D_; ++d) {
          q_.data[head + t * D_ + d] = row[d];
          k_.data[head + t * D_ + d] = row[C_ + d];
          v_.data[head + t * D_ + d] = row[2 * C_ + d];
        }
      }
      float* att = att_.data + (b * NH_ + h) * T_ * T_;
      // scores = q k^T / sqrt(D), then the causal softmax in place.
      cpu::gemm(false, true, T, T, D, scale, q_.data + head, D, k_.data + head, D, 0.0f, att, T);
      cpu::softmaxForward(att, att, T_, T_, T_);
      // out = att v, written straight into the merged [B*T, C] layout (row stride C).
      cpu::gemm(false, false, T, D, T, 1.0f, att, T, v_.data + head, D, 0.0f, merged_.data + b * T_ * C_ + h * D_, static_cast<int>(C_));
    }
  return proj_.forward(merged_, ctx);
}

const Tensor& CausalSelfAttention::backward(const Tensor& dy, StepContext& ctx) {
  const Tensor& dmerged = proj_.backward(dy, ctx);
  const int T = static_cast<int>(T_), D = static_cast<int>(D_), C = static_cast<int>(C_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D_));
  for (std::int64_t b = 0; b < B_; ++b)
    for (std::int64_t h = 0; h < NH_; ++h) {
      const std::size_t head = static_cast<std::size_t>((b * NH_ + h) * T_ * D_);
      const float* att = att_.data + (b * NH_ + h) * T_ * T_;
      float* datt = datt_.data + (b * NH_ + h) * T_ * T_;
      float* dscores = dscores_.data + (b * NH_ + h) * T_ * T_;
      const float* dout = dmerged.data + b * T_ * C_ + h * D_;  // [T, D] with row stride C
      // out = att v:  datt = dout v^T,  dv = att^T dout.
      cpu::gemm(false, true, T, T, D, 1.0f, dout, C, v_.data + head, D, 0.0f, datt, T);
      cpu::gemm(true, false, T, D, T, 1.0f, att, T, dout, C, 0.0f, dv_.data + head, D);
      // Softmax backward (masked entries have att = 0, so they get no gradient), then the scale.
      std::fill(dscores, dscores + T_ * T_, 0.0f);
      cpu::softmaxBackward(dscores, datt, att, T_, T_);
      // scores = scale q k^T:  dq = scale dscores k,  dk = scale dscores^T q.
      cpu::gemm(false, false, T, D, T, scale, dscores, T, k_.data + head, D, 0.0f, dq_.data + head, D);
      cpu::gemm(true, false, T, D, T, scale, dscores, T, q_.data + head, D, 0.0f, dk_.data + head, D);
      for (std::int64_t t = 0; t < T_; ++t) {
        float* row = dqkv_.data + (b * T_ + t) * 3 * C_ + h * D_;
        for (std::int64_t d = 0; d < D_; ++d) {
          row[d] = dq_.data[head + t * D_ + d];
          row[C_ + d] = dk_.data[head + t * D_ + d];
          row[2 * C_ + d] = dv_.data[head + t * D_ + d];
        }
      }
    }
  return qkv_.backward(dqkv_, ctx);
}

void CausalSelfAttention::params(std::vector<Param*>& out) {
  qkv_.params(out);
  proj_.params(out);
}

}  // namespace ts::wl
