#include "bench/session/watchdog.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "bench/session/activity.h"
#include "comm/bootstrap.h"

namespace ts {

double stallLimitS(heartbeat::Stall stall, int rank, double timeoutS) {
  return stall == heartbeat::Stall::kOwnWork ? timeoutS : (2.0 + rank) * timeoutS;
}

Watchdog::Watchdog(double timeoutS, int rank, Handler onTimeout)
    : timeoutS_(timeoutS), rank_(rank), onTimeout_(std::move(onTimeout)) {
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
    const heartbeat::Stall stall = heartbeat::stall();
    if (waited > stallLimitS(stall, rank_, timeoutS_)) {
      lock.unlock();
      onTimeout_(waited, stall);
      lock.lock();
      armed_.store(false);
    }
  }
}

Watchdog::Handler endAllRanksOnTimeout(double timeoutS, Bootstrap& boot, std::function<void()> beforeEnd) {
  return [timeoutS, &boot, beforeEnd = std::move(beforeEnd)](double waited, heartbeat::Stall stall) {
    if (activity::errorWasReported()) return;  // this process said why the run ends, and is on its way out
    const std::string saved = activity::keptRecords();
    const std::string what =
        stall == heartbeat::Stall::kOwnWork
            ? fmt::format("{} made no progress for {:.1f} s", activity::current(), waited)
            : fmt::format(
                  "{} waited {:.1f} s for its peers, and none of them reported being stuck in its own work (a "
                  "frozen or lost process, a lost host, or the network)",
                  activity::current(), waited);
    std::fprintf(stderr, "trainscope: error: %s: timeout: %s (--timeout %g); ending all ranks%s\n", activity::who().c_str(),
                 what.c_str(), timeoutS, saved.c_str());
    std::fflush(stderr);
    if (beforeEnd) beforeEnd();
    boot.abortAll(3);
  };
}

}  // namespace ts
