#pragma once
// Progress, as the watchdog sees it: code that completes a unit of work (one collective, one kernel)
// calls beat(); the watchdog (bench/watchdog) fires when no beat came for --timeout seconds. One relaxed
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

}  // namespace ts::heartbeat
