#pragma once
// The run's liveness beacons (comm/liveness.h), as the watchdog uses them: every process of a multi-process run
// opens one and learns every peer's at the start; when a wait for peers times out, the process that reports it
// asks them all, so that its one line names the host and ranks that are gone instead of "a frozen or lost process,
// a lost host, or the network".
#include <memory>
#include <string>
#include <vector>

#include "comm/liveness.h"

namespace ts {

class Bootstrap;

class PeerCensus {
 public:
  // Collective: opens this process's beacon and gathers every card. While it lives, it is the census that
  // askPeersOfThisRun() asks. A process that cannot open a beacon says so once and publishes none (its peers
  // then cannot ask it, and do not name it).
  PeerCensus(Bootstrap& boot, const std::string& host);
  ~PeerCensus();
  PeerCensus(const PeerCensus&) = delete;
  PeerCensus& operator=(const PeerCensus&) = delete;
  std::string ask(double deadlineS) const;
  // This process's card (its port is 0 when it has no beacon; its address is where the run's listeners listen,
  // comm/bootstrap_interface.h, none when no address reaches the others).
  const BeaconCard& mine() const { return mine_; }

 private:
  std::unique_ptr<LivenessBeacon> beacon_;  // null when it could not listen
  BeaconCard mine_;
  std::vector<BeaconCard> peers_;  // every other process's card that has a beacon
};

// How long the census waits for the beacons: a live one answers in a round trip, a stopped one never.
inline constexpr double kCensusDeadlineS = 1.0;

// What the peers' beacons say, as the end of a timeout line: "host h2 (rank 1) does not answer (the host or its
// link is down)", "rank 3 on host h4 is gone (...)", ...; or, when all answer, that they do. "" when this
// process has no census (one process, or before the session gathered the cards).
std::string askPeersOfThisRun(double deadlineS = kCensusDeadlineS);

// The sentence for the states of `peers` (askBeacons' answer), grouped by state and host.
std::string describePeers(const std::vector<BeaconCard>& peers, const std::vector<PeerState>& states);

}  // namespace ts
