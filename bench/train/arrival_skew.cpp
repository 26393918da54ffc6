#include "bench/train/arrival_skew.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>

#include "base/json_text.h"
#include "bench/results/stats.h"
#include "comm/bootstrap.h"

namespace ts {

namespace {

// The step of the k-th collective of `group` on rank r, or -1 where the rank did not say.
std::int64_t stepOf(const RankLaunches& r, const std::string& group, std::size_t k) {
  const auto it = r.steps.find(group);
  return it != r.steps.end() && k < it->second.size() ? it->second[k] : -1;
}

}  // namespace

ArrivalSkew analyzeArrivalSkew(const std::vector<RankLaunches>& ranks, double thresholdMs) {
  struct Member {
    int rank;
    double launch;
    std::int64_t step;
  };
  std::map<std::pair<std::string, std::size_t>, std::vector<Member>> ops;  // (group, k) -> its members' launches
  for (const RankLaunches& r : ranks)
    for (const auto& [group, launches] : r.groups)
      for (std::size_t k = 0; k < launches.size(); ++k) ops[{group, k}].push_back({r.rank, launches[k], stepOf(r, group, k)});
  std::map<int, std::map<std::int64_t, double>> byStep;  // rank -> step -> its largest skew there (us)
  std::map<int, std::size_t> counted;
  for (const RankLaunches& r : ranks) byStep[r.rank];
  std::int64_t own = -1;  // a collective of no known step: a step of its own (keys below -1)
  for (const auto& [key, members] : ops) {
    if (members.size() < 2) continue;
    double first = members.front().launch;
    for (const Member& m : members) first = std::min(first, m.launch);
    const std::int64_t step = members.front().step >= 0 ? members.front().step : --own;
    for (const Member& m : members) {
      double& worst = byStep[m.rank].try_emplace(step, 0.0).first->second;
      worst = std::max(worst, (m.launch - first) * 1e6);
      ++counted[m.rank];
    }
  }
  std::map<int, std::vector<double>> skews;  // per rank, its steps' skews
  for (const auto& [rank, steps] : byStep) {
    std::vector<double>& v = skews[rank];
    for (const auto& entry : steps) v.push_back(entry.second);
  }
  std::map<int, double> medians;
  for (const auto& [rank, v] : skews) medians[rank] = v.empty() ? 0.0 : summarize(v).median;
  ArrivalSkew out;
  out.thresholdMs = thresholdMs;
  for (const auto& [rank, v] : skews) {
    std::vector<double> others;
    for (const auto& [r, m] : medians)
      if (r != rank) others.push_back(m);
    const double othersMedian = others.empty() ? 0.0 : summarize(others).median;
    const bool isLate = medians[rank] > thresholdMs * 1e3 && medians[rank] > 3 * othersMedian;
    if (isLate) out.lateRanks.push_back(rank);
    out.ranks.push_back({rank, counted[rank], medians[rank], v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()), isLate});
  }
  return out;
}

nlohmann::json arrivalSkew(const std::vector<RankLaunches>& ranks, double thresholdMs) {
  return toJson(analyzeArrivalSkew(ranks, thresholdMs));
}

nlohmann::json toJson(const ArrivalSkew& skew) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RankSkew& r : skew.ranks)
    rows.push_back({{"rank", r.rank},
                    {"collectives", r.collectives},
                    {"median_skew_us", r.medianSkewUs},
                    {"max_skew_us", r.maxSkewUs},
                    {"late", r.late}});
  return {{"threshold_ms", skew.thresholdMs}, {"late_ranks", skew.lateRanks}, {"ranks", rows}};
}

std::vector<RankLaunches> gatherLaunches(Bootstrap& boot, const std::vector<wl::CollectiveTiming>& mine, double originS) {
  // By group, in launch order, exchanged under the group's trace name ("dp0"): [launch, seconds, step] each.
  std::map<std::string, std::vector<std::array<double, 3>>> byGroup;
  for (const auto& c : mine)
    if (c.op.collective())
      byGroup[wl::traceName(c.group)].push_back({c.launchS - originS, c.seconds, static_cast<double>(c.step)});
  nlohmann::json j = nlohmann::json::object();
  for (auto& [g, v] : byGroup) j[g] = v;
  const std::vector<std::string> all =
      boot.size() > 1 ? boot.allGatherStrings(jsonText(j)) : std::vector<std::string>{jsonText(j)};
  std::vector<RankLaunches> ranks;
  for (std::size_t p = 0; p < all.size(); ++p) {
    RankLaunches r;
    r.rank = static_cast<int>(p);
    const nlohmann::json launches = nlohmann::json::parse(all[p]);  // kept alive over the loop
    for (const auto& [g, v] : launches.items()) {
      std::vector<double> at, seconds;
      std::vector<std::int64_t> steps;
      for (const auto& each : v) {
        at.push_back(each.at(0).get<double>());
        seconds.push_back(each.at(1).get<double>());
        steps.push_back(static_cast<std::int64_t>(each.at(2).get<double>()));
      }
      r.groups.emplace_back(g, std::move(at));
      r.seconds[g] = std::move(seconds);
      r.steps[g] = std::move(steps);
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

}  // namespace ts
