#include "bench/failures/peer_census.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "base/error.h"
#include "comm/bootstrap.h"
#include "comm/bootstrap_interface.h"

namespace ts {

namespace {
std::mutex g_mu;
const PeerCensus* g_census = nullptr;

std::string ranksInWords(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}
}  // namespace

PeerCensus::PeerCensus(Bootstrap& boot, const std::string& host) {
  const std::string address = runListenAddress(boot);  // collective: before anything can fail
  try {
    if (address.empty()) throw Error("liveness beacon: no address of this host reaches process 0's");
    beacon_ = std::make_unique<LivenessBeacon>(boot.rank(), host, address);
    mine_ = beacon_->card();
  } catch (const Error& e) {
    // Not worth failing a run for: only a timeout's line would have named more.
    std::fprintf(stderr, "trainscope: warning: %s (a timeout will not name which peers are gone)\n", e.what());
    mine_ = BeaconCard{boot.rank(), host, {}, 0, ""};
    if (!address.empty()) mine_.addresses = {address};
  }
  for (const std::string& s : boot.allGatherStrings(mine_.encode())) {
    BeaconCard c = BeaconCard::decode(s);
    if (c.rank != boot.rank() && c.port > 0) peers_.push_back(std::move(c));
  }
  std::lock_guard lock(g_mu);
  g_census = this;
}

PeerCensus::~PeerCensus() {
  std::lock_guard lock(g_mu);
  if (g_census == this) g_census = nullptr;
}

std::string PeerCensus::ask(double deadlineS) const { return describePeers(peers_, askBeacons(mine_, peers_, deadlineS)); }

std::string askPeersOfThisRun(double deadlineS) {
  std::lock_guard lock(g_mu);
  return g_census ? g_census->ask(deadlineS) : "";
}

std::string describePeers(const std::vector<BeaconCard>& peers, const std::vector<PeerState>& states) {
  // (state, host) -> ranks, in host order of first appearance within each state.
  std::vector<std::pair<std::pair<PeerState, std::string>, std::vector<int>>> groups;
  for (std::size_t i = 0; i < peers.size() && i < states.size(); ++i) {
    if (states[i] == PeerState::kAlive) continue;
    const auto key = std::make_pair(states[i], peers[i].host);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == key; });
    if (g == groups.end()) g = groups.insert(groups.end(), {key, {}});
    g->second.push_back(peers[i].rank);
  }
  if (groups.empty())
    return peers.empty() ? ""
                         : "every peer's process answers (so the stall is in the communication itself: the network, or a peer "
                           "stuck inside it)";
  std::vector<std::string> parts;
  for (const auto& [key, ranks] : groups) {
    const auto& [state, host] = key;
    switch (state) {
      case PeerState::kUnreachable:
        parts.push_back(fmt::format("host {} ({}) does not answer (the host or its link is down)", host, ranksInWords(ranks)));
        break;
      case PeerState::kGone:
        parts.push_back(fmt::format("{} on host {} {} gone (the host answers, the process does not)", ranksInWords(ranks), host,
                                    ranks.size() == 1 ? "is" : "are"));
        break;
      case PeerState::kFrozen:
        parts.push_back(fmt::format("{} on host {} accept{} but do{} not answer (a stopped or stuck process)",
                                    ranksInWords(ranks), host, ranks.size() == 1 ? "s" : "", ranks.size() == 1 ? "es" : ""));
        break;
      case PeerState::kAlive:
        break;
    }
  }
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace ts
