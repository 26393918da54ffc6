#include "base/stop_request.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "base/heartbeat.h"

namespace ts {
namespace {
std::atomic<int> g_stop{0};

std::atomic<bool> g_peerFailed{false};
std::atomic<std::int64_t> g_peerFailedAtNs{0};
// A wait gives its own exchange this long to complete after a peer's failure is noted: a failure every process
// meets at the same point (a checkpoint that no rank could write, a loss every rank reduced) is then reported by
// process 0 as its own, and only a wait that a failed peer will never join gives up.
constexpr std::int64_t kPeerFailureGraceNs = 500'000'000;
// A peer that ended without a word (killed, crashed) gets less, but not none: it may have completed the exchange this
// process is waiting in before it ended, and what it sent is still to be received. With a ring all-reduce the last
// member can complete before the others have seen their last piece: a rank killed at the start of step 3 cost the
// other one its step 2 (CI run of issue #40's libnbc ring, 4 of 15 runs under load; 0 with a grace).
constexpr std::int64_t kPeerEndGraceNs = 200'000'000;
std::mutex g_peerMu;
std::string g_peerLine;
int g_peerCode = 1;
}  // namespace

void requestStop(int signal) {
  // Ending the run is progress: the process gets a fresh --timeout to keep what it measured before the watchdog
  // would call it stuck (the launcher's SIGKILL, or a second signal, usually comes first). A lock-free atomic
  // store: safe in a signal handler.
  heartbeat::beat();
  g_stop.store(signal);
}
int stopRequested() { return g_stop.load(); }

void notePeerFailure(const std::string& line, int exitCode, PeerEndGrace grace) {
  {
    std::lock_guard lock(g_peerMu);
    if (g_peerFailed.load()) return;  // the first one is the one the waits report
    g_peerLine = line;
    g_peerCode = exitCode;
  }
  heartbeat::beat();  // as a stop: ending the run is progress
  const std::int64_t given = grace == PeerEndGrace::kShared     ? kPeerFailureGraceNs
                             : grace == PeerEndGrace::kVanished ? kPeerEndGraceNs
                                                                : 0;
  g_peerFailedAtNs.store(heartbeat::nowNs() - (kPeerFailureGraceNs - given));
  g_peerFailed.store(true);
}

bool peerFailureNoted() { return g_peerFailed.load(); }

void checkStopWhileWaiting(std::string_view what, std::size_t bytes) {
  if (g_peerFailed.load() && heartbeat::nowNs() - g_peerFailedAtNs.load() > kPeerFailureGraceNs) {
    std::lock_guard lock(g_peerMu);
    throw PeerFailed(g_peerLine, g_peerCode);
  }
  if (const int sig = stopRequested())
    throw StoppedWhileWaiting(fmt::format("stopped by signal {} while {} of {} bytes waited for its peers", sig, what, bytes));
}

}  // namespace ts
