#pragma once
// The --timeout guard. A thread watches the heartbeat (base/heartbeat.h) while armed; when no operation
// has completed for longer than the stall's limit (stallLimitS) it calls onTimeout (which reports and ends
// every rank; it does not return).
//
// One voice per timeout: when one rank hangs, every other rank soon waits for it, and each would say the
// same thing. So the limit depends on whose progress the process waits on. The rank stuck in its own work
// reports at --timeout, naming itself and its operation, and ends the run; the ranks waiting for it inside
// a collective or a barrier are ended by it before they would speak.
//
// Watchdogs nest: the session's guards its setup (the bootstrap, the communicator: an MPI that cannot reach a
// peer hangs there), a subcommand's guards its measurements. Only the innermost live one watches (an outer one
// would fire during a phase the inner one disarmed on purpose); when it goes, the outer one watches again, from
// that moment.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "base/heartbeat.h"

namespace ts {

class Bootstrap;

// How long a stall may last on process `rank` before it reports it:
//   in its own work:         timeoutS;
//   waiting for its peers:   (2 + rank) x timeoutS. The stuck rank had its timeoutS to report itself first;
//                            process 0 then speaks for a run in which nobody could (a frozen process, a lost
//                            host, the network), and a higher rank only if every lower one could not either.
double stallLimitS(heartbeat::Stall stall, int rank, double timeoutS);

class Watchdog {
 public:
  using Handler = std::function<void(double waitedS, heartbeat::Stall stall)>;
  Watchdog(double timeoutS, int rank, Handler onTimeout);  // timeoutS <= 0: never fires (and hides no outer one)
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm();     // starts the clock now
  void disarm();  // between operations that may legitimately take long (host-side checks)

 private:
  void loop();
  bool innermost() const;
  double timeoutS_;
  int rank_;
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

// The handler every subcommand's --timeout uses: one error line naming the rank, what it was doing (or
// waiting in) and for how long (and, on the process that writes the stream, what it kept:
// activity::keptRecords), then `beforeEnd` (say, aborting a communicator) and every rank ended with exit code 3.
Watchdog::Handler endAllRanksOnTimeout(double timeoutS, Bootstrap& boot, std::function<void()> beforeEnd = {});
// The same, where the run may have no bootstrap yet (the session's setup): `endAll` ends every rank.
Watchdog::Handler endAllRanksOnTimeout(double timeoutS, std::function<void(int exitCode)> endAll);

}  // namespace ts
