#pragma once
// A mixture of experts in place of a transformer block's MLP, over x[N, C] (N = batch * seq tokens):
//   router: logits = x Wr^T (Linear C -> E, no bias), probs = softmax(logits) over the E experts;
//   top-k (k = 1 or 2): each token's k most probable experts (ties: the lower index; deterministic), with gates
//     g = p (k = 1, Switch) or p renormalised over the k chosen (k = 2, Mixtral);
//   capacity: each expert takes at most ceil(capacity_factor N k / E) assignments (capacity_factor <= 0: no limit),
//     first come first served: every token's first choice in token order, then the second choices (GShard's and
//     Switch's priority: a second choice never displaces a first one). A dropped assignment adds nothing (the
//     block's residual carries the token);
//   experts: E FeedForward MLPs (fc C -> 4C, GELU, proj 4C -> C: the dense block's), each run on its buffer of
//     `capacity` rows (GShard's static shapes: no host round trip decides a GEMM's size; unused rows are zero and
//     their gradient is zero);
//   combine: y[n] = sum over n's kept choices of g * expert(x[n]).
// Expert parallel (MoeSettings::ep, ranks P): a rank holds E / P experts, contiguous, and routes its own tokens as
// above; its buffer rows for the experts of rank d go there and back by two alltoallvs over the expert-parallel group
// (StepContext::experts; Megatron's all-to-all token dispatcher), of the used rows only (min(routed, capacity) per
// expert, whose counts every rank learns by one all-gather): dispatch before the experts, combine after, and the
// same two in the backward. An expert's buffer holds `capacity` rows from each of the P ranks (its rows from rank s at
// s capacity), so a rank computes E capacity rows whatever P is, and capacity stays per rank's micro-batch.
// A plan of the step (groupSums, train --plan) cannot know the routing, which is the data's: it takes it balanced,
// every rank routing ceil(N k / E) assignments to each expert (the most a balanced expert gets when E does not divide
// N k), so that each pair of ranks exchanges min(that, capacity) rows per expert of the receiver's, E / P experts:
// one uniform exchange (uniformExchange) whose bytes are those a run records when its routing is balanced.
// The auxiliary load-balancing loss (Switch, Megatron): aux = coef E sum_e f_e P_e, f_e the fraction of the N k
// assignments routed to e (before dropping), P_e the mean router probability of e. Its gradient coef E f_e / N on
// every probs[n, e] (f_e is a count: not differentiated) joins the gates' in the router's backward, scaled as the
// model's loss is (StepContext::lossScale). Differentiated: the experts, the gates (through the softmax into the
// router) and aux through P_e; not: the top-k choice and the capacity's drops. The model's reported loss stays the
// cross-entropy; aux is reported apart (MoeStats), as Megatron logs its load_balancing_loss.
// Forward FLOPs (the model's, Megatron's MoE convention): the router's 2 N C E plus k experts per token,
// k N 2 (2 C 4C), whatever the capacity buffers' padding computes. Tensor parallel: the router and the experts are
// whole on every rank (replicated like the layernorms): no group sums. The experts' parameters are marked
// Param::expert (their copies are the expert-data-parallel group's).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/enum_names.h"
#include "workloads/layers/feed_forward.h"

namespace ts::wl {
// An expert-parallel mixture's four exchanges per training micro-batch, in the order they run: to the experts and
// back in the forward, and the same two in the backward (the gradients' way). moeExchangeName names one for the
// exchanges' stats and trace spans ("h.0.moe dispatch"); the record keys a layer's by nameOf.
enum class MoeExchange { kDispatch, kCombine, kCombineBackward, kDispatchBackward };
}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::MoeExchange> {
  static constexpr std::pair<std::string_view, wl::MoeExchange> kNames[] = {
      {"dispatch", wl::MoeExchange::kDispatch},
      {"combine", wl::MoeExchange::kCombine},
      {"combine_backward", wl::MoeExchange::kCombineBackward},
      {"dispatch_backward", wl::MoeExchange::kDispatchBackward}};
};
}  // namespace ts

namespace ts::wl {

std::string moeExchangeName(const std::string& layer, MoeExchange e);

// This rank's place in the expert-parallel group (--ep): it holds experts [rank E / ranks, (rank + 1) E / ranks).
struct ExpertParallel {
  int rank = 0, ranks = 1;
};

// A model's experts (ModelConfig::moe); experts 0: a dense MLP.
struct MoeSettings {
  std::int64_t experts = 0, topK = 1;
  double capacityFactor = 0;  // <= 0: no capacity limit
  double auxCoef = 0.01;      // the auxiliary loss's coefficient (0: none)
  // A test hook (TRAINSCOPE_FAULT=router): adds routerSkew * (E - 1 - e) to expert e's logit, so that with a large
  // skew every token ranks the experts 0, 1, ... and the imbalance and drops are known exactly. 0: none.
  double routerSkew = 0;
  // Where this rank sits among the expert-parallel ranks: the layout's, not the model's (placeModel sets it).
  ExpertParallel ep = {};
  bool enabled() const { return experts > 0; }
};

// The capacity of each expert for N tokens: ceil(factor N k / E), at most N (a token picks an expert once); N
// without a limit.
std::int64_t moeCapacity(const MoeSettings& s, std::int64_t tokens);

// What a MoE layer measured over the training forwards it counted (not recomputations, not evaluation).
struct MoeStats {
  std::vector<std::int64_t> routed;  // per expert: assignments routed to it, summed over the forwards (before dropping)
  std::int64_t assignments = 0;      // N k summed
  std::int64_t dropped = 0;          // assignments dropped for capacity, summed
  double auxSum = 0;                 // the auxiliary loss (coefficient included), summed
  double worstImbalance = 0;         // the largest max/mean of routed over one forward
  std::int64_t forwards = 0;
  // Expert parallel (P ranks): the rows each rank sent each rank's experts, summed, exchangeRows[s P + d] (every rank
  // learns every rank's counts: the dispatch's matrix, as an alltoallv counts file takes it); empty without.
  std::vector<std::int64_t> exchangeRows;
  // max/mean of `routed` (1: balanced; E / k: every assignment on k experts); 0 before any forward.
  double imbalance() const;
  double meanAux() const { return forwards > 0 ? auxSum / static_cast<double>(forwards) : 0; }
};

// A MoE layer's name ("h.0.moe"), its capacity per micro-batch (assignments per expert) and what it counted.
struct MoeLayerStats {
  std::string name;
  std::int64_t capacity = 0;
  MoeStats stats;
};

struct MoeConfig {
  std::int64_t rows = 0, channels = 0;
  MoeSettings settings = {};
  double projStd = 0.02;  // the experts' residual projections (FeedForwardConfig::projStd)
};

class MixtureOfExperts final : public Layer {
 public:
  // Parameters `name`.router.weight [E, C], `name`.experts.<e>.fc.* and .proj.* (PyTorch's ModuleList naming; the
  // rank's own experts' under expert parallelism, by their index among all E).
  MixtureOfExperts(Arena& arena, const Init& init, const std::string& name, const MoeConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  double forwardFlops() const override;
  void groupSums(LayerSums& out) const override;
  const MoeStats& stats() const { return stats_; }
  MoeLayerStats layerStats() const { return {name_, capacity_, stats_}; }
  // The last forward's (for tests): the auxiliary loss, and each expert's routed count.
  double lastAux() const { return lastAux_; }
  const std::vector<int>& lastRouted() const { return lastRouted_; }
  std::vector<int> lastSlots() const;  // each assignment's row in the experts' buffer, -1 dropped (moeAssign's)
  std::int64_t capacity() const { return capacity_; }

 private:
  Tensor expertRows(const Tensor& all, std::int64_t e) const;  // expert e's rows of a [E capacity, C] buffer
  bool expertParallel() const { return ep_.ranks > 1; }
  void allocate(Arena& arena);  // the activations' and the exchanges' buffers
  // Expert parallel: every rank's used rows per expert (one all-gather), and the dispatch's and combine's matrices.
  void planExchanges(StepContext& ctx);
  // The auxiliary loss of the last forward and, training, its routing counted into stats_.
  void countRouting(StepContext& ctx);
  // The rows each rank sends each rank under balanced routing (the plan's assumption, above).
  std::int64_t balancedRowsPerPair() const;
  // Expert parallel: the used rows of `tokenSide` ([E capacity, C], expert e's at e capacity) to the experts' ranks,
  // into `expertSide` (per local expert: rank s's rows at s capacity), and the way back.
  void toExperts(const std::string& what, const Tensor& tokenSide, const std::vector<Tensor>& expertSide, StepContext& ctx);
  void fromExperts(const std::string& what, const std::vector<const Tensor*>& expertSide, const Tensor& tokenSide,
                   StepContext& ctx);
  ExpertExchange& exchangeOf(StepContext& ctx) const;  // the group's, checked to be this layer's
  // The blocks of rows the exchanges move, in the order they are packed, each with its place in the packed buffer
  // (`at`) and n rows (none empty): this rank's rows for each expert e (token side: destinations in order, since the
  // experts in order are their ranks in order), and each source s's rows for each local expert l (expert side).
  using TokenBlock = std::function<void(std::int64_t at, std::int64_t e, std::int64_t n)>;
  using ExpertBlock = std::function<void(std::int64_t at, std::int64_t s, std::int64_t l, std::int64_t n)>;
  void forEachTokenBlock(const TokenBlock& block) const;
  void forEachExpertBlock(const ExpertBlock& block) const;
  std::string name_;
  std::int64_t N_, C_, E_, k_, capacity_;
  ExpertParallel ep_;
  std::int64_t localExperts_, firstExpert_;  // this rank's experts: [firstExpert_, firstExpert_ + localExperts_)
  // Expert parallel, from the last forward: the rows every rank routes to each expert, usedAll_[s E + e] (min(routed,
  // capacity)), and the exchanges' per-pair rows (dispatch: to the experts' ranks; combine: back, its transpose).
  std::vector<std::int64_t> usedAll_;
  std::unique_ptr<ExchangeMatrix> dispatch_, combine_;
  Tensor sendBuf_, recvBuf_;  // [E capacity, C]: the exchanges' packed rows
  Tensor expIn_, expDOut_;    // [local experts x P capacity, C]
  std::vector<Tensor> expInRows_, expDOutRows_;
  MoeSettings settings_;
  Linear router_;
  std::vector<std::unique_ptr<FeedForward>> experts_;
  Tensor skew_;  // [E]: the test hook's logit offsets (empty without)
  Tensor skewed_, probs_, gate_, dgate_, dprobs_, dlogits_, probSum_, auxGrad_;
  Tensor inBuf_, outBuf_, dOutBuf_, dInBuf_;  // [E capacity, C]
  std::vector<Tensor> inRows_, dOutRows_;     // the experts' views (Linear keeps its input's address)
  Tensor y_, dxExperts_, dx_;
  int* expert_ = nullptr;
  int* slot_ = nullptr;
  int* routed_ = nullptr;
  std::vector<int> lastRouted_;
  std::vector<float> lastProbSum_;
  double lastAux_ = 0;
  MoeStats stats_;
};

}  // namespace ts::wl
