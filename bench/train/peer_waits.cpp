#include "bench/train/peer_waits.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace ts {

PeerWaits peerWaits(const std::vector<wl::CollectiveTiming>& mine, const std::vector<RankLaunches>& all, int rank,
                    std::size_t steps) {
  // (group, k) -> the shortest launch-to-completion among the other members: the last arrival's.
  std::map<std::pair<std::string, std::size_t>, double> shortestOfOthers;
  for (const RankLaunches& r : all) {
    if (r.rank == rank) continue;
    for (const auto& [group, seconds] : r.seconds)
      for (std::size_t k = 0; k < seconds.size(); ++k) {
        auto [it, fresh] = shortestOfOthers.try_emplace({group, k}, seconds[k]);
        if (!fresh) it->second = std::min(it->second, seconds[k]);
      }
  }
  PeerWaits out;
  out.waitingS.assign(steps, 0.0);
  std::map<std::string, std::size_t> seen;  // per group, the collectives of it met so far: the next one's k
  for (const wl::CollectiveTiming& c : mine) {
    double last = c.launchS;
    if (c.op.collective()) {
      const std::string group = wl::traceName(c.group);
      const auto it = shortestOfOthers.find({group, seen[group]++});
      if (it != shortestOfOthers.end()) last = std::max(last, c.endS() - it->second);
    }
    out.lastArrivalS.push_back(last);
    if (c.step >= 0 && static_cast<std::size_t>(c.step) < steps)
      out.waitingS[static_cast<std::size_t>(c.step)] += wl::blockedBefore(c, last);
  }
  return out;
}

double waitingShare(const std::vector<double>& waiting, const std::vector<double>& exposed) {
  double w = 0, e = 0;
  for (double x : waiting) w += x;
  for (double x : exposed) e += x;
  return e > 0 ? std::clamp(w / e, 0.0, 1.0) : 0.0;
}

}  // namespace ts
