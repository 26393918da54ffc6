#include "bench/train/arrival_skew.h"

#include <algorithm>
#include <array>
#include <map>

#include "base/json_text.h"
#include "bench/results/stats.h"
#include "comm/bootstrap.h"

namespace ts {

ArrivalSkew analyzeArrivalSkew(const std::vector<RankLaunches>& ranks, double thresholdMs) {
  std::map<std::pair<std::string, std::size_t>, std::vector<std::pair<int, double>>> ops;  // (group, k) -> (rank, launch)
  for (const RankLaunches& r : ranks)
    for (const auto& [group, launches] : r.groups)
      for (std::size_t k = 0; k < launches.size(); ++k) ops[{group, k}].emplace_back(r.rank, launches[k]);
  std::map<int, std::vector<double>> skews;
  for (const RankLaunches& r : ranks) skews[r.rank];
  for (const auto& [key, members] : ops) {
    if (members.size() < 2) continue;
    double first = members.front().second;
    for (const auto& m : members) first = std::min(first, m.second);
    for (const auto& [rank, t] : members) skews[rank].push_back((t - first) * 1e6);
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
    out.ranks.push_back({rank, v.size(), medians[rank], v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()), isLate});
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
  // By group, in launch order, exchanged under the group's trace name ("dp0"): [launch, seconds] each.
  std::map<std::string, std::vector<std::array<double, 2>>> byGroup;
  for (const auto& c : mine)
    if (c.op.collective()) byGroup[wl::traceName(c.group)].push_back({c.launchS - originS, c.seconds});
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
      for (const auto& pair : v) {
        at.push_back(pair.at(0).get<double>());
        seconds.push_back(pair.at(1).get<double>());
      }
      r.groups.emplace_back(g, std::move(at));
      r.seconds[g] = std::move(seconds);
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

}  // namespace ts
