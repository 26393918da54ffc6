// Exposed communication split into waiting for peers and transfer (bench/train/peer_waits.h), on timings worked out
// by hand.
#include <gtest/gtest.h>

#include "bench/train/peer_waits.h"
#include "comm/collectives/collective.h"

namespace ts {
namespace {

wl::CollectiveTiming allReduce(double launch, double issued, double waitFrom, double end, std::int64_t step) {
  wl::CollectiveTiming c{collectives::all_reduce(), 1024, end - launch, {wl::GroupKind::kDp, 0}, launch, issued, waitFrom};
  c.step = step;
  return c;
}

TEST(PeerWaits, OnlyTheBlockedTimeBeforeTheLastArrivalIsWaiting) {
  // Launched at 0, the call returned at 1 ms; blocked in a wait from 2 ms to 10 ms; the last member launched at 6 ms.
  const wl::CollectiveTiming c = allReduce(0.0, 0.001, 0.002, 0.010, 0);
  EXPECT_NEAR(wl::blockedBefore(c, 0.006), 0.001 + 0.004, 1e-12);
  EXPECT_NEAR(wl::transferSeconds(c, 0.006), 0.004, 1e-12);
  // Everyone was there first: no waiting, the whole op is transfer.
  EXPECT_EQ(wl::blockedBefore(c, 0.0), 0.0);
  EXPECT_NEAR(wl::transferSeconds(c, -1.0), 0.010, 1e-12);
  // Completed under a poll (never waited for): only the launch call can have blocked.
  const wl::CollectiveTiming polled = allReduce(0.0, 0.001, -1, 0.010, 0);
  EXPECT_NEAR(wl::blockedBefore(polled, 0.006), 0.001, 1e-12);
  // The last member arrived after the op completed here (it cannot, but clocks are aligned only so well): capped.
  EXPECT_NEAR(wl::blockedBefore(c, 0.5), 0.001 + 0.008, 1e-12);
  EXPECT_EQ(wl::transferSeconds(c, 0.5), 0.0);
}

TEST(PeerWaits, TheLastArrivalIsTheShortestMembersDurationBeforeThisRanksCompletion) {
  // Rank 0 launched dp0's first collective at 5.0 and saw it complete at 5.025, blocked from 5.001; rank 1, the last
  // to arrive, took 5 ms from its own launch to completion (its clock is not compared: only that duration is).
  // The second one rank 0 reached last: the others took longer than its own 9.9 ms.
  const std::vector<wl::CollectiveTiming> mine = {allReduce(5.0, 5.0001, 5.001, 5.025, 0),
                                                  allReduce(5.1, 5.1001, 5.1001, 5.11, 1)};
  std::vector<RankLaunches> all = {{0, {}, {{"dp0", {0.025, 0.0099}}}}, {1, {}, {{"dp0", {0.005, 0.02}}}}};
  const PeerWaits w = peerWaits(mine, all, 0, 2);
  ASSERT_EQ(w.lastArrivalS.size(), 2u);
  EXPECT_NEAR(w.lastArrivalS[0], 5.02, 1e-12);
  EXPECT_NEAR(w.lastArrivalS[1], 5.1, 1e-12);  // rank 0 itself was last
  ASSERT_EQ(w.waitingS.size(), 2u);
  EXPECT_NEAR(w.waitingS[0], 0.0001 + (5.02 - 5.001), 1e-9);
  EXPECT_EQ(w.waitingS[1], 0.0);
  // With three members the shortest of the others counts.
  all.push_back({2, {}, {{"dp0", {0.003, 0.5}}}});
  EXPECT_NEAR(peerWaits(mine, all, 0, 2).lastArrivalS[0], 5.022, 1e-12);
}

TEST(PeerWaits, SendsAndCollectivesNoOtherMemberReportedWaitForNobody) {
  wl::CollectiveTiming send{PointToPoint::Kind::kSend, 64, 0.01, {wl::GroupKind::kPp, 0}, 1.0, 1.001, 1.001};
  send.step = 0;
  wl::CollectiveTiming alone = allReduce(1.02, 1.021, 1.021, 1.03, 0);
  alone.group = {wl::GroupKind::kTp, 3};
  const std::vector<RankLaunches> all = {{0, {}, {{"tp3", {0.01}}}}, {1, {}, {{"tp1", {0.001}}}}};
  const PeerWaits w = peerWaits({send, alone}, all, 0, 1);
  EXPECT_EQ(w.lastArrivalS, (std::vector<double>{1.0, 1.02}));
  EXPECT_EQ(w.waitingS, std::vector<double>{0.0});
}

TEST(PeerWaits, TheMedianExposedTimeSplitsInTheProportionOfTheTotals) {
  EXPECT_DOUBLE_EQ(waitingShare({0.001, 0.003}, {0.002, 0.006}), 0.5);
  EXPECT_EQ(waitingShare({}, {}), 0.0);
  EXPECT_EQ(waitingShare({0.1}, {0.0}), 0.0);
}

}  // namespace
}  // namespace ts
