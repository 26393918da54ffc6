#pragma once
// Progress, as the watchdog sees it: code that completes a unit of work (one collective, one kernel)
// calls beat(); the watchdog (bench/failures/watchdog.h) fires when no beat came for --timeout seconds. One relaxed
// atomic store of the steady clock: cheap enough to call after every operation, outside timed regions.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace ts::heartbeat {

inline std::atomic<std::int64_t>& lastBeatNs() {
  static std::atomic<std::int64_t> last{0};
  return last;
}

inline std::int64_t nowNs() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void beat() noexcept { lastBeatNs().store(nowNs(), std::memory_order_relaxed); }

// Whose progress a stall is waiting on. A process inside a collective, a barrier or a receive waits for its
// peers; anywhere else (computing, copying, a planted hang) it waits for itself. The watchdog reads this to
// tell the rank that hangs from the ranks that wait for it (bench/failures/watchdog.h), and the signal
// handler to know which processes have nothing to say when the launcher ends the run.
enum class Stall { kOwnWork, kPeers };

inline std::atomic<int>& peerWaitDepth() {
  static std::atomic<int> depth{0};
  return depth;
}

// Async-signal-safe (one atomic load).
inline Stall stall() noexcept { return peerWaitDepth().load(std::memory_order_relaxed) > 0 ? Stall::kPeers : Stall::kOwnWork; }

// RAII: this process waits for its peers for the scope's lifetime (the comm layer's blocking calls).
class WaitingForPeers {
 public:
  WaitingForPeers() noexcept { peerWaitDepth().fetch_add(1, std::memory_order_relaxed); }
  ~WaitingForPeers() { peerWaitDepth().fetch_sub(1, std::memory_order_relaxed); }
  WaitingForPeers(const WaitingForPeers&) = delete;
  WaitingForPeers& operator=(const WaitingForPeers&) = delete;
};

}  // namespace ts::heartbeat
