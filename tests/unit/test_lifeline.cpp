// Lifelines (comm/liveness_lifeline.h): process 0's hub learns how every other process ends (a failure with its
// line, a stop by a signal, a timeout it reported, a death without a word, a normal finish), admits only the run's
// processes, and can tell each to end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "base/error.h"
#include "comm/liveness_lifeline.h"
#include "comm/tcp_socket.h"

namespace ts {
namespace {

using namespace std::chrono_literals;

BeaconCard self(int rank) { return BeaconCard{rank, "here", {}, 0, ""}; }

// A hub whose ends a test can wait for.
struct Hub {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<PeerEnd> seen;
  LifelineHub hub;
  explicit Hub(int world)
      : hub(world, "here", "127.0.0.1",
            {[this](const PeerEnd& e) {
               std::lock_guard lock(mu);
               seen.push_back(e);
               cv.notify_all();
             },
             {}}) {}
  std::vector<PeerEnd> waitFor(std::size_t n) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 10s, [&] { return seen.size() >= n; });
    return seen;
  }
  void waitJoined(int n) {
    for (int i = 0; i < 1000 && hub.joined() < n; ++i) std::this_thread::sleep_for(10ms);
  }
};

// A lifeline whose "end" and hub-gone a test can wait for.
struct Spoke {
  std::atomic<int> ended{-1};
  std::atomic<bool> hubGone{false};
  Lifeline line;
  Spoke(const LifelineCard& card, int rank)
      : line(card, self(rank), rank, {[this](int code) { ended.store(code); }, [this] { hubGone.store(true); }}) {}
  template <typename F>
  static bool eventually(F f) {
    for (int i = 0; i < 1000; ++i, std::this_thread::sleep_for(10ms))
      if (f()) return true;
    return false;
  }
};

TEST(Lifeline, FramesRoundTripAndNothingElseParses) {
  using lifeline::Report;
  auto strip = [](const std::string& f) { return f.substr(0, f.size() - 1); };
  const auto hello = lifeline::parseHello(strip(lifeline::helloFrame("k3y", 7)));
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->key, "k3y");
  EXPECT_EQ(hello->rank, 7);
  const auto fail = lifeline::parseReport(strip(lifeline::failFrame(2, "rank 1 of 2 (h): bad\ninput")));
  ASSERT_TRUE(fail);
  EXPECT_EQ(fail->kind, Report::Kind::kFail);
  EXPECT_EQ(fail->exitCode, 2);
  EXPECT_EQ(fail->line, "rank 1 of 2 (h): bad input");  // one line, whatever the message held
  const auto stop = lifeline::parseReport(strip(lifeline::stopFrame(true, 143, "rank 1: stopped")));
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->kind, Report::Kind::kStopWaiting);
  EXPECT_EQ(lifeline::parseReport(strip(lifeline::saidFrame(3)))->kind, Report::Kind::kSaid);
  EXPECT_EQ(lifeline::parseReport(strip(lifeline::byeFrame()))->kind, Report::Kind::kBye);
  EXPECT_EQ(lifeline::parseEnd(strip(lifeline::endFrame(143))), 143);
  for (const char* bad : {"", "fail", "fail x line", "fail 1", "stop sideways 1 l", "said", "end", "end 1x", "hello"})
    EXPECT_FALSE(lifeline::parseReport(bad) || lifeline::parseEnd(bad)) << bad;
  EXPECT_FALSE(lifeline::parseHello("TSLIFE1 key"));
  EXPECT_LE(lifeline::failFrame(1, std::string(10000, 'x')).size(), lifeline::kMaxFrameBytes);
}

TEST(Lifeline, TheHubLearnsEachEndWithItsLineAndInOrder) {
  Hub h(5);
  Spoke failed(h.hub.card(), 1), stopped(h.hub.card(), 2), said(h.hub.card(), 3), finished(h.hub.card(), 4);
  h.waitJoined(4);
  ASSERT_TRUE(failed.line.send(lifeline::failFrame(1, "rank 1 of 5 (here): step 3: the loss is inf")));
  ASSERT_TRUE(h.waitFor(1).size() == 1);
  ASSERT_TRUE(stopped.line.send(lifeline::stopFrame(false, 143, "rank 2 of 5 (here): stopped by signal 15 during step 4")));
  ASSERT_TRUE(h.waitFor(2).size() == 2);
  ASSERT_TRUE(said.line.send(lifeline::saidFrame(3)));
  ASSERT_TRUE(finished.line.send(lifeline::byeFrame()));
  const auto ends = h.waitFor(3);
  ASSERT_EQ(ends.size(), 3u);  // a "bye" is no end
  EXPECT_EQ(ends[0].rank, 1);
  EXPECT_EQ(ends[0].kind, PeerEndKind::kFailed);
  EXPECT_EQ(ends[0].line, "rank 1 of 5 (here): step 3: the loss is inf");
  EXPECT_EQ(ends[1].kind, PeerEndKind::kStopped);
  EXPECT_EQ(ends[1].exitCode, 143);
  EXPECT_EQ(ends[2].kind, PeerEndKind::kSaid);
  EXPECT_EQ(ends[2].exitCode, 3);
  EXPECT_TRUE(ends[0].order < ends[1].order && ends[1].order < ends[2].order);
}

TEST(Lifeline, AProcessThatDiesIsSeenAtOnceAndOneThatFinishedIsNot) {
  Hub h(3);
  auto dies = std::make_unique<Spoke>(h.hub.card(), 1);
  auto finishes = std::make_unique<Spoke>(h.hub.card(), 2);
  h.waitJoined(2);
  ASSERT_TRUE(finishes->line.send(lifeline::byeFrame()));
  finishes.reset();  // its connection closes after "bye": it finished
  dies.reset();      // closes without a word, as the kernel closes a killed process's sockets
  const auto ends = h.waitFor(2);
  ASSERT_EQ(ends.size(), 2u);
  const auto& died = ends[0].rank == 1 ? ends[0] : ends[1];
  const auto& done = ends[0].rank == 1 ? ends[1] : ends[0];
  EXPECT_EQ(died.kind, PeerEndKind::kVanished);
  EXPECT_EQ(done.kind, PeerEndKind::kClosed);
}

TEST(Lifeline, TheHubEndsEveryProcessAndAProcessSeesTheHubGo) {
  auto h = std::make_unique<Hub>(3);
  Spoke a(h->hub.card(), 1), b(h->hub.card(), 2);
  h->waitJoined(2);
  h->hub.endAll(143);
  EXPECT_TRUE(Spoke::eventually([&] { return a.ended.load() == 143 && b.ended.load() == 143; }));
  h.reset();
  EXPECT_TRUE(Spoke::eventually([&] { return a.hubGone.load() && b.hubGone.load(); }));
}

TEST(Lifeline, OnlyTheRunsProcessesJoinStrangersAreDropped) {
  Hub h(3);
  LifelineCard wrongKey = h.hub.card();
  wrongKey.key = "another run's key";
  Spoke stranger(wrongKey, 1);  // connects and says a hello with the wrong key: dropped
  EXPECT_TRUE(Spoke::eventually([&] { return stranger.hubGone.load(); }));
  Spoke real(h.hub.card(), 1);
  h.waitJoined(1);
  Spoke impostor(h.hub.card(), 1);  // the right key, but rank 1 has joined already
  EXPECT_TRUE(Spoke::eventually([&] { return impostor.hubGone.load(); }));
  Spoke outside(h.hub.card(), 3);  // no rank 3 in a world of 3
  EXPECT_TRUE(Spoke::eventually([&] { return outside.hubGone.load(); }));
  EXPECT_EQ(h.hub.joined(), 1);
  EXPECT_TRUE(h.seen.empty());  // a dropped stranger is no process's end
  EXPECT_FALSE(real.hubGone.load());
}

// Issue #34: the hub listened on every interface. It listens on the address it is given (process 0's beacon's).
TEST(Lifeline, TheHubListensOnlyOnTheAddressItIsGiven) {
  Hub h(2);
  EXPECT_EQ(h.hub.card().addresses, std::vector<std::string>{"127.0.0.1"});
  const auto other = numericAddress("127.0.0.2", h.hub.card().port);
  ASSERT_TRUE(other);
  const Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  EXPECT_NE(::connect(s.fd(), reinterpret_cast<const sockaddr*>(&other->storage), other->length), 0);
  Spoke real(h.hub.card(), 1);
  h.waitJoined(1);
  EXPECT_EQ(h.hub.joined(), 1);
  EXPECT_THROW(LifelineHub(2, "here", "", {}), Error);  // no address: no hub (the run warns and goes on)
}

// Issue #34: silent strangers filling the hub's waiting room had it close a process's own lifeline unread, and that
// process took process 0 for gone and ended the run. The one that waited longest makes room instead.
TEST(Lifeline, StrangersFillingTheHubsWaitingRoomDoNotKeepAProcessOut) {
  Hub h(2);
  const auto at = numericAddress("127.0.0.1", h.hub.card().port);
  ASSERT_TRUE(at);
  std::vector<Socket> strangers;
  for (int i = 0; i < 100; ++i) {
    strangers.emplace_back(::socket(AF_INET, SOCK_STREAM, 0));
    ASSERT_EQ(::connect(strangers.back().fd(), reinterpret_cast<const sockaddr*>(&at->storage), at->length), 0);
  }
  std::this_thread::sleep_for(100ms);  // the hub has taken them all
  Spoke real(h.hub.card(), 1);
  h.waitJoined(1);
  EXPECT_EQ(h.hub.joined(), 1);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(real.hubGone.load());
}

TEST(Lifeline, SettleReturnsOnceWhatHadArrivedIsRead) {
  Hub h(2);
  Spoke s(h.hub.card(), 1);
  h.waitJoined(1);
  ASSERT_TRUE(s.line.send(lifeline::failFrame(1, "rank 1: gone wrong")));
  h.hub.settle(5.0);
  ASSERT_EQ(h.hub.ends().size(), 1u);
  EXPECT_EQ(h.hub.ends()[0].line, "rank 1: gone wrong");
}

}  // namespace
}  // namespace ts
