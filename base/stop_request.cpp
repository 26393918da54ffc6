#include "base/stop_request.h"

#include <atomic>

namespace ts {
namespace {
std::atomic<int> g_stop{0};
}  // namespace

void requestStop(int signal) { g_stop.store(signal); }
int stopRequested() { return g_stop.load(); }

}  // namespace ts
