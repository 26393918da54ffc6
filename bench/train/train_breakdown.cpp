#include "bench/train/train_breakdown.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "bench/train/arrival_skew.h"
#include "bench/session/stats.h"
#include "comm/bootstrap.h"
#include "comm/collectives/collective.h"

namespace ts {

nlohmann::json usStats(const std::vector<double>& seconds) {
  std::vector<double> us;
  for (double s : seconds) us.push_back(s * 1e6);
  return toJson(summarize(us));
}

namespace {

double median(std::vector<double> v) { return v.empty() ? 0.0 : summarize(std::move(v)).median; }

// One row of the record's collectives: the same op and size in different groups are different rows (a
// tensor-parallel all-reduce and a data-parallel one cross other links, with another bus factor).
struct CollectiveRowKey {
  wl::GroupKind kind;
  int groupSize;
  std::string op;
  std::size_t bytes;
  bool operator<(const CollectiveRowKey& o) const { return std::tie(kind, groupSize, op, bytes) < std::tie(o.kind, o.groupSize, o.op, o.bytes); }
};

}  // namespace

void RankSteps::add(const wl::StepResult& r) {
  total.push_back(r.totalS);
  data.push_back(r.dataS);
  forward.push_back(r.forwardS);
  backward.push_back(r.backwardS);
  sync.push_back(r.syncS);
  optimizer.push_back(r.optimizerS);
  communication.push_back(r.comm.communicationS);
  exposed.push_back(r.comm.exposedS);
  pipelineWait.push_back(r.pipelineWaitS);
  collectives.insert(collectives.end(), r.comm.collectives.begin(), r.comm.collectives.end());
}

TrainBreakdown gatherBreakdown(Bootstrap& boot, const wl::Mesh& mesh, const RankSteps& mine) {
  const int P = boot.size();
  const std::size_t n = mine.total.size();
  // Every rank trained the same steps, so the per-step vectors line up; they travel as one block.
  const std::vector<const std::vector<double>*> series = {&mine.total, &mine.data, &mine.forward, &mine.backward,
                                                          &mine.sync, &mine.optimizer, &mine.communication, &mine.exposed,
                                                          &mine.pipelineWait};
  std::vector<double> block;
  const std::vector<wl::MeshAxis>& axes = mesh.axes();
  for (const wl::MeshAxis& a : axes) block.push_back(a.coordinate);
  for (const auto* s : series) block.insert(block.end(), s->begin(), s->end());
  const std::vector<double> all = boot.allGatherDoubles(block);
  const std::size_t per = block.size();
  auto seriesOf = [&](int rank, std::size_t k) {
    const auto* base = all.data() + static_cast<std::size_t>(rank) * per + axes.size() + k * n;
    return std::vector<double>(base, base + n);
  };

  TrainBreakdown out;
  out.stepSeconds.assign(n, 0.0);
  std::vector<double> spread(n, 0.0), fastest(n, 1e300);
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<double> bubbles;
  for (int p = 0; p < P; ++p) {
    const std::vector<double> total = seriesOf(p, 0);
    for (std::size_t i = 0; i < n; ++i) {
      out.stepSeconds[i] = std::max(out.stepSeconds[i], total[i]);
      fastest[i] = std::min(fastest[i], total[i]);
    }
    const double* place = all.data() + static_cast<std::size_t>(p) * per;
    const double step = median(total), comm = median(seriesOf(p, 6)), exposed = median(seriesOf(p, 7));
    const double compute = median(seriesOf(p, 2)) + median(seriesOf(p, 3)) + median(seriesOf(p, 5));
    const double wait = median(seriesOf(p, 8));
    if (step > 0) bubbles.push_back(wait / step);
    nlohmann::json row = {{"rank", p},
                     {"step_us", step * 1e6},
                     {"data_us", median(seriesOf(p, 1)) * 1e6},
                     {"compute_us", compute * 1e6},
                     {"sync_us", median(seriesOf(p, 4)) * 1e6},
                     {"communication_us", comm * 1e6},
                     {"exposed_communication_us", exposed * 1e6},
                     {"pipeline_wait_us", wait * 1e6},
                     {"idle_us", std::max(0.0, step - compute - median(seriesOf(p, 1)) - median(seriesOf(p, 4))) * 1e6},
                     {"overlap", comm > 0 ? nlohmann::json(std::clamp(1.0 - exposed / comm, 0.0, 1.0)) : nlohmann::json()}};
    for (std::size_t a = 0; a < axes.size(); ++a) row[wl::coordinateField(axes[a])] = static_cast<int>(place[a]);
    ranks.push_back(row);
  }
  for (std::size_t i = 0; i < n; ++i) spread[i] = out.stepSeconds[i] > 0 ? (out.stepSeconds[i] - fastest[i]) / out.stepSeconds[i] : 0.0;

  // Process 0's own view of the collectives: per group and (op, bytes), their times and achieved
  // bandwidth, each with its own group's bus factor.
  std::map<CollectiveRowKey, std::vector<double>> byRow;
  for (const auto& c : mine.collectives) {
    const wl::LabelledGroup g = wl::groupOfLabel(mesh.layout(), c.group);
    byRow[{g.kind, g.size, c.op, c.bytes}].push_back(c.seconds);
  }
  nlohmann::json collectives = nlohmann::json::array();
  for (const auto& [key, seconds] : byRow) {
    const double med = median(seconds);
    const double algbw = med > 0 ? static_cast<double>(key.bytes) / med / 1e9 : 0.0;
    // A pipeline send or receive is between two stages: all its bytes cross the one link.
    const double busFactor = key.op == "send" || key.op == "recv" ? 1.0 : findCollective(key.op).busFactor(key.groupSize);
    collectives.push_back({{"group", std::string(wl::groupKindName(key.kind))},
                           {"group_size", key.groupSize},
                           {"op", key.op},
                           {"bytes", key.bytes},
                           {"count", seconds.size()},
                           {"time_us", usStats(seconds)},
                           {"algbw_gbps", algbw},
                           {"busbw_gbps", algbw * busFactor}});
  }
  const double comm = median(mine.communication), exposed = median(mine.exposed);
  out.fields = {{"phases_us",
                 {{"data", usStats(mine.data)},
                  {"forward", usStats(mine.forward)},
                  {"backward", usStats(mine.backward)},
                  {"sync", usStats(mine.sync)},
                  {"optimizer", usStats(mine.optimizer)}}},
                {"communication",
                 {{"communication_us", usStats(mine.communication)},
                  {"exposed_us", usStats(mine.exposed)},
                  {"overlap", comm > 0 ? nlohmann::json(std::clamp(1.0 - exposed / comm, 0.0, 1.0)) : nlohmann::json()},
                  {"rank_spread", median(spread)}}},
                {"ranks", ranks},
                {"collectives", collectives}};
  if (mesh.size(wl::GroupKind::kPp) > 1) out.fields["measured_bubble"] = median(bubbles);
  // Late means late enough to matter: by more than 1 ms and 5% of the step.
  if (P > 1) out.fields["stragglers"] = gatherArrivalSkew(boot, mine.collectives, mine.originS, std::max(1.0, 0.05 * median(out.stepSeconds) * 1e3));
  return out;
}

}  // namespace ts
