#include "bench/failures/activity.h"

#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "base/heartbeat.h"
#include "base/stop_request.h"
#include "bench/failures/run_ending.h"

namespace ts::activity {
namespace {

std::mutex g_mu;
std::string g_who = "rank 0";
std::string g_stream;
// The stream as the handler needs it: a fixed buffer (no allocation in a handler), whether this process
// writes it, and how many records it holds.
std::array<char, 4096> g_streamPath{};
std::atomic<bool> g_streamWriter{false};
std::atomic<long> g_streamed{0};
std::atomic<bool> g_streamWriting{false};  // a record is being written (streamWriteStarts .. recordsStreamed)
std::atomic<bool> g_countSaid{false};      // a signal's line is saying the count: no record may follow it
std::string g_what;
// The message, pre-formatted for each stall (in its own work, waiting for its peers), twice: the handler reads
// the pair g_ready points at while the other is rebuilt (async-signal-safe: no allocation).
using Message = std::array<char, 1024>;
std::array<std::array<Message, 2>, 2> g_msgs{};
std::atomic<int> g_ready{-1};

void rebuild() {
  const int next = g_ready.load() == 0 ? 1 : 0;
  for (const heartbeat::Stall stall : {heartbeat::Stall::kOwnWork, heartbeat::Stall::kPeers}) {
    const char* where = stall == heartbeat::Stall::kOwnWork ? " during " : " while waiting for its peers in ";
    // {SIG} and {KEPT} are filled in by the handler: the signal, and what the stream holds at that moment.
    const std::string line =
        fmt::format("trainscope: error: {}: stopped by signal {{SIG}}{}{{KEPT}}\n", g_who, g_what.empty() ? "" : where + g_what);
    Message& m = g_msgs[next][static_cast<int>(stall)];
    std::strncpy(m.data(), line.c_str(), m.size() - 1);
    m[m.size() - 1] = '\0';
  }
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
std::atomic<int> g_rank{0};

void writeText(const char* s) { writeAll(s, std::strlen(s)); }

void writeNumber(long n) {  // async-signal-safe: no printf
  char digits[24];
  int i = sizeof(digits);
  do {
    digits[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && i > 0);
  writeAll(digits + i, sizeof(digits) - static_cast<std::size_t>(i));
}

// The end of the line: what the stream kept (keptRecords(), async-signal-safe). Said by a signal's handler, which
// may run on a thread beside the one writing a record: that write ends first (within 2 s: a writer stuck on a full
// or dead disk does not hold the line back), and none begins after the count is read.
void writeKept() {
  if (!g_streamWriter.load() || g_streamPath[0] == '\0') return;
  g_countSaid.store(true);
  const timespec ms{0, 1000000};
  for (int i = 0; i < 2000 && g_streamWriting.load(); ++i) ::nanosleep(&ms, nullptr);
  const long n = g_streamed.load();
  if (n == 0) {  // no stream was made (bench/results/result_writer.h): a file there is an earlier run's, kept
    writeText("; nothing was measured, so nothing was kept");
    return;
  }
  writeText("; records measured so far are in ");
  writeText(g_streamPath.data());
  writeText(" (");
  writeNumber(n);
  writeText(n == 1 ? " record)" : " records)");
}

// A process other than 0 with a lifeline tells process 0 how it was stopped ("rank 1 of 4 (h): stopped by signal 15
// during train step 3"): process 0 says it, once, with what it kept. False when it could not.
bool tellProcess0(int sig, heartbeat::Stall stall) {
  const int idx = g_ready.load();
  if (idx < 0) return false;
  const char* msg = g_msgs[idx][static_cast<int>(stall)].data();
  constexpr std::string_view kPrefix = "trainscope: error: ";
  const char* sigMark = std::strstr(msg, "{SIG}");
  const char* keptMark = sigMark ? std::strstr(sigMark, "{KEPT}") : nullptr;
  if (!sigMark || !keptMark || std::strncmp(msg, kPrefix.data(), kPrefix.size()) != 0) return false;
  std::array<char, 1100> line{};
  std::size_t n = 0;
  auto put = [&](const char* s, std::size_t k) {
    for (std::size_t i = 0; i < k && n < line.size(); ++i) line[n++] = s[i];
  };
  put(msg + kPrefix.size(), static_cast<std::size_t>(sigMark - msg) - kPrefix.size());
  char digits[8];
  int i = sizeof(digits);
  for (int v = sig; i > 0;) {
    digits[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
    if (v == 0) break;
  }
  put(digits + i, sizeof(digits) - static_cast<std::size_t>(i));
  put(sigMark + 5, static_cast<std::size_t>(keptMark - sigMark - 5));
  return ending::tellStopFromSignal(128 + sig, stall == heartbeat::Stall::kPeers, line.data(), n);
}

extern "C" void onSignal(int sig) {
  if (g_reported.load()) ::_exit(128 + sig);  // the run's error is already said: the launcher only ends us
  const heartbeat::Stall stall = heartbeat::stall();
  const bool zero = g_rank.load() == 0;
  // With lifelines (bench/failures/run_ending.h), process 0 says how the run ends, once: another process tells it
  // and ends; process 0 asks to stop, and keeps what it measured before it says the line.
  if (!zero && tellProcess0(sig, stall)) {
    // Process 0 ends this process once it has said the line (run_ending.h), well within this second. Exiting first
    // would have mpirun SIGKILL every process at once, process 0 before its line.
    const timespec second{1, 0};
    ::nanosleep(&second, nullptr);
    ::_exit(128 + sig);
  }
  if (zero && ending::hubDefersSignals()) {
    requestStop(sig);
    ending::wakeHubFromSignal();
    return;
  }
  // A process that only waits for its peers has nothing to say about why the run ends (the rank that
  // failed or hung said it, or the user knows): process 0 alone speaks for those, and says what it kept.
  if (stall == heartbeat::Stall::kPeers && !zero) ::_exit(128 + sig);
  if (g_graceful.load() && stopRequested() == 0) {
    requestStop(sig);
    return;
  }
  const int idx = g_ready.load();
  if (idx >= 0) {
    const char* msg = g_msgs[idx][static_cast<int>(stall)].data();
    const char* sigMark = std::strstr(msg, "{SIG}");
    const char* keptMark = sigMark ? std::strstr(sigMark, "{KEPT}") : nullptr;
    if (sigMark && keptMark) {
      writeAll(msg, static_cast<std::size_t>(sigMark - msg));
      writeNumber(sig);
      writeAll(sigMark + 5, static_cast<std::size_t>(keptMark - sigMark - 5));
      writeKept();
      writeText(keptMark + 6);
    } else {
      writeText(msg);
    }
  }
  if (zero) ending::endPeersFromSignal(128 + sig);
  ::_exit(128 + sig);
}

}  // namespace

void setIdentity(int rank, int worldProcesses, const std::string& host) {
  std::lock_guard lock(g_mu);
  g_rank.store(rank);
  g_who = fmt::format("rank {} of {} ({})", rank, worldProcesses, host);
  rebuild();
}

void setStream(const std::string& jsonlPath, bool writer) {
  std::lock_guard lock(g_mu);
  g_stream = jsonlPath;
  g_streamWriter.store(false);  // while the buffer changes, the handler reads no path
  std::strncpy(g_streamPath.data(), jsonlPath.c_str(), g_streamPath.size() - 1);
  g_streamPath[g_streamPath.size() - 1] = '\0';
  g_streamed.store(0);
  g_streamWriter.store(writer && !jsonlPath.empty());
}

void streamWriteStarts() {
  g_streamWriting.store(true);
  if (!g_countSaid.load()) return;
  g_streamWriting.store(false);  // the line has its count; the handler ends the process once it is said
  for (;;) ::pause();
}

void recordsStreamed(long records) {
  g_streamed.store(records);
  g_streamWriting.store(false);
}

std::string keptRecords() {
  std::lock_guard lock(g_mu);
  if (!g_streamWriter.load() || g_stream.empty()) return "";
  const long n = g_streamed.load();
  if (n == 0) {  // no stream was made: a file at its name is an earlier run's, and stays
    return "; nothing was measured, so nothing was kept";
  }
  return fmt::format("; records measured so far are in {} ({} record{})", g_stream, n, n == 1 ? "" : "s");
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
bool errorWasReported() { return g_reported.load(); }

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
