#include "bench/watchdog.h"

#include <chrono>

#include "base/heartbeat.h"

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

}  // namespace ts
