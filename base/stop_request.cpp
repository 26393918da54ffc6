#include "base/stop_request.h"

#include <atomic>

#include "base/heartbeat.h"

namespace ts {
namespace {
std::atomic<int> g_stop{0};
}  // namespace

void requestStop(int signal) {
  // Ending the run is progress: the process gets a fresh --timeout to keep what it measured before the watchdog
  // would call it stuck (the launcher's SIGKILL, or a second signal, usually comes first). A lock-free atomic
  // store: safe in a signal handler.
  heartbeat::beat();
  g_stop.store(signal);
}
int stopRequested() { return g_stop.load(); }

}  // namespace ts
