#pragma once
// The --timeout guard. A thread watches the heartbeat (base/heartbeat.h) while armed; when no operation
// has completed for `timeoutS` it calls onTimeout (which reports and ends every rank; it does not return).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ts {

class Bootstrap;

class Watchdog {
 public:
  using Handler = std::function<void(double waitedS)>;
  Watchdog(double timeoutS, Handler onTimeout);  // timeoutS <= 0: never fires
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm();     // starts the clock now
  void disarm();  // between operations that may legitimately take long (host-side checks)

 private:
  void loop();
  double timeoutS_;
  Handler onTimeout_;
  std::atomic<bool> armed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// RAII: armed for the scope's lifetime.
class WatchdogScope {
 public:
  explicit WatchdogScope(Watchdog& w) : w_(w) { w_.arm(); }
  ~WatchdogScope() { w_.disarm(); }
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog& w_;
};

// The handler every subcommand's --timeout uses: one error line naming the rank, what it was doing and for
// how long (and, on the process that writes the stream, what it kept: activity::keptRecords), then
// `beforeEnd` (say, aborting a communicator) and every rank ended with exit code 3.
Watchdog::Handler endAllRanksOnTimeout(double timeoutS, Bootstrap& boot, std::function<void()> beforeEnd = {});

}  // namespace ts
