#pragma once
// Exposed communication split into waiting for peers and transfer (issue #40). A rank blocked on a collective
// before the group's last member has launched it is waiting for that member, whatever the network: nothing
// can move until every member arrives. Before, the whole block was booked as communication, and a straggler
// read as a slow network (dp 2, 540 KB all-reduce: 19-27 ms "exposed" per step for a ~0.13 ms transfer).
//
// The last member to launch waits for nobody: its own launch-to-completion is the transfer, and it is the
// shortest of the group's. So each collective's transfer is the shortest launch-to-completion of its members
// (exchanged after the steps, bench/train/arrival_skew.h), and on this rank the last member arrived that long
// before this rank saw the op complete. Each measures on its own clock: the launches' barrier-aligned clocks
// are off by the barrier's exit skew (tens of microseconds on a loaded host), more than a small collective's
// whole transfer, and a first version that used them put the last arrival after the completion.
// The host time this rank spent blocked on the op before then is waiting; the rest of the step's exposed time
// is transfer (what a collectives sweep of the same op and size, whose ranks start together, measures).
// Waiting means arrival: a peer that launched a nonblocking collective and then went on with other work (or slept)
// without calling into MPI, which progresses only inside its calls, stalls the transfer after every member has
// arrived; that shows as transfer (the last member's own launch-to-completion holds it too).
#include <cstddef>
#include <vector>

#include "bench/train/arrival_skew.h"
#include "workloads/parallel/comm_tracker.h"

namespace ts {

struct PeerWaits {
  // Parallel to the rank's collectives: when its group's last member launched it, on this rank's clock (its own
  // launch for a send/recv or a collective no other member reported: no wait to speak of).
  std::vector<double> lastArrivalS;
  std::vector<double> waitingS;  // per timed step (CollectiveTiming::step): blocked before the last arrival
};

// `all`: every rank's collectives (gatherLaunches); `rank` this one.
PeerWaits peerWaits(const std::vector<wl::CollectiveTiming>& mine, const std::vector<RankLaunches>& all, int rank,
                    std::size_t steps);

// The share of the exposed time spent waiting over a series of steps, sum(waiting) / sum(exposed): the records
// split a median exposed time with it, so that the two parts add up to it.
double waitingShare(const std::vector<double>& waiting, const std::vector<double>& exposed);

}  // namespace ts
