#include "bench/session/watchdog.h"

#include <chrono>
#include <cstdio>

#include "base/heartbeat.h"
#include "bench/session/activity.h"
#include "comm/bootstrap.h"

namespace ts {

Watchdog::Watchdog(double timeoutS, Handler onTimeout) : timeoutS_(timeoutS), onTimeout_(std::move(onTimeout)) {
  if (timeoutS_ > 0) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::arm() {
  heartbeat::beat();
  armed_.store(true);
}

void Watchdog::disarm() { armed_.store(false); }

void Watchdog::loop() {
  // Polls ten times a second, or 20 times per timeout for short ones: the firing is late by at most that.
  const auto tick = std::chrono::milliseconds(std::max<long>(5, std::min<long>(100, static_cast<long>(timeoutS_ * 50))));
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, tick);
    if (stop_ || !armed_.load()) continue;
    const double waited = static_cast<double>(heartbeat::nowNs() - heartbeat::lastBeatNs().load()) * 1e-9;
    if (waited > timeoutS_) {
      lock.unlock();
      onTimeout_(waited);
      lock.lock();
      armed_.store(false);
    }
  }
}

Watchdog::Handler endAllRanksOnTimeout(double timeoutS, Bootstrap& boot, std::function<void()> beforeEnd) {
  return [timeoutS, &boot, beforeEnd = std::move(beforeEnd)](double waited) {
    const std::string saved = activity::keptRecords();
    std::fprintf(stderr, "trainscope: error: %s: timeout: %s made no progress for %.1f s (--timeout %g); ending all ranks%s\n",
                 activity::who().c_str(), activity::current().c_str(), waited, timeoutS, saved.c_str());
    std::fflush(stderr);
    if (beforeEnd) beforeEnd();
    boot.abortAll(3);
  };
}

}  // namespace ts
