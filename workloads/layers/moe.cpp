#include "workloads/layers/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"

namespace ts::wl {

std::int64_t moeCapacity(const MoeSettings& s, std::int64_t tokens) {
  if (s.capacityFactor <= 0) return tokens;
  const double c = std::ceil(s.capacityFactor * static_cast<double>(tokens * s.topK) / static_cast<double>(s.experts));
  return std::min(tokens, static_cast<std::int64_t>(c));
}

double MoeStats::imbalance() const {
  if (routed.empty() || assignments == 0) return 0;
  const double mean = static_cast<double>(assignments) / static_cast<double>(routed.size());
  return static_cast<double>(*std::max_element(routed.begin(), routed.end())) / mean;
}

MixtureOfExperts::MixtureOfExperts(Arena& arena, const Init& init, const std::string& name, const MoeConfig& c)
    : name_(name),
      N_(c.rows),
      C_(c.channels),
      E_(c.settings.experts),
      k_(c.settings.topK),
      capacity_(moeCapacity(c.settings, c.rows)),
      ep_(c.settings.ep),
      localExperts_(c.settings.experts / std::max(1, c.settings.ep.ranks)),
      firstExpert_(c.settings.ep.rank * localExperts_),
      settings_(c.settings),
      router_(arena, init, name + ".router",
              {.rows = c.rows, .in = c.channels, .out = c.settings.experts, .bias = false, .initStd = 0.02}) {
  if (E_ < 1 || (k_ != 1 && k_ != 2) || k_ > E_)
    throw Error(fmt::format("internal: a mixture of {} experts with top-{} routing", E_, k_));
  if (ep_.ranks < 1 || E_ % ep_.ranks || ep_.rank < 0 || ep_.rank >= ep_.ranks)
    throw Error(fmt::format("internal: {} experts on expert-parallel rank {} of {}", E_, ep_.rank, ep_.ranks));
  // An expert's buffer: `capacity` rows from each expert-parallel rank.
  const std::int64_t expertRowsEach = capacity_ * ep_.ranks;
  for (std::int64_t e = firstExpert_; e < firstExpert_ + localExperts_; ++e) {
    experts_.push_back(
        std::make_unique<FeedForward>(arena, init, fmt::format("{}.experts.{}", name, e),
                                      FeedForwardConfig{.rows = expertRowsEach, .channels = C_, .projStd = c.projStd}));
    std::vector<Param*> own;
    experts_.back()->params(own);
    for (Param* p : own) p->expert = true;
  }
  allocate(arena);
}

void MixtureOfExperts::allocate(Arena& arena) {
  const std::int64_t expertRowsEach = capacity_ * ep_.ranks;
  if (settings_.routerSkew != 0) {
    skew_ = arena.state({E_});
    std::vector<float> offsets(static_cast<std::size_t>(E_));
    for (std::int64_t e = 0; e < E_; ++e)
      offsets[static_cast<std::size_t>(e)] = static_cast<float>(settings_.routerSkew * double(E_ - 1 - e));
    skew_.fromHost(offsets);
    skewed_ = arena.tensor({N_, E_});
  }
  probs_ = arena.tensor({N_, E_});
  dprobs_ = arena.tensor({N_, E_});
  dlogits_ = arena.tensor({N_, E_});
  gate_ = arena.tensor({N_, k_});
  dgate_ = arena.tensor({N_, k_});
  probSum_ = arena.tensor({E_});
  auxGrad_ = arena.tensor({E_});
  inBuf_ = arena.tensor({E_ * capacity_, C_});
  outBuf_ = arena.tensor({E_ * capacity_, C_});
  dOutBuf_ = arena.tensor({E_ * capacity_, C_});
  dInBuf_ = arena.tensor({E_ * capacity_, C_});
  if (expertParallel()) {
    sendBuf_ = arena.tensor({E_ * capacity_, C_});
    recvBuf_ = arena.tensor({E_ * capacity_, C_});
    expIn_ = arena.tensor({localExperts_ * expertRowsEach, C_});
    expDOut_ = arena.tensor({localExperts_ * expertRowsEach, C_});
    for (std::int64_t l = 0; l < localExperts_; ++l) {
      expInRows_.push_back(Tensor{expIn_.data + l * expertRowsEach * C_, {expertRowsEach, C_}, expIn_.device});
      expDOutRows_.push_back(Tensor{expDOut_.data + l * expertRowsEach * C_, {expertRowsEach, C_}, expDOut_.device});
    }
  } else {
    for (std::int64_t e = 0; e < E_; ++e) {
      inRows_.push_back(expertRows(inBuf_, e));
      dOutRows_.push_back(expertRows(dOutBuf_, e));
    }
  }
  y_ = arena.tensor({N_, C_});
  dxExperts_ = arena.tensor({N_, C_});
  dx_ = arena.tensor({N_, C_});
  expert_ = arena.ints(static_cast<std::size_t>(N_ * k_));
  slot_ = arena.ints(static_cast<std::size_t>(N_ * k_));
  routed_ = arena.ints(static_cast<std::size_t>(E_));
  lastRouted_.assign(static_cast<std::size_t>(E_), 0);
  lastProbSum_.assign(static_cast<std::size_t>(E_), 0);
  stats_.routed.assign(static_cast<std::size_t>(E_), 0);
}

Tensor MixtureOfExperts::expertRows(const Tensor& all, std::int64_t e) const {
  return Tensor{all.data + e * capacity_ * C_, {capacity_, C_}, all.device};
}

const Tensor& MixtureOfExperts::forward(const Tensor& x, StepContext& ctx) {
  Device& d = *y_.device;
  const auto N = static_cast<std::size_t>(N_), E = static_cast<std::size_t>(E_), k = static_cast<std::size_t>(k_),
             C = static_cast<std::size_t>(C_);
  const Tensor* logits = &router_.forward(x, ctx);
  if (skew_.data) {
    ops::biasAdd(d, skewed_.data, logits->data, skew_.data, N, E);
    logits = &skewed_;
  }
  ops::softmaxForward(d, probs_.data, logits->data, N, E, 0);
  ops::moeTopK(d, expert_, gate_.data, probs_.data, N, E, k);
  ops::moeAssign(d, slot_, routed_, expert_, N, k, E, static_cast<std::size_t>(capacity_));
  d.download(lastRouted_.data(), routed_, E * sizeof(int));
  zero(inBuf_);
  ops::moeDispatch(d, inBuf_.data, x.data, slot_, N, k, C);
  if (expertParallel()) {
    planExchanges(ctx);
    toExperts(moeExchangeName(name_, MoeExchange::kDispatch), inBuf_, expInRows_, ctx);
    std::vector<const Tensor*> outs;
    for (std::size_t l = 0; l < experts_.size(); ++l) outs.push_back(&experts_[l]->forward(expInRows_[l], ctx));
    fromExperts(moeExchangeName(name_, MoeExchange::kCombine), outs, outBuf_, ctx);
  } else {
    for (std::int64_t e = 0; e < E_; ++e) {
      const Tensor& out = experts_[static_cast<std::size_t>(e)]->forward(inRows_[static_cast<std::size_t>(e)], ctx);
      copy(expertRows(outBuf_, e), out);
    }
  }
  ops::moeCombine(d, y_.data, outBuf_.data, gate_.data, slot_, N, k, C);
  countRouting(ctx);
  return y_;
}

void MixtureOfExperts::planExchanges(StepContext& ctx) {
  // Every rank's used rows per expert, then the rows each rank sends each rank's experts, and back.
  const auto E = static_cast<std::size_t>(E_), P = static_cast<std::size_t>(ep_.ranks),
             local = static_cast<std::size_t>(localExperts_);
  std::vector<std::int64_t> used(E);
  for (std::size_t e = 0; e < E; ++e) used[e] = std::min<std::int64_t>(lastRouted_[e], capacity_);
  usedAll_ = exchangeOf(ctx).gather(used);
  std::vector<std::uint64_t> rows(P * P, 0);  // rows[s P + d]: what rank s sends the experts of rank d
  for (std::size_t s = 0; s < P; ++s)
    for (std::size_t e = 0; e < E; ++e) rows[s * P + e / local] += static_cast<std::uint64_t>(usedAll_[s * E + e]);
  std::vector<std::uint64_t> back(P * P);
  for (std::size_t s = 0; s < P; ++s)
    for (std::size_t t = 0; t < P; ++t) back[t * P + s] = rows[s * P + t];
  if (ctx.training) {
    stats_.exchangeRows.resize(P * P, 0);
    for (std::size_t i = 0; i < P * P; ++i) stats_.exchangeRows[i] += static_cast<std::int64_t>(rows[i]);
  }
  dispatch_ = std::make_unique<ExchangeMatrix>(ep_.ranks, std::move(rows));
  combine_ = std::make_unique<ExchangeMatrix>(ep_.ranks, std::move(back));
}

void MixtureOfExperts::countRouting(StepContext& ctx) {
  Device& d = *y_.device;
  const auto N = static_cast<std::size_t>(N_), E = static_cast<std::size_t>(E_), k = static_cast<std::size_t>(k_);
  // The auxiliary loss from the routed counts and the probabilities' column sums (E values each to the host).
  zero(probSum_);
  ops::biasBackward(d, probSum_.data, probs_.data, N, E);
  d.download(lastProbSum_.data(), probSum_.data, E * sizeof(float));
  const double assignments = static_cast<double>(N * k);
  double aux = 0;
  for (std::size_t e = 0; e < E; ++e)
    aux += (lastRouted_[e] / assignments) * (static_cast<double>(lastProbSum_[e]) / static_cast<double>(N));
  lastAux_ = settings_.auxCoef * static_cast<double>(E) * aux;
  if (ctx.training) {
    std::int64_t dropped = 0, most = 0;
    for (std::size_t e = 0; e < E; ++e) {
      stats_.routed[e] += lastRouted_[e];
      dropped += std::max<std::int64_t>(0, lastRouted_[e] - capacity_);
      most = std::max<std::int64_t>(most, lastRouted_[e]);
    }
    stats_.assignments += static_cast<std::int64_t>(N * k);
    stats_.dropped += dropped;
    stats_.auxSum += lastAux_;
    stats_.worstImbalance = std::max(stats_.worstImbalance, static_cast<double>(most) * static_cast<double>(E) / assignments);
    ++stats_.forwards;
  }
}

const Tensor& MixtureOfExperts::backward(const Tensor& dy, StepContext& ctx) {
  Device& d = *y_.device;
  const auto N = static_cast<std::size_t>(N_), E = static_cast<std::size_t>(E_), k = static_cast<std::size_t>(k_),
             C = static_cast<std::size_t>(C_);
  zero(dOutBuf_);
  ops::moeCombineBackward(d, dOutBuf_.data, dgate_.data, dy.data, outBuf_.data, gate_.data, slot_, N, k, C);
  if (expertParallel()) {
    toExperts(moeExchangeName(name_, MoeExchange::kCombineBackward), dOutBuf_, expDOutRows_, ctx);
    std::vector<const Tensor*> dins;
    for (std::size_t l = 0; l < experts_.size(); ++l) dins.push_back(&experts_[l]->backward(expDOutRows_[l], ctx));
    fromExperts(moeExchangeName(name_, MoeExchange::kDispatchBackward), dins, dInBuf_, ctx);
  } else {
    for (std::int64_t e = 0; e < E_; ++e) {
      const Tensor& din = experts_[static_cast<std::size_t>(e)]->backward(dOutRows_[static_cast<std::size_t>(e)], ctx);
      copy(expertRows(dInBuf_, e), din);
    }
  }
  ops::moeDispatchBackward(d, dxExperts_.data, dInBuf_.data, slot_, N, k, C);
  // d aux / d probs[n, e] = coef E f_e / N, f_e = routed_e / (N k), scaled as the model's loss.
  std::vector<float> auxGrad(E);
  for (std::size_t e = 0; e < E; ++e)
    auxGrad[e] = static_cast<float>(static_cast<double>(ctx.lossScale) * settings_.auxCoef * static_cast<double>(E) *
                                    (lastRouted_[e] / static_cast<double>(N * k)) / static_cast<double>(N));
  auxGrad_.fromHost(auxGrad);
  ops::moeGateBackward(d, dprobs_.data, dgate_.data, probs_.data, expert_, auxGrad_.data, N, E, k);
  zero(dlogits_);
  ops::softmaxBackward(d, dlogits_.data, dprobs_.data, probs_.data, N, E);
  const Tensor& dxRouter = router_.backward(dlogits_, ctx);
  ops::residualAdd(d, dx_.data, dxExperts_.data, dxRouter.data, N * C);
  return dx_;
}

namespace {

// n rows of a [rows, C] tensor from row `from`.
Tensor rowsOf(const Tensor& t, std::int64_t from, std::int64_t n) {
  const std::int64_t C = t.shape.back();
  return Tensor{t.data + from * C, {n, C}, t.device};
}

}  // namespace

ExpertExchange& MixtureOfExperts::exchangeOf(StepContext& ctx) const {
  if (!ctx.experts || ctx.experts->ranks() != ep_.ranks || ctx.experts->rank() != ep_.rank)
    throw Error(fmt::format("internal: {} runs on expert-parallel rank {} of {} without that group's exchange", name_, ep_.rank,
                            ep_.ranks));
  return *ctx.experts;
}

void MixtureOfExperts::forEachTokenBlock(const TokenBlock& block) const {
  std::int64_t at = 0;
  for (std::int64_t e = 0; e < E_; ++e)
    if (const std::int64_t n = usedAll_[static_cast<std::size_t>(ep_.rank * E_ + e)]; n > 0) {
      block(at, e, n);
      at += n;
    }
}

void MixtureOfExperts::forEachExpertBlock(const ExpertBlock& block) const {
  std::int64_t at = 0;
  for (std::int64_t s = 0; s < ep_.ranks; ++s)
    for (std::int64_t l = 0; l < localExperts_; ++l)
      if (const std::int64_t n = usedAll_[static_cast<std::size_t>(s * E_ + firstExpert_ + l)]; n > 0) {
        block(at, s, l, n);
        at += n;
      }
}

void MixtureOfExperts::toExperts(const std::string& what, const Tensor& tokenSide, const std::vector<Tensor>& expertSide,
                                 StepContext& ctx) {
  forEachTokenBlock([&](std::int64_t at, std::int64_t e, std::int64_t n) {
    copy(rowsOf(sendBuf_, at, n), rowsOf(tokenSide, e * capacity_, n));
  });
  sendBuf_.device->synchronize();  // the communicator's stream must see the packed rows
  exchangeOf(ctx).exchange(what, sendBuf_.data, recvBuf_.data, *dispatch_, static_cast<std::size_t>(C_));
  for (const Tensor& t : expertSide) zero(t);
  forEachExpertBlock([&](std::int64_t at, std::int64_t s, std::int64_t l, std::int64_t n) {
    copy(rowsOf(expertSide[static_cast<std::size_t>(l)], s * capacity_, n), rowsOf(recvBuf_, at, n));
  });
}

void MixtureOfExperts::fromExperts(const std::string& what, const std::vector<const Tensor*>& expertSide, const Tensor& tokenSide,
                                   StepContext& ctx) {
  forEachExpertBlock([&](std::int64_t at, std::int64_t s, std::int64_t l, std::int64_t n) {  // back as they came
    copy(rowsOf(recvBuf_, at, n), rowsOf(*expertSide[static_cast<std::size_t>(l)], s * capacity_, n));
  });
  recvBuf_.device->synchronize();
  exchangeOf(ctx).exchange(what, recvBuf_.data, sendBuf_.data, *combine_, static_cast<std::size_t>(C_));
  forEachTokenBlock([&](std::int64_t at, std::int64_t e, std::int64_t n) {
    copy(rowsOf(tokenSide, e * capacity_, n), rowsOf(sendBuf_, at, n));
  });
}

std::int64_t MixtureOfExperts::balancedRowsPerPair() const {
  const std::int64_t perExpert = (N_ * k_ + E_ - 1) / E_;
  return std::min(perExpert, capacity_) * localExperts_;
}

void MixtureOfExperts::groupSums(LayerSums& out) const {
  // Nothing without expert parallelism: the router and the experts are whole on every tensor-parallel rank (no sums).
  if (!expertParallel()) return;
  // forward: the counts' all-gather, dispatch, combine; backward: combine's gradient, then dispatch's.
  const GroupSum counts{SumGroup::kExpertCounts, static_cast<std::size_t>(E_)},
      rows{SumGroup::kExpertExchange, static_cast<std::size_t>(balancedRowsPerPair() * C_)};
  out.forward.insert(out.forward.end(), {counts, rows, rows});
  out.backward.insert(out.backward.end(), {rows, rows});
}

std::string moeExchangeName(const std::string& layer, MoeExchange e) { return layer + " " + std::string(nameOf(e)); }

std::vector<int> MixtureOfExperts::lastSlots() const {
  std::vector<int> out(static_cast<std::size_t>(N_ * k_));
  y_.device->download(out.data(), slot_, out.size() * sizeof(int));
  return out;
}

void MixtureOfExperts::params(std::vector<Param*>& out) {
  router_.params(out);
  for (auto& e : experts_) e->params(out);
}

double MixtureOfExperts::forwardFlops() const {
  // Each token through k experts: k N / (its buffer's rows) of one expert's FLOPs.
  const double perToken = experts_.front()->forwardFlops() / static_cast<double>(capacity_ * ep_.ranks);
  return router_.forwardFlops() + static_cast<double>(N_ * k_) * perToken;
}

}  // namespace ts::wl
