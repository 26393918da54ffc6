#include "bench/session/activity.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "base/stop_request.h"

namespace ts::activity {
namespace {

std::mutex g_mu;
std::string g_who = "rank 0";
std::string g_stream;
std::string g_what;
// Two pre-formatted messages; the handler reads the one g_ready points at (async-signal-safe: no allocation).
std::array<std::array<char, 1024>, 2> g_msgs{};
std::atomic<int> g_ready{-1};

void rebuild() {
  const int next = g_ready.load() == 0 ? 1 : 0;
  std::string line =
      fmt::format("trainscope: error: {}: stopped by signal {{SIG}}{}{}", g_who, g_what.empty() ? "" : " during " + g_what,
                  g_stream.empty() ? "" : "; records measured so far are in " + g_stream);
  line += "\n";
  std::strncpy(g_msgs[next].data(), line.c_str(), g_msgs[next].size() - 1);
  g_msgs[next][g_msgs[next].size() - 1] = '\0';
  g_ready.store(next);
}

void writeAll(const char* s, std::size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(STDERR_FILENO, s, n);
    if (k <= 0) return;
    s += k;
    n -= static_cast<std::size_t>(k);
  }
}

std::atomic<bool> g_graceful{false};

std::atomic<bool> g_reported{false};

extern "C" void onSignal(int sig) {
  if (g_reported.load()) ::_exit(128 + sig);  // the run's error is already said: the launcher only ends us
  if (g_graceful.load() && stopRequested() == 0) {
    requestStop(sig);
    return;
  }
  const int idx = g_ready.load();
  if (idx >= 0) {
    const char* msg = g_msgs[idx].data();
    const char* mark = std::strstr(msg, "{SIG}");
    if (mark) {
      writeAll(msg, static_cast<std::size_t>(mark - msg));
      char num[4] = {static_cast<char>('0' + (sig / 10) % 10), static_cast<char>('0' + sig % 10), 0, 0};
      writeAll(sig >= 10 ? num : num + 1, sig >= 10 ? 2 : 1);
      writeAll(mark + 5, std::strlen(mark + 5));
    } else {
      writeAll(msg, std::strlen(msg));
    }
  }
  ::_exit(128 + sig);
}

}  // namespace

void setIdentity(int rank, int worldProcesses, const std::string& host) {
  std::lock_guard lock(g_mu);
  g_who = fmt::format("rank {} of {} ({})", rank, worldProcesses, host);
  rebuild();
}

void setStreamPath(const std::string& jsonlPath) {
  std::lock_guard lock(g_mu);
  g_stream = jsonlPath;
  rebuild();
}

void set(const std::string& what) {
  std::lock_guard lock(g_mu);
  g_what = what;
  rebuild();
}

std::string current() {
  std::lock_guard lock(g_mu);
  return g_what;
}

std::string who() {
  std::lock_guard lock(g_mu);
  return g_who;
}

void setGracefulStop(bool on) { g_graceful.store(on); }
void errorReported() { g_reported.store(true); }

void installSignalHandlers() {
  {
    std::lock_guard lock(g_mu);
    rebuild();
  }
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace ts::activity
