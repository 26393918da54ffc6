#include "bench/train/train_breakdown.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "comm/bootstrap.h"

namespace ts {

Stats usSummary(const std::vector<double>& seconds) {
  std::vector<double> us;
  for (double s : seconds) us.push_back(s * 1e6);
  return summarize(us);
}

nlohmann::json usStats(const std::vector<double>& seconds) { return toJson(usSummary(seconds)); }

std::optional<double> overlapOf(double communicationS, double exposedS) {
  if (!(communicationS > 0)) return std::nullopt;
  return std::clamp(1.0 - exposedS / communicationS, 0.0, 1.0);
}

double RankRow::idle() const { return std::max(0.0, step - compute - data - sync); }

void RankSteps::add(const wl::StepResult& r) {
  total.push_back(r.totalS);
  data.push_back(r.dataS);
  forward.push_back(r.forwardS);
  backward.push_back(r.backwardS);
  forwardCompute.push_back(std::max(0.0, r.forwardS - r.forwardCommS));
  backwardCompute.push_back(std::max(0.0, r.backwardS - r.backwardCommS));
  sync.push_back(r.syncS);
  optimizer.push_back(r.optimizerS);
  communication.push_back(r.comm.communicationS);
  exposed.push_back(r.comm.exposedS);
  pipelineWait.push_back(r.pipelineWaitS);
  for (wl::CollectiveTiming c : r.comm.collectives) {
    c.step = static_cast<std::int64_t>(total.size()) - 1;
    collectives.push_back(c);
  }
}

namespace {

double median(std::vector<double> v) { return v.empty() ? 0.0 : summarize(std::move(v)).median; }

// Every rank's place and per-step series, gathered in one block: every rank trained the same steps, so
// the series line up.
class GatheredSteps {
 public:
  enum Series {
    kTotal,
    kData,
    kForward,
    kBackward,
    kSync,
    kOptimizer,
    kCommunication,
    kExposed,
    kPipelineWait,
    kWaiting,
    kTransfer,
    kForwardCompute,
    kBackwardCompute
  };

  GatheredSteps(Bootstrap& boot, const wl::Mesh& mesh, const wl::RankWork& work, const RankSteps& mine,
                const std::vector<double>& waiting, const std::vector<double>& transfer)
      : axes_(mesh.axes().size()), steps_(mine.total.size()) {
    // Each rank's block: its coordinates, its work, then its series.
    std::vector<double> block;
    for (const wl::MeshAxis& a : mesh.axes()) block.push_back(a.coordinate);
    block.insert(block.end(), {work.forwardFlops, work.recomputeFlops, work.updatedElements});
    for (const auto* s :
         {&mine.total, &mine.data, &mine.forward, &mine.backward, &mine.sync, &mine.optimizer, &mine.communication, &mine.exposed,
          &mine.pipelineWait, &waiting, &transfer, &mine.forwardCompute, &mine.backwardCompute})
      block.insert(block.end(), s->begin(), s->end());
    per_ = block.size();
    all_ = boot.allGatherDoubles(block);
  }
  int ranks() const { return static_cast<int>(all_.size() / per_); }
  std::size_t steps() const { return steps_; }
  std::vector<double> series(int rank, Series k) const {
    const double* base =
        all_.data() + static_cast<std::size_t>(rank) * per_ + axes_ + kWork + static_cast<std::size_t>(k) * steps_;
    return std::vector<double>(base, base + steps_);
  }
  double medianOf(int rank, Series k) const { return steps_ == 0 ? 0.0 : summarize(series(rank, k)).median; }
  wl::RankWork work(int rank) const {
    const double* w = all_.data() + static_cast<std::size_t>(rank) * per_ + axes_;
    return {w[0], w[1], w[2]};
  }
  std::vector<int> coordinates(int rank) const {
    std::vector<int> out;
    for (std::size_t a = 0; a < axes_; ++a) out.push_back(static_cast<int>(all_[static_cast<std::size_t>(rank) * per_ + a]));
    return out;
  }

 private:
  static constexpr std::size_t kWork = 3;  // wl::RankWork's three
  std::size_t axes_, steps_, per_ = 0;
  std::vector<double> all_;
};

RankRow rowOf(const GatheredSteps& g, int rank) {
  using S = GatheredSteps;
  RankRow r;
  r.rank = rank;
  r.coordinates = g.coordinates(rank);
  r.work = g.work(rank);
  r.step = g.medianOf(rank, S::kTotal);
  r.data = g.medianOf(rank, S::kData);
  r.forward = g.medianOf(rank, S::kForward);
  r.backward = g.medianOf(rank, S::kBackward);
  r.optimizer = g.medianOf(rank, S::kOptimizer);
  r.forwardCompute = g.medianOf(rank, S::kForwardCompute);
  r.backwardCompute = g.medianOf(rank, S::kBackwardCompute);
  r.compute = r.forward + r.backward + r.optimizer;
  r.sync = g.medianOf(rank, S::kSync);
  r.communication = g.medianOf(rank, S::kCommunication);
  r.exposed = g.medianOf(rank, S::kExposed);
  r.pipelineWait = g.medianOf(rank, S::kPipelineWait);
  r.waiting = r.exposed * waitingShare(g.series(rank, S::kWaiting), g.series(rank, S::kExposed));
  r.transfer = r.exposed - r.waiting;
  return r;
}

// Per step, the slowest rank's time; and the median over the steps of how much faster the fastest was.
void stepTimes(const GatheredSteps& g, TrainBreakdown& out) {
  const std::size_t n = g.steps();
  out.stepSeconds.assign(n, 0.0);
  std::vector<double> fastest(n, 1e300), spread(n, 0.0);
  for (int p = 0; p < g.ranks(); ++p) {
    const std::vector<double> total = g.series(p, GatheredSteps::kTotal);
    for (std::size_t i = 0; i < n; ++i) {
      out.stepSeconds[i] = std::max(out.stepSeconds[i], total[i]);
      fastest[i] = std::min(fastest[i], total[i]);
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    spread[i] = out.stepSeconds[i] > 0 ? (out.stepSeconds[i] - fastest[i]) / out.stepSeconds[i] : 0.0;
  out.rankSpread = median(spread);
}

// Process 0's own view of the collectives: per group kind and (op, bytes), their times and achieved
// bandwidth, each with its own group's bus factor. The same op and size in different groups are
// different rows (a tensor-parallel all-reduce and a data-parallel one cross other links).
std::vector<CollectiveRow> collectiveRows(const wl::Mesh& mesh, const std::vector<wl::CollectiveTiming>& mine,
                                          const std::vector<double>& lastArrivalS) {
  using Key = std::tuple<wl::AxisSet, int, wl::TrackedOp, std::size_t>;
  std::map<Key, std::pair<std::vector<double>, std::vector<double>>> byRow;  // (launch to end, transfer)
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const wl::CollectiveTiming& c = mine[i];
    auto& [seconds, transfer] = byRow[{c.group.axes, mesh.size(c.group.axes), c.op, c.bytes}];
    seconds.push_back(c.seconds);
    transfer.push_back(wl::transferSeconds(c, lastArrivalS[i]));
  }
  auto gbps = [](std::size_t bytes, double s) { return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0.0; };
  std::vector<CollectiveRow> rows;
  for (auto& [key, series] : byRow) {
    const auto& [kind, groupSize, op, bytes] = key;
    const double algbw = gbps(bytes, median(series.first));
    const double bus = op.busFactor(groupSize);
    const double transferBus = gbps(bytes, median(series.second)) * bus;
    rows.push_back(
        {kind, groupSize, op, bytes, std::move(series.first), std::move(series.second), algbw, algbw * bus, transferBus});
  }
  return rows;
}

}  // namespace

TrainBreakdown gatherBreakdown(Bootstrap& boot, const wl::Mesh& mesh, const wl::RankWork& work, const RankSteps& mine) {
  // Every rank's launches first: each rank splits its own exposed time with them before the steps are gathered.
  const std::vector<RankLaunches> launches =
      boot.size() > 1 ? gatherLaunches(boot, mine.collectives, mine.originS) : std::vector<RankLaunches>{};
  const PeerWaits waits = peerWaits(mine.collectives, launches, boot.rank(), mine.total.size());
  TrainBreakdown out;
  out.waitingSeconds = waits.waitingS;
  for (std::size_t i = 0; i < mine.exposed.size(); ++i)
    out.transferSeconds.push_back(std::max(0.0, mine.exposed[i] - out.waitingSeconds[i]));
  const GatheredSteps gathered(boot, mesh, work, mine, out.waitingSeconds, out.transferSeconds);
  stepTimes(gathered, out);
  std::vector<double> bubbles;
  for (int p = 0; p < gathered.ranks(); ++p) {
    out.ranks.push_back(rowOf(gathered, p));
    if (out.ranks.back().step > 0) bubbles.push_back(out.ranks.back().pipelineWait / out.ranks.back().step);
  }
  out.collectives = collectiveRows(mesh, mine.collectives, waits.lastArrivalS);
  if (mesh.size(wl::GroupKind::kPp) > 1) out.measuredBubble = median(bubbles);
  // Late means late enough to matter: by more than 1 ms and 5% of the step.
  if (boot.size() > 1) out.stragglers = analyzeArrivalSkew(launches, std::max(1.0, 0.05 * median(out.stepSeconds) * 1e3));
  return out;
}

}  // namespace ts
