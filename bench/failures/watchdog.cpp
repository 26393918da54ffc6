#include "bench/failures/watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/terminal_text.h"
#include "bench/failures/activity.h"
#include "bench/failures/peer_census.h"
#include "bench/failures/run_ending.h"
#include "comm/bootstrap.h"

namespace ts {

double stallLimitS(heartbeat::Stall stall, int rank, double timeoutS) {
  return stall == heartbeat::Stall::kOwnWork ? timeoutS : (2.0 + rank) * timeoutS;
}

namespace {
// The live watchdogs that can fire, outermost first.
std::mutex g_nestMu;
std::vector<const Watchdog*> g_nest;
}  // namespace

Watchdog::Watchdog(double timeoutS, int rank, Handler onTimeout)
    : timeoutS_(timeoutS), rank_(rank), onTimeout_(std::move(onTimeout)) {
  if (timeoutS_ <= 0) return;
  {
    std::lock_guard lock(g_nestMu);
    g_nest.push_back(this);
  }
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(g_nestMu);
  const auto me = std::find(g_nest.begin(), g_nest.end(), this);
  if (me == g_nest.end()) return;
  // The outer one watches again from now: the time the inner one watched is not a stall of the outer's.
  if (me + 1 == g_nest.end()) heartbeat::beat();
  g_nest.erase(me);
}

bool Watchdog::innermost() const {
  std::lock_guard lock(g_nestMu);
  return !g_nest.empty() && g_nest.back() == this;
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
    if (stop_ || !armed_.load() || !innermost()) continue;
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
  return endAllRanksOnTimeout(timeoutS, [&boot, beforeEnd = std::move(beforeEnd)](int exitCode) {
    if (beforeEnd) beforeEnd();
    boot.abortAll(exitCode);
  });
}

Watchdog::Handler endAllRanksOnTimeout(double timeoutS, std::function<void(int exitCode)> endAll) {
  return [timeoutS, endAll = std::move(endAll)](double waited, heartbeat::Stall stall) {
    if (activity::errorWasReported()) return;  // this process said why the run ends, and is on its way out
    const std::string saved = activity::keptRecords();
    std::string what;
    if (stall == heartbeat::Stall::kOwnWork) {
      what = fmt::format("{} made no progress for {:.1f} s", activity::current(), waited);
    } else if (const std::string census = askPeersOfThisRun(); !census.empty()) {
      what = fmt::format("{} waited {:.1f} s for its peers: {}", activity::current(), waited, census);
    } else {
      what = fmt::format(
          "{} waited {:.1f} s for its peers, and none of them reported being stuck in its own work (a frozen or lost "
          "process, a lost host, or the network)",
          activity::current(), waited);
    }
    std::fprintf(
        stderr, "trainscope: error: %s\n",
        printable(fmt::format("{}: timeout: {} (--timeout {:g}); ending all ranks{}", activity::who(), what, timeoutS, saved))
            .c_str());
    std::fflush(stderr);
    // The others hear it over their lifelines too (bench/failures/run_ending.h): where no launcher ends them
    // (RANK/WORLD_SIZE), and so that process 0 does not take this process's end for a death.
    ending::tellTimeoutReported(3);
    endAll(3);
  };
}

}  // namespace ts
