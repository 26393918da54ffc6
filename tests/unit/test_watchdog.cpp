// The watchdog's one-voice rule (bench/failures/watchdog.h): a stall in this process's own work is reported at
// --timeout; a stall waiting for peers only after the stuck rank had its chance, process 0 before the others.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "base/heartbeat.h"
#include "bench/failures/watchdog.h"

namespace ts {
namespace {

using heartbeat::Stall;

TEST(Watchdog, TheStuckRankSpeaksFirstThenProcessZeroThenTheOthersInRankOrder) {
  EXPECT_DOUBLE_EQ(stallLimitS(Stall::kOwnWork, 0, 3), 3);
  EXPECT_DOUBLE_EQ(stallLimitS(Stall::kOwnWork, 7, 3), 3);
  // Every rank that waits gives the stuck one (limit 3) a whole --timeout more, and each lower rank another.
  EXPECT_DOUBLE_EQ(stallLimitS(Stall::kPeers, 0, 3), 6);
  EXPECT_DOUBLE_EQ(stallLimitS(Stall::kPeers, 1, 3), 9);
  EXPECT_DOUBLE_EQ(stallLimitS(Stall::kPeers, 2, 3), 12);
}

TEST(Watchdog, WaitingForPeersNestsAndEnds) {
  EXPECT_EQ(heartbeat::stall(), Stall::kOwnWork);
  {
    const heartbeat::WaitingForPeers outer;
    {
      const heartbeat::WaitingForPeers inner;  // a barrier inside a collective's wait
      EXPECT_EQ(heartbeat::stall(), Stall::kPeers);
    }
    EXPECT_EQ(heartbeat::stall(), Stall::kPeers);
  }
  EXPECT_EQ(heartbeat::stall(), Stall::kOwnWork);
}

struct Fired {
  std::atomic<bool> done{false};
  std::atomic<double> waited{0};
  std::atomic<Stall> stall{Stall::kOwnWork};
};

// Arms a watchdog of `timeoutS` on process `rank` and stalls (waiting for peers or not) until it fires.
void stallUntilFired(Fired& fired, double timeoutS, int rank, bool waitingForPeers) {
  Watchdog w(timeoutS, rank, [&fired](double waited, Stall stall) {
    fired.waited = waited;
    fired.stall = stall;
    fired.done = true;
  });
  std::optional<heartbeat::WaitingForPeers> waiting;
  if (waitingForPeers) waiting.emplace();
  const WatchdogScope armed(w);
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fired.done && std::chrono::steady_clock::now() < giveUp) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TEST(Watchdog, ReportsAStallInItsOwnWorkAtTheTimeout) {
  Fired fired;
  stallUntilFired(fired, 0.05, 1, false);
  ASSERT_TRUE(fired.done);
  EXPECT_EQ(fired.stall.load(), Stall::kOwnWork);
  EXPECT_GT(fired.waited.load(), 0.05);
}

TEST(Watchdog, WaitsLongerBeforeSpeakingForPeersItWaitsOn) {
  Fired fired;
  stallUntilFired(fired, 0.05, 1, true);
  ASSERT_TRUE(fired.done);
  EXPECT_EQ(fired.stall.load(), Stall::kPeers);
  EXPECT_GT(fired.waited.load(), stallLimitS(Stall::kPeers, 1, 0.05));  // never before its turn
}

// The session's watchdog (outer) guards the setup; a subcommand's (inner) its measurements. While the inner one
// lives, the outer one must stay silent, even when the inner one is disarmed on purpose; after it, it watches again.
TEST(Watchdog, OnlyTheInnermostWatchesAndTheOuterOneResumesAfterIt) {
  std::atomic<int> outerFired{0};
  Watchdog outer(0.05, 1, [&outerFired](double, Stall) { ++outerFired; });
  outer.arm();
  {
    Watchdog inner(0.05, 1, [](double, Stall) { ADD_FAILURE() << "the inner watchdog is disarmed"; });
    inner.arm();
    inner.disarm();                                               // a host-side check that may take long
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // 8 x the outer's timeout
    EXPECT_EQ(outerFired.load(), 0);
  }
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (outerFired.load() == 0 && std::chrono::steady_clock::now() < giveUp)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(outerFired.load(), 1);
}

TEST(Watchdog, OneThatNeverFiresHidesNoOuterOne) {
  Fired fired;
  Watchdog outer(0.05, 1, [&fired](double waited, Stall stall) {
    fired.waited = waited;
    fired.stall = stall;
    fired.done = true;
  });
  const WatchdogScope armed(outer);
  const Watchdog never(0, 1, [](double, Stall) { ADD_FAILURE() << "a watchdog of timeout 0 never fires"; });
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fired.done && std::chrono::steady_clock::now() < giveUp) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(fired.done);
}

}  // namespace
}  // namespace ts
